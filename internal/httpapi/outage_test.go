package httpapi

import (
	"net/http"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

// TestDatabaseOutageAnswers503: while the database cannot be reached, the
// API answers 503 90009 with Retry-After (never 500), /readyz answers 503
// so a load balancer drains the instance, and everything works again once
// it is back, by itself. PostgreSQL behind a proxy the test cuts.
func TestDatabaseOutageAnswers503(t *testing.T) {
	if !storetest.HasPostgres() {
		t.Skip("needs PAYD_TEST_POSTGRES_URL (a proxy in front of PostgreSQL is cut)")
	}
	t.Run("postgres", func(t *testing.T) {
		s, proxy := storetest.PostgresBehindProxy(t)
		e := newEnv(t, s, testConfig())
		rtp := e.createRTP(nil)
		proxy.Cut()
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v2/rtp", e.rtpBody(nil)},
			{"GET", "/v2/rtp/" + rtp, nil},
			{"GET", "/v2/rtp?count=5", nil},
			{"GET", "/v2/payments", nil},
			{"GET", "/v2/checkouts", nil},
			{"POST", "/v2/rtp/" + rtp + "/cancel", map[string]any{"reason": "outage"}},
			{"POST", "/v2/auth/token", map[string]any{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret}},
		} {
			r := e.as(c.method, c.path, c.body).wantError(503, payd.CodeUnavailable)
			if r.header.Get("Retry-After") == "" {
				t.Errorf("%s %s: 503 without Retry-After", c.method, c.path)
			}
		}
		if r := e.call("GET", "/readyz", nil, ""); r.status != http.StatusServiceUnavailable {
			t.Errorf("/readyz during the outage: %d", r.status)
		}
		proxy.Restore()
		deadline := time.Now().Add(15 * time.Second)
		for {
			r := e.as("POST", "/v2/rtp", e.rtpBody(nil))
			if r.status == 200 {
				break
			}
			if r.status != 503 || time.Now().After(deadline) {
				t.Fatalf("after the database came back: %d %s", r.status, r.body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if s := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.status"); s != "Active" {
			t.Errorf("the RTP whose cancel failed during the outage is %s", s)
		}
		if r := e.call("GET", "/readyz", nil, ""); r.status != 200 {
			t.Errorf("/readyz after the outage: %d", r.status)
		}
	})
}
