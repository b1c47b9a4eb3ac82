package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"payd"
)

func TestEnvelopeRules(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.as("GET", "/v2/nothing-here", nil).wantError(404, payd.CodeNoRoute)
		e.as("GET", "/v2/rtp/", nil).wantError(404, payd.CodeNoRoute)
		r := e.as("DELETE", "/v2/rtp", nil).wantError(405, payd.CodeMethodNotAllowed)
		if got := r.header.Get("Allow"); got != "GET, POST" {
			t.Errorf("Allow = %q", got)
		}
		// The route is checked before authentication.
		e.call("PUT", "/v2/auth/token", nil, "").wantError(405, payd.CodeMethodNotAllowed)

		// Body limit, media type, malformed JSON.
		big := `{"alias":"` + strings.Repeat("x", 1<<20) + `"}`
		e.as("POST", "/v2/rtp", big).wantError(413, payd.CodeBodyTooLarge)
		req, _ := http.NewRequest("POST", e.srv.URL+"/v2/rtp", strings.NewReader("alias=1"))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		e.send(req).wantError(415, payd.CodeMediaType)
		req, _ = http.NewRequest("POST", e.srv.URL+"/v2/rtp", strings.NewReader(`{"a":1}`))
		req.Header.Set("Authorization", "Bearer "+e.token)
		e.send(req).wantError(415, payd.CodeMediaType) // no Content-Type at all
		req, _ = http.NewRequest("POST", e.srv.URL+"/v2/rtp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "Application/Merchant+JSON; charset=utf-8")
		e.send(req).wantError(400, payd.CodeInvalidParameter) // accepted as JSON, then validated
		e.as("POST", "/v2/rtp", `{"alias":`).wantError(400, payd.CodeInvalidRequest)
		e.as("POST", "/v2/rtp", `[1,2]`).wantError(400, payd.CodeInvalidRequest)
		e.as("POST", "/v2/rtp", `{} {}`).wantError(400, payd.CodeInvalidRequest)
		e.as("POST", "/v2/rtp", "").wantError(400, payd.CodeInvalidRequest)

		// Request ids: a valid client id is echoed, anything else replaced.
		req, _ = http.NewRequest("GET", e.srv.URL+"/healthz", nil)
		req.Header.Set("X-Request-Id", "abc-123.X_y")
		if got := e.send(req).header.Get("X-Request-Id"); got != "abc-123.X_y" {
			t.Errorf("echoed request id = %q", got)
		}
		req.Header.Set("X-Request-Id", "bad id!")
		if got := e.send(req).header.Get("X-Request-Id"); got == "bad id!" || got == "" {
			t.Errorf("invalid request id handled as %q", got)
		}
	})
}

func TestPanicIsAnEnvelopeWithoutDetail(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.api.mux.Handle("GET /v2/test-panic", e.api.api(areaAuth, routeOpts{}, func(*call) error { panic("secret internal detail") }))
		r := e.as("GET", "/v2/test-panic", nil).wantError(500, payd.CodeInternal)
		if strings.Contains(string(r.body), "secret") || r.str("errors.0.errorMessage") != "An internal error occurred." {
			t.Errorf("500 body = %s", r.body)
		}
	})
}

func TestOperationsEndpoints(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		if r := e.call("GET", "/healthz", nil, "").wantOK(); r.str("result.status") != "ok" {
			t.Errorf("healthz = %s", r.body)
		}
		e.call("GET", "/readyz", nil, "").wantOK()
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantOK()
		m := e.call("GET", "/metrics", nil, "")
		for _, want := range []string{`payd_http_requests_total{route="GET /v2/rtp",status="200"} 1`, "payd_http_request_duration_seconds_bucket", "payd_callbacks_pending 0", "payd_refunds_pending 0"} {
			if !strings.Contains(string(m.body), want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		o := e.call("GET", "/openapi.json", nil, "")
		if o.status != 200 || o.str("openapi") != "3.0.3" {
			t.Errorf("openapi.json = %d %.100s", o.status, o.body)
		}
	})
}

func TestReadyzFailsWithoutDatabase(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.store.Close()
		r := e.call("GET", "/readyz", nil, "").wantError(503, payd.CodeUnavailable)
		if r.header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		e.call("GET", "/healthz", nil, "").wantOK()
	})
}

