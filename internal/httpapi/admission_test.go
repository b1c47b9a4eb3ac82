package httpapi

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"payd"
)

// TestOverloadAnswers503: with every slot taken and the wait over, a request
// answers 503 90009 with Retry-After, never 500, and is served again once a
// slot frees; a request whose client went away is answered (and logged) 499.
func TestOverloadAnswers503(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight, cfg.QueueLength, cfg.QueueWait = 2, 1, 50*time.Millisecond
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		e.api.admit.slots <- struct{}{} // two requests in flight
		e.api.admit.slots <- struct{}{}
		r := e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantError(503, payd.CodeUnavailable)
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
		}
		// A waiting request is served as soon as a slot frees.
		go func() { time.Sleep(20 * time.Millisecond); e.api.admit.leave() }()
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantOK()
		e.api.admit.leave()
		if n := e.api.admit.shed.Load(); n != 1 {
			t.Errorf("shed %d requests, want 1", n)
		}

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest("GET", "/v2/rtp?count=1&offset=0", nil).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer "+e.token)
		w := httptest.NewRecorder()
		e.api.ServeHTTP(w, req)
		if w.Code != 499 {
			t.Errorf("abandoned request answered %d, want 499", w.Code)
		}
	})
}
