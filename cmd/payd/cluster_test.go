package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

// TestThreeInstances runs three payd processes on one PostgreSQL behind the
// test's own round-robin client.
func TestThreeInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes")
	}
	_, dbURL := storetest.Postgres(t)
	hooks := newHookLog()
	hookSrv := httptest.NewServer(hooks)
	defer hookSrv.Close()
	env := map[string]string{"PAYD_DATABASE_URL": dbURL, "PAYD_CALLBACK_SCHEDULE": "200ms,200ms,500ms", "PAYD_CALLBACK_LEASE": "2s",
		"PAYD_REFUND_DELAY": "100ms"}
	cr := newMerchantCreds(t, env)
	var procs []*proc
	for i := 1; i <= 3; i++ {
		e := map[string]string{"PAYD_INSTANCE": fmt.Sprintf("i%d", i)}
		for k, v := range env {
			e[k] = v
		}
		p := startProc(t, e, freeAddr(t))
		defer p.stop()
		procs = append(procs, p)
	}
	// A token from one instance works on every other.
	c := &client{http: &http.Client{Timeout: 5 * time.Second}, token: token(t, procs[0].base, cr)}
	var rr atomic.Int64
	next := func() string { return procs[rr.Add(1)%3].base }
	for _, p := range procs {
		if s, _ := c.do("GET", p.base+"/v2/rtp?count=1&offset=0", nil); s != 200 {
			t.Fatalf("token on %s: %d", p.base, s)
		}
	}
	// Payments and full refunds, spread over the instances.
	var pays, refunds []string
	for i := 0; i < 60; i++ {
		s, v := c.do("POST", next()+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 20, "currency": "MDL", "description": "multi",
			"expiresAt": payd.FormatTime(time.Now().Add(time.Hour)), "callbackUrl": hookSrv.URL})
		if s != 200 {
			t.Fatalf("create: %d %v", s, v)
		}
		s, v = c.do("POST", next()+"/v2/rtp/"+str(result(v), "rtpId")+"/test-accept", map[string]any{"amount": 20, "currency": "MDL"})
		if s != 200 {
			t.Fatalf("accept: %d %v", s, v)
		}
		pay := str(result(v), "payId")
		pays = append(pays, pay)
		if i%2 == 0 {
			s, v = c.do("POST", next()+"/v2/rtp/"+pay+"/refund", map[string]any{"reason": "multi"})
			if s != 200 {
				t.Fatalf("refund: %d %v", s, v)
			}
			refunds = append(refunds, str(result(v), "refundId"))
		}
	}
	db := openDB(t, dbURL)
	defer db.Close()
	// Refunds first: settling one writes its callback, which must then be
	// delivered before the receiver's log is read.
	waitFor(t, db, "SELECT COUNT(*) FROM refunds WHERE status <> 'Accepted'", 30*time.Second)
	waitFor(t, db, "SELECT COUNT(*) FROM callbacks WHERE state <> 'delivered'", 30*time.Second)
	// Each callback was sent once (the receiver always answers 200): no two
	// instances sent the same attempt, and each refund was processed once.
	hooks.mu.Lock()
	for _, id := range append(append([]string{}, pays...), refunds...) {
		if n := hooks.bySubject[id]; n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	for k, n := range hooks.attempts {
		if n != 1 {
			t.Errorf("attempt %s sent %d times", k, n)
		}
	}
	hooks.mu.Unlock()
	var senders int
	db.QueryRow("SELECT COUNT(DISTINCT instance) FROM callback_attempts").Scan(&senders)
	if senders < 2 {
		t.Errorf("only %d instance(s) delivered; the others idled", senders)
	}

	// Kill the instance holding a delivery mid-attempt: after its lease runs
	// out another instance delivers the same callback.
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Callback-Id")+" "+r.Header.Get("X-Signature"))
		first := len(got) == 1
		mu.Unlock()
		if first {
			<-release
		}
	}))
	defer slow.Close()
	defer close(release)
	_, v := c.do("POST", next()+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 20, "currency": "MDL", "description": "slow",
		"expiresAt": payd.FormatTime(time.Now().Add(time.Hour)), "callbackUrl": slow.URL})
	s, v := c.do("POST", next()+"/v2/rtp/"+str(result(v), "rtpId")+"/test-accept", map[string]any{"amount": 20, "currency": "MDL"})
	if s != 200 {
		t.Fatalf("accept: %d", s)
	}
	pay := str(result(v), "payId")
	var owner string
	deadline := time.Now().Add(10 * time.Second)
	for owner == "" && time.Now().Before(deadline) {
		mu.Lock()
		inFlight := len(got) == 1
		mu.Unlock()
		if inFlight {
			db.QueryRow("SELECT COALESCE(lease_owner, '') FROM callbacks WHERE subject_id = $1", pay).Scan(&owner)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if owner == "" {
		t.Fatal("the slow delivery never started")
	}
	killed := int(owner[1] - '1')
	procs[killed].kill()
	waitFor(t, db, fmt.Sprintf("SELECT COUNT(*) FROM callbacks WHERE subject_id = '%s' AND state <> 'delivered'", pay), 20*time.Second)
	var sender string
	db.QueryRow("SELECT instance FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id WHERE c.subject_id = $1", pay).Scan(&sender)
	mu.Lock()
	if len(got) != 2 || got[0] != got[1] || sender == owner || sender == "" {
		t.Errorf("killed %s; then delivered by %q; requests %v", owner, sender, got)
	}
	mu.Unlock()
	procs[killed].start() // so the deferred stop has a process to stop

	// Revocation reaches every instance at once. Each holds this token's
	// authentication in memory (it served it just now); an operator rotates
	// the secret from the command line, another process, and the very next
	// request with the old token is refused by every instance.
	for _, p := range procs {
		if s, _ := c.do("GET", p.base+"/v2/rtp?count=1&offset=0", nil); s != 200 {
			t.Fatalf("token on %s: %d", p.base, s)
		}
	}
	if out, code := runCmd(t, env, "merchant", "rotate-secret", cr.ClientID); code != 0 {
		t.Fatalf("rotate-secret: %d %s", code, out)
	}
	for _, p := range procs {
		if s, _ := c.do("GET", p.base+"/v2/rtp?count=1&offset=0", nil); s != 401 {
			t.Errorf("a rotated secret's token on %s: %d, want 401", p.base, s)
		}
	}
	t.Logf("60 payments and 30 refunds over 3 instances: each callback sent once, by %d instances; %s killed mid-delivery, %s delivered after its lease ran out",
		senders, owner, sender)
}

func waitFor(t *testing.T, db *sql.DB, countQuery string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var n int
		if err := db.QueryRow(countQuery).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d rows of: %s", within, n, countQuery)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
