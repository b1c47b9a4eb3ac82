package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/hang"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// hook is a merchant's callback endpoint on 127.0.0.1.
type hook struct {
	mu      sync.Mutex
	answer  func(n int) int // status for the n-th request (1-based)
	bodies  []string
	headers []http.Header
	srv     *httptest.Server
	arrived chan struct{}
}

func newHook(t *testing.T, answer func(n int) int) *hook {
	h := &hook{answer: answer, arrived: make(chan struct{}, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.headers = append(h.headers, r.Header.Clone())
		n := len(h.bodies)
		h.mu.Unlock()
		w.WriteHeader(h.answer(n))
		h.arrived <- struct{}{}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) wait(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		h.mu.Lock()
		got := len(h.bodies)
		h.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-h.arrived:
		case <-deadline:
			t.Fatalf("%d callbacks arrived within %v, want %d", got, within, n)
		}
	}
}

func merchantToken(t *testing.T, env map[string]string, base string) (payd.Credentials, string) {
	t.Helper()
	out, code := runCmd(t, env, "merchant", "create", "--name", "Hook shop")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	if base == "" {
		return cr, ""
	}
	return cr, token(t, base, cr)
}

func token(t *testing.T, base string, cr payd.Credentials) string {
	t.Helper()
	_, body := post(t, base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret})
	tok, _ := body["result"].(map[string]any)["accessToken"].(string)
	if tok == "" {
		t.Fatalf("no token: %v", body)
	}
	return tok
}

func createAndAccept(t *testing.T, base, tok, callbackURL string) map[string]any {
	t.Helper()
	status, body := post(t, base+"/v2/rtp", tok, map[string]any{
		"alias": "37369112221", "amount": 12.34, "currency": "MDL", "description": "e2e", "orderId": "e2e-1",
		"expiresAt": payd.FormatTime(time.Now().Add(time.Hour)), "callbackUrl": callbackURL,
	})
	if status != 200 {
		t.Fatalf("create rtp: %d %v", status, body)
	}
	id := body["result"].(map[string]any)["rtpId"].(string)
	status, body = post(t, base+"/v2/rtp/"+id+"/test-accept", tok, map[string]any{"amount": 12.34, "currency": "MDL"})
	if status != 200 {
		t.Fatalf("test-accept: %d %v", status, body)
	}
	return body["result"].(map[string]any)
}

// TestCallbackRedeliveredUntilAcknowledged: a receiver that answers 500
// twice and then 200 gets the same signed payload three times.
func TestCallbackRedeliveredUntilAcknowledged(t *testing.T) {
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		h := newHook(t, func(n int) int { return map[bool]int{true: 500, false: 200}[n <= 2] })
		env := map[string]string{"PAYD_DATABASE_URL": dbURL, "PAYD_CALLBACK_SCHEDULE": "200ms,200ms,200ms"}
		cr, _ := merchantToken(t, env, "")
		s := startServer(t, env)
		tok := token(t, s.base, cr)
		res := createAndAccept(t, s.base, tok, h.srv.URL+"/payd")
		h.wait(t, 3, 10*time.Second)
		time.Sleep(300 * time.Millisecond)
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.bodies) != 3 {
			t.Fatalf("%d deliveries, want exactly 3", len(h.bodies))
		}
		for i := range h.bodies {
			if h.bodies[i] != h.bodies[0] || h.headers[i].Get("X-Signature") != h.headers[0].Get("X-Signature") {
				t.Errorf("delivery %d differs from the first", i+1)
			}
		}
		var cb struct {
			Result    map[string]any `json:"result"`
			Signature string         `json:"signature"`
		}
		if err := json.Unmarshal([]byte(h.bodies[0]), &cb); err != nil {
			t.Fatal(err)
		}
		// The receiver verifies the signature with the merchant's key, as the seed says.
		fs := payd.Fields{}
		for _, k := range []string{"rtpId", "rtpStatus", "orderId", "payId", "currency", "payerName", "payerIban", "executedAt"} {
			fs = append(fs, payd.Str(k, cb.Result[k].(string)))
		}
		amount, _ := payd.ParseMoney(jsonNumber(h.bodies[0], "amount"))
		commission, _ := payd.ParseMoney(jsonNumber(h.bodies[0], "commission"))
		fs = append(fs, payd.Amt("amount", amount), payd.Amt("commission", commission))
		if cb.Signature != fs.Sign(cr.SignatureKey) || cb.Signature != res["signature"] || cb.Result["rtpStatus"] != "Accepted" || cb.Result["payId"] != res["payId"] {
			t.Errorf("callback %s does not verify or differs from the accept result %v", h.bodies[0], res)
		}
		if !strings.Contains(h.bodies[0], `"amount":12.34,"commission":0.00`) {
			t.Errorf("amounts: %s", h.bodies[0])
		}
	})
}

