package main

import (
	"database/sql"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// ledger is what the load generator was told with a 200.
type ledger struct {
	mu        sync.Mutex
	rtps      []string
	accepted  map[string]string // rtpId → payId
	qrPaid    map[string]string // qrId → payId
	payments  []string
	refunds   map[string]string // refundId → payId
	checkouts []string
	requests  atomic.Int64
	oks       atomic.Int64
}

// pick returns a random element of *xs, read under the lock.
func (l *ledger) pick(xs *[]string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(*xs) == 0 {
		return ""
	}
	return (*xs)[rand.IntN(len(*xs))]
}

// TestCrashRecovery runs the real binary under a mixed load, kills it with
// SIGKILL at random moments (PAYD_CRASH_KILLS, default 20), restarts it,
// and then checks that nothing acknowledged was lost and nothing was applied
// twice. RELIABILITY.md has the figures of a longer run.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the binary many times")
	}
	kills := envInt("PAYD_CRASH_KILLS", 20)
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		hooks := newHookLog()
		hookSrv := httptest.NewServer(hooks)
		defer hookSrv.Close()
		env := map[string]string{"PAYD_DATABASE_URL": dbURL, "PAYD_CALLBACK_SCHEDULE": "100ms,200ms,300ms,500ms,1s,1s,1s",
			"PAYD_CALLBACK_LEASE": "1s", "PAYD_REFUND_DELAY": "100ms", "PAYD_TOKEN_TTL": "1h"}
		cr := newMerchantCreds(t, env)
		p := startProc(t, env, freeAddr(t))
		defer p.stop()
		c := &client{http: &http.Client{Timeout: 3 * time.Second}, token: token(t, p.base, cr)}
		l := &ledger{accepted: map[string]string{}, qrPaid: map[string]string{}, refunds: map[string]string{}}
		cb := hookSrv.URL + "/cb"
		exp := func() string { return payd.FormatTime(time.Now().Add(time.Hour)) }
		ops := []func(){
			func() { // create an RTP
				s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 10 + rand.IntN(90), "currency": "MDL",
					"description": "crash", "expiresAt": exp(), "callbackUrl": cb})
				if s == 200 {
					l.mu.Lock()
					l.rtps = append(l.rtps, str(result(v), "rtpId"))
					l.mu.Unlock()
				}
				l.count(s)
			},
			func() { // accept one
				id := l.pick(&l.rtps)
				if id == "" {
					return
				}
				s, v := c.do("GET", p.base+"/v2/rtp/"+id, nil)
				l.count(s)
				if s != 200 {
					return
				}
				s, v2 := c.do("POST", p.base+"/v2/rtp/"+id+"/test-accept", map[string]any{"amount": result(v)["amount"], "currency": "MDL"})
				l.count(s)
				if s == 200 {
					l.mu.Lock()
					l.accepted[id] = str(result(v2), "payId")
					l.payments = append(l.payments, l.accepted[id])
					l.mu.Unlock()
				}
			},
			func() { // cancel one
				if id := l.pick(&l.rtps); id != "" {
					s, _ := c.do("POST", p.base+"/v2/rtp/"+id+"/cancel", map[string]any{"reason": "crash"})
					l.count(s)
				}
			},
			func() { // a Dynamic QR, paid
				s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 40,
					"currency": "MDL", "description": "crash", "expiresAt": exp(), "callbackUrl": cb})
				l.count(s)
				if s != 200 {
					return
				}
				qr := str(result(v), "qrId")
				s, v = c.do("POST", p.base+"/v2/instant/test-pay", map[string]any{"qrId": qr, "amount": 40, "currency": "MDL",
					"iban": payd.TestIBAN, "payerName": "P"})
				l.count(s)
				if s == 200 {
					l.mu.Lock()
					l.qrPaid[qr] = str(result(v), "payId")
					l.payments = append(l.payments, l.qrPaid[qr])
					l.mu.Unlock()
				}
			},
			func() { // refund a payment, in part when it allows
				pay := l.pick(&l.payments)
				if pay == "" {
					return
				}
				body := map[string]any{"reason": "crash", "amount": 1 + rand.IntN(15)}
				if rand.IntN(2) == 0 {
					delete(body, "amount")
				}
				s, v := c.do("POST", p.base+"/v2/payments/"+pay+"/refund", body)
				l.count(s)
				if s == 200 {
					l.mu.Lock()
					l.refunds[str(result(v), "refundId")] = pay
					l.mu.Unlock()
				}
			},
			func() { // a checkout, sometimes cancelled
				s, v := c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": 25, "currency": "MDL"})
				l.count(s)
				if s == 200 {
					id := str(result(v), "checkoutId")
					l.mu.Lock()
					l.checkouts = append(l.checkouts, id)
					l.mu.Unlock()
					if rand.IntN(2) == 0 {
						s, _ := c.do("POST", p.base+"/v2/checkouts/"+id+"/cancel", nil)
						l.count(s)
					}
				}
			},
		}
		stop := load(4, func(<-chan struct{}) { ops[rand.IntN(len(ops))]() })
		for k := 0; k < kills; k++ {
			time.Sleep(time.Duration(150+rand.IntN(600)) * time.Millisecond)
			p.kill()
			p.start()
		}
		stop()
		l.checkAfterSettling(t, dbURL, hooks, kills)
	})
}

