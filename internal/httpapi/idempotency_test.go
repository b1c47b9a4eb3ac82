package httpapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
)

func (e *env) idem(key, method, path, body, token string) *resp {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return e.send(req)
}

func TestIdempotencyKey(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		body := mustJSON(e.rtpBody(nil))
		first := e.idem("order-42", "POST", "/v2/rtp", body, e.token).wantOK()
		again := e.idem("order-42", "POST", "/v2/rtp", body, e.token).wantOK()
		if string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("replay:\n%s\n%s", first.body, again.body)
		}
		if n := e.as("GET", "/v2/rtp?count=10&offset=0", nil).num("result.totalCount"); n != 1 {
			t.Errorf("the replay executed again: %v RTPs", n)
		}
		// Same key, different body or path: 422.
		e.idem("order-42", "POST", "/v2/rtp", strings.Replace(body, "Order 42", "Order 43", 1), e.token).wantError(422, payd.CodeIdempotencyMismatch)
		e.idem("order-42", "POST", "/v2/checkouts", `{"amount":1,"currency":"MDL"}`, e.token).wantError(422, payd.CodeIdempotencyMismatch)
		// Keys are per merchant.
		_, _, other := e.newMerchant(0)
		e.idem("order-42", "POST", "/v2/rtp", body, other).wantOK()
		// Only 200s are kept: a retry after an error runs again.
		id := first.str("result.rtpId")
		e.idem("cancel-1", "POST", "/v2/rtp/"+id+"/cancel", `{}`, e.token).wantError(400, payd.CodeInvalidParameter)
		r := e.idem("cancel-1", "POST", "/v2/rtp/"+id+"/cancel", `{"reason":"x"}`, e.token).wantOK()
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Error("an error response was stored")
		}
		// After 24 hours the key is forgotten.
		e.clock.Advance(24 * time.Hour)
		if r := e.idem("order-42", "POST", "/v2/rtp", mustJSON(e.rtpBody(nil)), e.token).wantOK(); r.header.Get("Idempotent-Replayed") != "" {
			t.Error("a 24-hour-old key replayed")
		}
		e.idem(strings.Repeat("k", 256), "POST", "/v2/rtp", body, e.token).wantError(400, payd.CodeInvalidParameter)
		// Concurrent first requests with one key: one runs, the others replay it or are told it is in flight.
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		b2 := mustJSON(e.rtpBody(map[string]any{"orderId": "race"}))
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.idem("race", "POST", "/v2/rtp", b2, e.token)
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if n := e.as("GET", "/v2/rtp?count=10&offset=0&orderId=race", nil).num("result.totalCount"); n != 1 || codes[200]+codes[409] != 10 {
			t.Errorf("racing keys: %v RTPs, statuses %v", n, codes)
		}
	})
}

func TestIdempotencyInFlight(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		release := make(chan struct{})
		started := make(chan struct{})
		e.api.mux.Handle("POST /v2/test-slow", e.api.api(areaAuth, routeOpts{}, func(c *call) error {
			close(started)
			<-release
			return c.respond(map[string]string{"done": "yes"})
		}))
		done := make(chan *resp)
		go func() { done <- e.idem("slow", "POST", "/v2/test-slow", `{}`, e.token) }()
		<-started
		e.idem("slow", "POST", "/v2/test-slow", `{}`, e.token).wantError(409, payd.CodeIdempotencyBusy)
		close(release)
		(<-done).wantOK()
		if r := e.idem("slow", "POST", "/v2/test-slow", `{}`, e.token).wantOK(); r.header.Get("Idempotent-Replayed") != "true" {
			t.Error("no replay after the first finished")
		}
	})
}