// jsonNumber returns the raw text of a numeric field of a callback body.
func jsonNumber(body, name string) string {
	i := strings.Index(body, `"`+name+`":`)
	rest := body[i+len(name)+3:]
	j := strings.IndexAny(rest, ",}")
	return rest[:j]
}

// TestCallbackSurvivesRestart: the server stops between the payment's
// commit and the callback's delivery; the next server delivers it.
func TestCallbackSurvivesRestart(t *testing.T) {
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		release := make(chan struct{})
		var once sync.Once
		h := newHook(t, func(n int) int {
			if n == 1 {
				<-release // the first attempt hangs while the server goes down
				return 200
			}
			return 200
		})
		env := map[string]string{"PAYD_DATABASE_URL": dbURL, "PAYD_CALLBACK_SCHEDULE": "300ms"}
		cr, _ := merchantToken(t, env, "")
		s1 := startServer(t, env)
		res := createAndAccept(t, s1.base, token(t, s1.base, cr), h.srv.URL)
		// Wait until the first attempt is in flight, then stop the server.
		deadline := time.Now().Add(10 * time.Second)
		for {
			h.mu.Lock()
			n := len(h.bodies)
			h.mu.Unlock()
			if n == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		s1.shutdown(t)
		once.Do(func() { close(release) })
		// The first attempt was cut off by the shutdown, so it counts as failed.
		s2 := startServer(t, env)
		_ = s2
		h.wait(t, 2, 10*time.Second)
		h.mu.Lock()
		defer h.mu.Unlock()
		if !strings.Contains(h.bodies[1], res["payId"].(string)) || h.bodies[1] != h.bodies[0] {
			t.Errorf("redelivery after restart differs: %s", h.bodies[1])
		}
	})
}

// TestSlowEndpointDoesNotHoldBackCallbacks: while one merchant's endpoint
// holds an attempt open, a callback committed after it is delivered, not
// kept waiting for the pass of the slow attempt to end (DeliveryLoops).
func TestSlowEndpointDoesNotHoldBackCallbacks(t *testing.T) {
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		release := make(chan struct{})
		slow := newHook(t, func(int) int { <-release; return 200 })
		t.Cleanup(func() { close(release) }) // before the hook's server closes
		fast := newHook(t, func(int) int { return 200 })
		env := map[string]string{"PAYD_DATABASE_URL": dbURL}
		cr, _ := merchantToken(t, env, "")
		s := startServer(t, env)
		tok := token(t, s.base, cr)
		createAndAccept(t, s.base, tok, slow.srv.URL)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			slow.mu.Lock()
			n := len(slow.bodies)
			slow.mu.Unlock()
			if n == 1 {
				break // its attempt is in flight, and stays so
			}
			if time.Now().After(deadline) {
				t.Fatal("the slow endpoint's callback did not arrive")
			}
		}
		createAndAccept(t, s.base, tok, fast.srv.URL)
		fast.wait(t, 1, 3*time.Second)
	})
}