func TestAuthentication(t *testing.T) {
	cfg := testConfig()
	cfg.TokenTTL = 0 // the default, 300 s
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		for _, h := range []string{"", "Bearer", "Basic abc", "Bearer nope", "Bearer " + e.token + "x", "Token " + e.token} {
			req, _ := http.NewRequest("GET", e.srv.URL+"/v2/rtp?count=1&offset=0", nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			r := e.send(req).wantError(401, payd.CodeUnauthorized)
			if r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%q: no WWW-Authenticate", h)
			}
		}
		// The scheme is case-insensitive and spaces are tolerated.
		req, _ := http.NewRequest("GET", e.srv.URL+"/v2/rtp?count=1&offset=0", nil)
		req.Header.Set("Authorization", "  bEaReR   "+e.token+"  ")
		e.send(req).wantOK()

		// Token endpoint errors.
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID}, "").wantError(400, payd.CodeMissingCredentials)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": "  "}, "").wantError(400, payd.CodeMissingCredentials)
		e.call("POST", "/v2/auth/token", "{", "").wantError(400, payd.CodeInvalidRequest)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": "wrong"}, "").wantError(401, payd.CodeBadCredentials)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": "unknown", "clientSecret": "x"}, "").wantError(401, payd.CodeBadCredentials)
		r := e.call("POST", "/v2/auth/token", map[string]any{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret, "extra": 1}, "").wantOK()
		if r.num("result.expiresIn") != 300 || r.str("result.tokenType") != "Bearer" {
			t.Errorf("token result = %s", r.body)
		}
		second := r.str("result.accessToken")

		// Several tokens are valid at once; each lives exactly expiresIn seconds.
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantOK()
		e.call("GET", "/v2/rtp?count=1&offset=0", nil, second).wantOK()
		e.clock.Advance(299 * time.Second)
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantOK()
		e.clock.Advance(time.Second)
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantError(401, payd.CodeUnauthorized)

		// Rotation kills every earlier token and the old secret.
		if _, err := e.store.RotateSecret(t.Context(), e.creds.ClientID, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		e.call("GET", "/v2/rtp?count=1&offset=0", nil, second).wantError(401, payd.CodeUnauthorized)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret}, "").wantError(401, payd.CodeBadCredentials)
	})
}

func TestInactiveMerchant(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		if err := e.store.SetMerchantActive(t.Context(), e.merchant.ID, false); err != nil {
			t.Fatal(err)
		}
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantError(403, payd.CodeRTPMerchantInactive)
		e.as("GET", "/v2/payments", nil).wantError(403, payd.CodeMerchantInactive)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret}, "").wantError(403, payd.CodeMerchantInactive)
		// Credentials are checked first.
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": "bad"}, "").wantError(401, payd.CodeBadCredentials)
	})
}

func TestTokenRateLimit(t *testing.T) {
	cfg := testConfig()
	cfg.TokenRateClient, cfg.TokenRateAddr = 3, 5
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		// newEnv used one request of the address and of the client.
		body := map[string]string{"clientId": e.creds.ClientID, "clientSecret": "wrong"}
		e.call("POST", "/v2/auth/token", body, "").wantError(401, payd.CodeBadCredentials)
		e.call("POST", "/v2/auth/token", body, "").wantError(401, payd.CodeBadCredentials)
		r := e.call("POST", "/v2/auth/token", body, "").wantError(429, payd.CodeRateLimited)
		if ra := r.header.Get("Retry-After"); ra != "20" {
			t.Errorf("Retry-After = %q, want 20 (one request every 20 s)", ra)
		}
		// Another client from the same address has 1 request left, then the address limit.
		other := map[string]string{"clientId": "someone-else", "clientSecret": "x"}
		e.call("POST", "/v2/auth/token", other, "").wantError(401, payd.CodeBadCredentials)
		e.call("POST", "/v2/auth/token", other, "").wantError(429, payd.CodeRateLimited)
		e.clock.Advance(time.Minute)
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret}, "").wantOK()
	})
}

func TestNoSecretOrTokenAtRest(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.as("GET", "/v2/rtp?count=1&offset=0", nil).wantOK()
		at := e.dbText()
		if strings.Contains(at, e.creds.ClientSecret) || strings.Contains(at, e.token) {
			t.Error("a client secret or an access token is stored in plain text")
		}
		if !strings.Contains(at, payd.HashSecret(e.creds.ClientSecret)) || !strings.Contains(at, payd.HashSecret(e.token)) {
			t.Error("the hashes are not where the test expects them; it would not notice plain text")
		}
	})
}