func (l *ledger) count(status int) {
	l.requests.Add(1)
	if status == 200 {
		l.oks.Add(1)
	}
}

func openDB(t *testing.T, dbURL string) *sql.DB {
	driver, dsn := "sqlite", strings.TrimPrefix(dbURL, "sqlite:")
	if strings.HasPrefix(dbURL, "postgres") {
		driver, dsn = "pgx", dbURL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func ids(t *testing.T, db *sql.DB, q string) map[string]bool {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		out[id] = true
	}
	return out
}

func (l *ledger) checkAfterSettling(t *testing.T, dbURL string, hooks *hookLog, kills int) {
	db := openDB(t, dbURL)
	defer db.Close()
	// Let the last instance deliver what is due and settle the refunds.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending, refunds int
		db.QueryRow("SELECT COUNT(*) FROM callbacks WHERE state <> 'delivered'").Scan(&pending)
		db.QueryRow("SELECT COUNT(*) FROM refunds WHERE status IN ('Created','Requested')").Scan(&refunds)
		if pending == 0 && refunds == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d callbacks undelivered, %d refunds unsettled", pending, refunds)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Every request answered 200 is in the database.
	for name, want := range map[string][]string{
		"SELECT id FROM rtps": l.rtps, "SELECT id FROM payments": l.payments, "SELECT id FROM checkouts": l.checkouts,
		"SELECT id FROM refunds": keys(l.refunds), "SELECT id FROM qrs": keys(l.qrPaid),
	} {
		have := ids(t, db, name)
		for _, id := range want {
			if !have[id] {
				t.Errorf("%s: %s was acknowledged but is missing", name, id)
			}
		}
	}
	// Exactly one payment per accepted RTP and per paid Dynamic QR, and no payment without its state.
	for _, q := range []string{
		"SELECT rtp_id FROM payments WHERE rtp_id IS NOT NULL GROUP BY rtp_id HAVING COUNT(*) <> 1",
		"SELECT qr_id FROM payments WHERE qr_id IS NOT NULL GROUP BY qr_id HAVING COUNT(*) <> 1",
		"SELECT r.id FROM rtps r LEFT JOIN payments p ON p.rtp_id = r.id WHERE r.status IN ('Accepted','Refunded') AND p.id IS NULL",
		"SELECT r.id FROM rtps r JOIN payments p ON p.rtp_id = r.id WHERE r.status NOT IN ('Accepted','Refunded')",
		"SELECT q.id FROM qrs q LEFT JOIN payments p ON p.qr_id = q.id WHERE q.type = 'Dynamic' AND (q.status = 'Paid') <> (p.id IS NOT NULL)",
		// Refunds never exceed their payment, and the reserved and refunded sums match the refunds.
		"SELECT id FROM payments WHERE requested_refund > amount OR refunded > requested_refund",
		`SELECT p.id FROM payments p LEFT JOIN refunds r ON r.payment_id = p.id AND r.status <> 'Rejected'
			GROUP BY p.id, p.requested_refund HAVING p.requested_refund <> COALESCE(SUM(r.amount), 0)`,
		`SELECT p.id FROM payments p LEFT JOIN refunds r ON r.payment_id = p.id AND r.status = 'Accepted'
			GROUP BY p.id, p.refunded HAVING p.refunded <> COALESCE(SUM(r.amount), 0)`,
		"SELECT r.id FROM rtps r JOIN payments p ON p.rtp_id = r.id WHERE r.status = 'Refunded' AND p.refunded <> p.amount",
		// Every callback of a payment or refund exists once.
		"SELECT subject_id FROM callbacks GROUP BY subject_id, event HAVING COUNT(*) <> 1",
		"SELECT p.id FROM payments p LEFT JOIN callbacks c ON c.subject_id = p.id WHERE p.callback_url IS NOT NULL AND c.id IS NULL AND p.checkout_id IS NULL",
	} {
		if bad := ids(t, db, q); len(bad) > 0 {
			t.Errorf("%d violations of: %s", len(bad), q)
		}
	}
	// Every payment's callback reached the receiver, and every delivery of one callback carried the same signature.
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	for _, pay := range l.payments {
		if hooks.bySubject[pay] == 0 {
			t.Errorf("payment %s: its callback never arrived", pay)
		}
	}
	for id, sigs := range hooks.byCallback {
		if len(sigs) != 1 {
			t.Errorf("callback %s arrived with %d different signatures", id, len(sigs))
		}
	}
	deliveries := 0
	for _, n := range hooks.bySubject {
		deliveries += n
	}
	t.Logf("%d kills survived; %d requests, %d answered 200; %d RTPs, %d payments, %d refunds, %d checkouts checked; %d callbacks, %d deliveries",
		kills, l.requests.Load(), l.oks.Load(), len(l.rtps), len(l.payments), len(l.refunds), len(l.checkouts), len(hooks.byCallback), deliveries)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