// TestHungEndpointDoesNotHoldBackOthers: one merchant's endpoint accepts
// connections and never answers, with 100 callbacks queued for it. Another
// merchant's callback committed after them arrives at once, not after the
// hung attempts' 10 s timeout (it took 30 s with 300 of them when every
// attempter took whatever came next), and the hung host is never sent more
// than its share of attempts at once (worker/hosts.go): 32 by default, or
// what PAYD_CALLBACK_PER_HOST says.
func TestHungEndpointDoesNotHoldBackOthers(t *testing.T) {
	for _, perHost := range []int{0, 8} {
		limit := 32
		if perHost > 0 {
			limit = perHost
		}
		t.Run(fmt.Sprintf("per host %d", limit), func(t *testing.T) {
			storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
				hung, err := hang.Listen()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(hung.Close)
				fast := newHook(t, func(int) int { return 200 })
				env := map[string]string{"PAYD_DATABASE_URL": dbURL}
				if perHost > 0 {
					env["PAYD_CALLBACK_PER_HOST"] = strconv.Itoa(perHost)
				}
				hungShop, _ := merchantToken(t, env, "")
				other, _ := merchantToken(t, env, "")
				s := startServer(t, env)
				hungTok, otherTok := token(t, s.base, hungShop), token(t, s.base, other)
				for range 100 {
					createAndAccept(t, s.base, hungTok, hung.URL())
				}
				start := time.Now()
				createAndAccept(t, s.base, otherTok, fast.srv.URL)
				fast.wait(t, 1, 5*time.Second)
				n := hung.Accepted()
				t.Logf("the other merchant's callback arrived after %v; the hung endpoint has %d connections", time.Since(start), n)
				if n < 1 || n > limit {
					t.Errorf("the hung endpoint was sent %d attempts at once; want 1 to %d", n, limit)
				}
				// The rest wait for it, and the gauge counts them (none is
				// stale before the first hung attempt times out, 10 s in),
				// up to eight per attempt allowed (worker's parkedPerLimit);
				// past that they wait out their leases.
				body := metricsText(t, s.base)
				if want := fmt.Sprintf("payd_callbacks_parked %d\n", min(100-n, 8*limit)); !strings.Contains(body, want) {
					t.Errorf("want %q in the metrics:\n%s", want, grepLines(body, "payd_callbacks"))
				}
			})
		})
	}
}

// TestParkedCallbacksReleasedAtStop: an instance that stops with callbacks
// parked for a hung host gives up their leases, so that another instance
// claims them at once rather than after the 30 s lease (the attempts in
// flight at the stop are cut short and recorded, which ends their leases
// too). With the parked ones left as they were, 68 stayed leased.
func TestParkedCallbacksReleasedAtStop(t *testing.T) {
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		hung, err := hang.Listen()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(hung.Close)
		env := map[string]string{"PAYD_DATABASE_URL": dbURL}
		shop, _ := merchantToken(t, env, "")
		s := startServer(t, env)
		tok := token(t, s.base, shop)
		for range 100 {
			createAndAccept(t, s.base, tok, hung.URL())
		}
		want := "payd_callbacks_parked 68\n"
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			body := metricsText(t, s.base)
			if strings.Contains(body, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("want %q in the metrics:\n%s", want, grepLines(body, "payd_callbacks"))
			}
		}
		s.shutdown(t)
		db := openDB(t, dbURL)
		defer db.Close()
		var leased, pending int
		if err := db.QueryRow("SELECT COUNT(*) FROM callbacks WHERE state = 'pending' AND lease_owner IS NOT NULL").Scan(&leased); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT COUNT(*) FROM callbacks WHERE state = 'pending'").Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if leased != 0 || pending != 100 {
			t.Errorf("after the stop %d of %d pending callbacks are still leased; want 0 of 100", leased, pending)
		}
	})
}

