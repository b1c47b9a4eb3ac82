package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022"
)

// The failover test: payd in production on a PostgreSQL high-availability
// cluster (deploy/ha/cluster.sh: three nodes under Patroni and etcd,
// synchronous replication, HAProxy), two instances, one through HAProxy
// and one with a multi-host URL. Under load (RTPs created under
// Idempotency-Keys, the bank's credits through /rails/iso20022, refunds,
// their callbacks and rails messages), the leader's PostgreSQL is killed
// hard, then a leader's Patroni and PostgreSQL together, then a planned
// switchover. Every answer is recorded; then:
//
//   - every write payd acknowledged exists, and nothing is applied twice;
//   - every callback arrives exactly once; every rails message is sent,
//     never twice with different bodies;
//   - only 200 and 503 are answered;
//   - writes succeed again within 10 s of each fault;
//   - a merchant secret rotated after the switch works on both instances.
//
// It runs where PAYD_TEST_HA=1 (CI sets it; the cluster needs root or the
// postgres user, and Debian's patroni, etcd-server and haproxy, which
// cluster.sh installs). PAYD_HA_ASYNC=1 runs it on asynchronous
// replication and reports what is lost there instead of failing on it.
func TestFailover_ha(t *testing.T) {
	if os.Getenv("PAYD_TEST_HA") == "" {
		t.Skip("runs a PostgreSQL cluster under Patroni: PAYD_TEST_HA=1 (deploy/ha/cluster.sh)")
	}
	async := os.Getenv("PAYD_HA_ASYNC") != ""
	dir, err := os.MkdirTemp("", "payd-ha-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // the postgres user runs the nodes under it
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the cluster's logs are in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	script, _ := filepath.Abs("../../deploy/ha/cluster.sh")
	cluster := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(script, append([]string{args[0], dir}, args[1:]...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", args[0], err, out)
		}
		return strings.TrimSpace(string(out))
	}
	start := []string{"start"}
	if async {
		start = append(start, "--async")
	}
	t.Log(cluster(start...))
	t.Cleanup(func() { exec.Command(script, "stop", dir).Run() })
	viaHAProxy := "postgres://postgres@127.0.0.1:5440/payd?sslmode=disable&connect_timeout=2"
	multiHost := "postgres://postgres@127.0.0.1:5441,127.0.0.1:5442,127.0.0.1:5443/payd?sslmode=disable&connect_timeout=2&target_session_attrs=read-write"

	addrA, addrB := freeAddr(t), freeAddr(t)
	bank := startBank(t, freeAddr(t), "http://"+addrA+"/rails/iso20022")
	env := func(db string) map[string]string {
		return map[string]string{"PAYD_DATABASE_URL": db, "PAYD_MODE": "production", "PAYD_PUBLIC_URL": "https://payd.example",
			"PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": bank.base + "/iso20022", "PAYD_RAILS_KEY": railsKey, "PAYD_RAILS_BIC": paydBIC,
			"PAYD_ALLOW_HTTP_URLS": "true", "PAYD_CALLBACK_ALLOW": "127.0.0.0/8", "PAYD_CALLBACK_SCHEDULE": "200ms,500ms,1s"}
	}
	out, code := runCmd(t, env(viaHAProxy), "merchant", "create", "--name", "Shop", "--iban", shopIBAN)
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	a := startProc(t, env(viaHAProxy), addrA)
	defer a.stop()
	b := startProc(t, env(multiHost), addrB)
	defer b.stop()
	t.Cleanup(func() {
		if t.Failed() {
			os.WriteFile(filepath.Join(dir, "payd-a.log"), []byte(a.logs.String()), 0o644)
			os.WriteFile(filepath.Join(dir, "payd-b.log"), []byte(b.logs.String()), 0o644)
		}
	})
	instances := []string{a.base, b.base}
	tokens := []string{token(t, a.base, cr), token(t, b.base, cr)}

	// Callbacks arrive here, each counted.
	var cbMu sync.Mutex
	callbacks := map[string]int{} // payId → deliveries
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v struct {
			Result map[string]any `json:"result"`
		}
		json.Unmarshal(body, &v)
		cbMu.Lock()
		callbacks[str(v.Result, "payId")]++
		cbMu.Unlock()
	}))
	defer hook.Close()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: tokens[0]}
	s, v := c.do("POST", a.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL",
		"description": "Tips", "callbackUrl": hook.URL})
	if s != 200 {
		t.Fatalf("qr: %d %v", s, v)
	}
	qrID := str(result(v), "qrId")

	// Every answer, and the attempts of writes, as the load sees them.
	type attempt struct {
		start, end time.Time
		status     int
		instance   int
	}
	var (
		mu       sync.Mutex
		answers  = map[int]int{}
		attempts []attempt
		rtps     = map[string]string{} // key → rtpId acknowledged
		credits  = map[string]bool{}   // TxId acknowledged (ACCC)
		refunds  = map[string]string{} // key → refundId acknowledged
		tried    = map[string]bool{}   // every key and TxId tried
	)
	record := func(st int, from time.Time, write bool, instance int) {
		mu.Lock()
		answers[st]++
		if write {
			attempts = append(attempts, attempt{from, time.Now(), st, instance})
		}
		mu.Unlock()
	}
	hc := &http.Client{Timeout: 15 * time.Second}
	call := func(i int, method, path, key string, body []byte, write bool) (int, []byte) {
		req, _ := http.NewRequest(method, instances[i%2]+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokens[i%2])
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		from := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			record(-1, from, write, i%2) // no answer at all
			return -1, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		record(res.StatusCode, from, write, i%2)
		return res.StatusCode, b
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var seq atomic.Int64
	exp := payd.FormatTime(time.Now().Add(2 * time.Hour))
	// retry sends one request until it is answered 200 (or the load ends
	// and 30 s have passed), alternating the instances.
	retry := func(send func(i int) (int, []byte)) (int, []byte) {
		giveUp := time.Time{}
		for i := 0; ; i++ {
			st, b := send(i)
			if st == 200 {
				return st, b
			}
			if st != 503 && st != -1 {
				return st, b
			}
			if ctx.Err() != nil && giveUp.IsZero() {
				giveUp = time.Now().Add(30 * time.Second)
			}
			if !giveUp.IsZero() && time.Now().After(giveUp) {
				return st, b
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for w := range 4 { // RTPs
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				key := fmt.Sprintf("rtp-%d-%d", w, seq.Add(1))
				body, _ := json.Marshal(map[string]any{"alias": "37369112221", "amount": 10, "currency": "MDL", "description": key, "expiresAt": exp})
				mu.Lock()
				tried[key] = true
				mu.Unlock()
				st, ans := retry(func(i int) (int, []byte) { return call(w+i, "POST", "/v2/rtp", key, body, true) })
				if st == 200 {
					var v map[string]any
					json.Unmarshal(ans, &v)
					mu.Lock()
					rtps[key] = str(result(v), "rtpId")
					mu.Unlock()
				}
			}
		}()
	}
	for w := range 2 { // the bank's credits, to either instance
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := seq.Add(1)
				msgID, txID := fmt.Sprintf("HAMSG%027d", n), fmt.Sprintf("HATX%028d", n)
				body := creditBody(msgID, txID, iso20022.ID(qrID), "1.00", "PAYER")
				mu.Lock()
				tried[txID] = true
				mu.Unlock()
				st, ans := retry(func(i int) (int, []byte) {
					req, _ := http.NewRequest("POST", instances[(w+i)%2]+"/rails/iso20022", bytes.NewReader(body))
					iso20022.Sign(req.Header, railsKey, body, time.Now())
					from := time.Now()
					res, err := hc.Do(req)
					if err != nil {
						record(-1, from, false, (w+i)%2)
						return -1, nil
					}
					defer res.Body.Close()
					b, _ := io.ReadAll(res.Body)
					record(res.StatusCode, from, false, (w+i)%2)
					return res.StatusCode, b
				})
				var ack iso20022.Pacs002
				if st == 200 && xml.Unmarshal(ans, &ack) == nil && len(ack.Rpt.Txs) == 1 && ack.Rpt.Txs[0].TxSts == iso20022.StatusCredited {
					mu.Lock()
					credits[txID] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // refunds of the credits' payments
		defer wg.Done()
		done := map[string]bool{}
		for i := 0; ctx.Err() == nil; i++ {
			st, ans := call(i, "GET", fmt.Sprintf("/v2/payments?count=20&offset=%d&paymentIntentId=%s", len(done), qrID), "", nil, false)
			var v map[string]any
			if st != 200 || json.Unmarshal(ans, &v) != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			items, _ := result(v)["items"].([]any)
			for _, it := range items {
				id := str(it.(map[string]any), "paymentId")
				if done[id] || ctx.Err() != nil {
					continue
				}
				done[id] = true
				key := "refund-" + id
				mu.Lock()
				tried[key] = true
				mu.Unlock()
				body := []byte(`{"reason":"failover"}`)
				st, ans := retry(func(j int) (int, []byte) { return call(i+j, "POST", "/v2/payments/"+id+"/refund", key, body, true) })
				if st == 200 {
					var v map[string]any
					json.Unmarshal(ans, &v)
					mu.Lock()
					refunds[key] = str(result(v), "refundId")
					mu.Unlock()
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()

	// The faults.
	type fault struct {
		name string
		at   time.Time
	}
	var faults []fault
	pause := func(d time.Duration) { time.Sleep(d) }
	waitSync := func() {
		t.Helper()
		db, err := sql.Open("pgx", viaHAProxy)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			var n int
			if db.QueryRow("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").Scan(&n) == nil && n == 2 {
				return
			}
		}
		t.Fatalf("the cluster did not get its two standbys back:\n%s", cluster("status"))
	}
	// do runs a fault, timed from its start (a switchover takes seconds).
	do := func(what, cmd string) {
		at := time.Now()
		faults = append(faults, fault{what + " (" + cluster(cmd) + ")", at})
	}
	pause(6 * time.Second)
	do("the leader's PostgreSQL killed", "kill-postgres")
	pause(10 * time.Second)
	waitSync()
	do("the leader's Patroni and PostgreSQL killed", "kill-node")
	pause(12 * time.Second)
	cluster("revive")
	waitSync()
	pause(2 * time.Second)
	do("a switchover", "switchover")
	pause(10 * time.Second)
	waitSync()
	stop()
	wg.Wait()

	// Seconds to writes: from each fault to the first write answered 200
	// after the last one that failed before the next fault.
	mu.Lock()
	sort.Slice(attempts, func(i, j int) bool { return attempts[i].end.Before(attempts[j].end) })
	var worst time.Duration
	for i, f := range faults {
		until := time.Now()
		if i+1 < len(faults) {
			until = faults[i+1].at
		}
		var lastFail, back time.Time
		for _, at := range attempts {
			if at.start.Before(f.at) || at.end.After(until) {
				continue
			}
			if at.status != 200 {
				lastFail, back = at.end, time.Time{}
			} else if back.IsZero() {
				back = at.end
			}
		}
		took, failed := time.Duration(0), 0
		lastOf := [2]time.Duration{}
		for _, at := range attempts {
			if !at.start.Before(f.at) && !at.end.After(until) && at.status != 200 {
				failed++
				lastOf[at.instance] = max(lastOf[at.instance], at.end.Sub(f.at))
			}
		}
		t.Logf("%s: the last write refused by A %.2f s, by B %.2f s after it", f.name, lastOf[0].Seconds(), lastOf[1].Seconds())
		switch {
		case lastFail.IsZero(): // no write failed
		case back.IsZero(): // none succeeded after the last failure, up to the next fault
			took = until.Sub(f.at)
		default:
			took = back.Sub(f.at)
		}
		worst = max(worst, took)
		fmt.Printf("failover: %s at %s: writes back %.2f s after it (%d writes refused meanwhile, the last %.2f s after it)\n", f.name, f.at.UTC().Format("15:04:05.000"), took.Seconds(),
			failed, max(0, lastFail.Sub(f.at)).Seconds())
	}
	mu.Unlock()

	// A merchant secret rotated now works on both instances at once.
	out, code = runCmd(t, env(viaHAProxy), "merchant", "rotate-secret", cr.MerchantID)
	var rotated payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &rotated) != nil {
		t.Fatalf("rotate-secret: %d %s", code, out)
	}
	for _, base := range instances {
		if st, _ := post(t, base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret}); st != 401 {
			t.Errorf("%s: the old secret after the rotation: %d", base, st)
		}
		if st, _ := post(t, base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": rotated.ClientSecret}); st != 200 {
			t.Errorf("%s: the new secret: %d", base, st)
		}
	}

	// What the database holds.
	db, err := sql.Open("pgx", viaHAProxy)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	counts := func(q string) map[string]int {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			rows.Scan(&k, &n)
			out[k] = n
		}
		return out
	}
	rtpRows := counts("SELECT description, count(*) FROM rtps GROUP BY description")
	payRows := counts("SELECT network_ref, count(*) FROM payments WHERE network_ref LIKE 'HATX%' GROUP BY network_ref")
	refundRows := counts("SELECT payment_id, count(*) FROM refunds GROUP BY payment_id")
	lost, twice := 0, 0
	for key := range rtps {
		if rtpRows[key] == 0 {
			lost++
		}
	}
	for tx := range credits {
		if payRows[tx] == 0 {
			lost++
		}
	}
	for _, n := range rtpRows {
		if n > 1 {
			twice++
		}
	}
	for _, n := range payRows {
		if n > 1 {
			twice++
		}
	}
	for key, id := range refunds {
		var n int
		db.QueryRow("SELECT count(*) FROM refunds WHERE id = $1", id).Scan(&n)
		if n == 0 {
			lost++
		}
		if refundRows[strings.TrimPrefix(key, "refund-")] > 1 {
			twice++
		}
	}

	// Callbacks and rails messages, once payd has sent them all.
	var pendingCallbacks, pendingOrders int
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		db.QueryRow("SELECT count(*) FROM callbacks WHERE state <> 'delivered'").Scan(&pendingCallbacks)
		db.QueryRow("SELECT count(*) FROM rails_orders WHERE state <> 'delivered'").Scan(&pendingOrders)
		if pendingCallbacks == 0 && pendingOrders == 0 {
			break
		}
	}
	time.Sleep(time.Second) // a delivery recorded is one the receiver has
	payIDs := counts("SELECT id, 1 FROM payments WHERE network_ref LIKE 'HATX%'")
	cbMu.Lock()
	cbMissing, cbTwice := 0, 0
	for id := range payIDs {
		switch callbacks[id] {
		case 0:
			cbMissing++
		case 1:
		default:
			cbTwice++
		}
	}
	cbStray := len(callbacks) - len(payIDs) + cbMissing
	cbMu.Unlock()
	msgs := map[string]map[string]bool{}
	conflicts := 0
	for _, kind := range []string{"pain.013", "pacs.004"} {
		msgs[kind] = map[string]bool{}
		res, err := http.Get(bank.base + "/messages?kind=" + kind)
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			ObjectID  string `json:"objectId"`
			Conflicts int    `json:"conflicts"`
		}
		json.NewDecoder(res.Body).Decode(&list)
		res.Body.Close()
		for _, m := range list {
			msgs[kind][m.ObjectID] = true
			conflicts += m.Conflicts
		}
	}
	unsent := 0
	for id := range counts("SELECT id, 1 FROM rtps") {
		if !msgs["pain.013"][id] {
			unsent++
		}
	}
	for id := range counts("SELECT id, 1 FROM refunds") {
		if !msgs["pacs.004"][id] {
			unsent++
		}
	}
	mu.Lock()
	other := 0
	for st, n := range answers {
		if st != 200 && st != 503 {
			other += n
		}
	}
	fmt.Printf("failover: %d RTPs, %d credits, %d refunds acknowledged; writes lost %d, duplicates %d, answers other than 200/503 %d (%v), "+
		"callbacks missing %d, twice %d; rails messages unsent %d, sent with different bodies %d; seconds to writes (worst) %.2f\n",
		len(rtps), len(credits), len(refunds), lost, twice, other, answers, cbMissing, cbTwice, unsent, conflicts, worst.Seconds())
	mu.Unlock()
	if len(rtps) == 0 || len(credits) == 0 || len(refunds) == 0 {
		t.Fatalf("the load made too little: %d RTPs, %d credits, %d refunds", len(rtps), len(credits), len(refunds))
	}
	if async {
		t.Logf("asynchronous replication: %d acknowledged writes lost (reported, not failed on)", lost)
	} else if lost != 0 {
		t.Errorf("%d acknowledged writes lost", lost)
	}
	if twice != 0 || other != 0 || cbMissing != 0 || cbTwice != 0 || cbStray != 0 || unsent != 0 || conflicts != 0 || pendingCallbacks != 0 || pendingOrders != 0 {
		t.Errorf("duplicates %d, other answers %d, callbacks missing %d / twice %d / stray %d, messages unsent %d / conflicting %d, pending callbacks %d, orders %d",
			twice, other, cbMissing, cbTwice, cbStray, unsent, conflicts, pendingCallbacks, pendingOrders)
	}
	if worst > 10*time.Second {
		t.Errorf("writes came back %.1f s after a fault, past 10 s", worst.Seconds())
	}
}