// metricsText is what a sandbox server's /metrics answers.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestCallbackPerHostSetting: PAYD_CALLBACK_PER_HOST takes 1 to 256 (the
// attempters of an instance's claiming loops); anything else stops serve
// with the setting named.
func TestCallbackPerHostSetting(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	for _, v := range []string{"0", "-1", "257", "many", "1.5"} {
		env := map[string]string{"PAYD_DATABASE_URL": db, "PAYD_CALLBACK_PER_HOST": v}
		var stderr bytes.Buffer
		if code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, &stderr); code == 0 ||
			!strings.Contains(stderr.String(), "callback per host") {
			t.Errorf("PAYD_CALLBACK_PER_HOST=%s: exit %d, %q", v, code, stderr.String())
		}
	}
	get := func(env map[string]string, args ...string) int {
		c, _, err := loadConfig("serve", args, func(k string) string { return env[k] }, io.Discard, nil)
		if err != nil {
			t.Fatalf("%v %v: %v", env, args, err)
		}
		return c.CallbackPerHost
	}
	if n := get(nil); n != 32 {
		t.Errorf("the default is %d, want 32", n)
	}
	if n := get(map[string]string{"PAYD_CALLBACK_PER_HOST": "256"}); n != 256 {
		t.Errorf("PAYD_CALLBACK_PER_HOST=256 gave %d", n)
	}
	if n := get(map[string]string{"PAYD_CALLBACK_PER_HOST": "256"}, "--callback-per-host", "1"); n != 1 {
		t.Errorf("the flag did not win over the variable: %d", n)
	}
}

// TestCallbackQueuedWhileServerDown: a payment committed while no server
// runs (as after a crash right after the commit) is delivered by the next.
func TestCallbackQueuedWhileServerDown(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, store *sqlstore.Store, dbURL string) {
		h := newHook(t, func(int) int { return 200 })
		clock := payd.SystemClock{}
		cr, err := store.CreateMerchant(t.Context(), sqlstore.MerchantOptions{Name: "x"}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		m, _ := store.Merchant(t.Context(), cr.MerchantID)
		amount, exp := payd.Money(100), clock.Now().Add(time.Hour)
		r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "d", CallbackURL: h.srv.URL}, m.ID, clock.Now())
		if err := store.CreateRTP(t.Context(), m, r); err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.CreditRTP(t.Context(), m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, clock.Now()); err != nil {
			t.Fatal(err)
		}
		startServer(t, map[string]string{"PAYD_DATABASE_URL": dbURL})
		h.wait(t, 1, 5*time.Second)
	})
}

func TestCallbacksCommands(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, store *sqlstore.Store, dbURL string) {
		env := map[string]string{"PAYD_DATABASE_URL": dbURL, "PAYD_CALLBACK_SCHEDULE": "50ms"}
		fail := true
		var mu sync.Mutex
		h := newHook(t, func(int) int {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return 503
			}
			return 200
		})
		cr, _ := merchantToken(t, env, "")
		s := startServer(t, env)
		createAndAccept(t, s.base, token(t, s.base, cr), h.srv.URL)
		h.wait(t, 2, 10*time.Second) // the first attempt and the one retry the schedule allows
		var failed []map[string]any
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			out, _ := runCmd(t, env, "callbacks", "list", "--state", "failed")
			json.Unmarshal([]byte(out), &failed)
			if len(failed) == 1 {
				break
			}
		}
		if len(failed) != 1 || failed[0]["attempts"] != 2.0 || failed[0]["lastStatus"] != 503.0 {
			t.Fatalf("failed callbacks = %v", failed)
		}
		mu.Lock()
		fail = false
		mu.Unlock()
		if out, code := runCmd(t, env, "callbacks", "resend", failed[0]["id"].(string)); code != 0 {
			t.Fatalf("resend: %d %s", code, out)
		}
		h.wait(t, 3, 5*time.Second)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			out, _ := runCmd(t, env, "callbacks", "list", "--state", "delivered")
			var delivered []map[string]any
			json.Unmarshal([]byte(out), &delivered)
			if len(delivered) == 1 {
				return
			}
		}
		t.Error("the resent callback was not delivered")
	})
}
