package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"payd"
	"payd/api"
	"payd/internal/sqlstore"
)

func TestEnvelopeRules(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.as("GET", "/v2/nothing-here", nil).wantError(404, payd.CodeNoRoute)
		e.as("GET", "/v2/rtp/", nil).wantError(404, payd.CodeNoRoute)
		// Paths are case-sensitive, and an unknown one in any case gets the envelope.
		e.as("GET", "/V2/rtp", nil).wantError(404, payd.CodeNoRoute)
		e.as("POST", "/V2/RTP/test", nil).wantError(404, payd.CodeNoRoute)
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
		for _, want := range []string{`payd_http_requests_total{route="GET /v2/rtp",status="200"} 1`, "payd_http_request_duration_seconds_bucket", "payd_callbacks_pending 0", "payd_refunds_pending 0",
			`payd_handed_queued{kind="orders"} 0`, `payd_handed_total{kind="callbacks"} 0`, `payd_handed_full_total{kind="orders"} 0`} {
			if !strings.Contains(string(m.body), want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		// SQLite's group committer reports its work (the merchant and its
		// token were written); PostgreSQL and the plain store have none.
		sqlite := e.store.Engine() == sqlstore.SQLite && !e.store.Plain()
		for _, name := range []string{"payd_sqlite_write_batches_total", "payd_sqlite_write_use_cases_total",
			"payd_sqlite_writer_busy_seconds_total", "payd_sqlite_commit_seconds_total", "payd_rtp_cache_hits_total"} {
			v, found := metricValue(string(m.body), name)
			switch {
			case found != sqlite:
				t.Errorf("metric %s present: %v, on %s", name, found, e.store.Engine())
			case sqlite && name != "payd_rtp_cache_hits_total" && v <= 0:
				t.Errorf("metric %s = %v after writes", name, v)
			}
		}
		o := e.call("GET", "/openapi.json", nil, "")
		if o.status != 200 || o.str("openapi") != "3.0.3" {
			t.Errorf("openapi.json = %d %.100s", o.status, o.body)
		}
	})
}

// metricValue is the value of an unlabelled metric in a scrape.
func metricValue(scrape, name string) (float64, bool) {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
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
		// A member the endpoint does not take is named, not ignored.
		bad := e.call("POST", "/v2/auth/token", map[string]any{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret, "extra": 1}, "").wantError(400, payd.CodeInvalidParameter)
		if bad.str("errors.0.errorArgs.parameter") != "extra" {
			t.Errorf("unknown token field: %s", bad.body)
		}
		r := e.call("POST", "/v2/auth/token", map[string]any{"clientId": e.creds.ClientID, "clientSecret": e.creds.ClientSecret}, "").wantOK()
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
		// A test-pay's stored idempotent response carries the signature key.
		qr := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		b, _ := json.Marshal(map[string]any{"qrId": qr, "amount": 5, "currency": "MDL", "iban": payd.TestIBAN, "payerName": "P"})
		req, _ := http.NewRequest("POST", e.srv.URL+"/v2/instant/test-pay", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Idempotency-Key", "pay-once")
		if r := e.send(req); r.status != 200 || r.str("result.signatureKey") != e.creds.SignatureKey {
			t.Fatalf("test-pay: %d %s", r.status, r.body)
		}
		at := e.dbText()
		if strings.Contains(at, e.creds.ClientSecret) || strings.Contains(at, e.token) {
			t.Error("a client secret or an access token is stored in plain text")
		}
		if strings.Contains(at, e.creds.SignatureKey) {
			t.Error("a signature key is stored in plain text")
		}
		if strings.Count(at, "enc1:") < 2 {
			t.Error("the sealed key and response are not where the test expects them; it would not notice plain text")
		}
		if !strings.Contains(at, payd.HashSecret(e.creds.ClientSecret)) || !strings.Contains(at, payd.HashSecret(e.token)) {
			t.Error("the hashes are not where the test expects them; it would not notice plain text")
		}
	})
}

// TestTokenLockout: wrong secrets sent for a victim's clientId from
// another address cannot lock the victim out; one address is limited to 20
// requests a minute per clientId; past 100 failures a minute for one
// clientId a wrong secret answers 429 while the right one still works.
func TestTokenLockout(t *testing.T) {
	cfg := testConfig()
	cfg.TokenRateClient, cfg.TokenRateAddr = 20, 1000
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		from := func(ip string) *http.Client {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		}
		token := func(c *http.Client, secret string) int {
			b, _ := json.Marshal(map[string]string{"clientId": e.creds.ClientID, "clientSecret": secret})
			res, err := c.Post(e.srv.URL+"/v2/auth/token", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		attacker, victim := from("127.0.0.2"), from("127.0.0.1")
		for i := 0; i < 30; i++ {
			token(attacker, "wrong")
		}
		if s := token(victim, e.creds.ClientSecret); s != 200 {
			t.Fatalf("the victim's right secret after 30 wrong ones from elsewhere: %d", s)
		}
		// One address: 20 requests a minute for one clientId, the 21st is 429.
		third := from("127.0.0.3")
		for i := 1; i <= 20; i++ {
			if s := token(third, "wrong"); s != 401 {
				t.Fatalf("request %d from one address: %d", i, s)
			}
		}
		if s := token(third, "wrong"); s != 429 {
			t.Errorf("21st request for one clientId from one address: %d, want 429", s)
		}
		// Failures from many addresses: past 100 a minute, a wrong secret is 429, the right one still 200.
		fails := 20 + 20 // counted above: each address reached the secret check 20 times
		for ip := 4; fails < FailedTokenAttempts; ip++ {
			c := from("127.0.0." + strconv.Itoa(ip))
			for i := 0; i < 20 && fails < FailedTokenAttempts; i++ {
				if s := token(c, "wrong"); s != 401 {
					t.Fatalf("failure %d: %d", fails+1, s)
				}
				fails++
			}
		}
		if s := token(from("127.0.0.200"), "wrong"); s != 429 {
			t.Errorf("wrong secret past %d failures: %d, want 429", FailedTokenAttempts, s)
		}
		if s := token(from("127.0.0.201"), e.creds.ClientSecret); s != 200 {
			t.Errorf("right secret past %d failures: %d, want 200", FailedTokenAttempts, s)
		}
	})
}

// TestMetricsExposure: production does not serve /metrics on the public
// listener (the envelope 404); the sandbox does. The database gauges change
// only when refreshed in the background, never because of a scrape.
func TestMetricsExposure(t *testing.T) {
	prod := testConfig()
	prod.Sandbox = false
	forEachEngine(t, prod, func(t *testing.T, e *env) {
		e.call("GET", "/metrics", nil, "").wantError(404, payd.CodeNoRoute)
		e.call("GET", "/METRICS", nil, "").wantError(404, payd.CodeNoRoute)
	})
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(map[string]any{"callbackUrl": "http://127.0.0.1:1/cb"})
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK()
		for i := 0; i < 2; i++ {
			if m := e.call("GET", "/metrics", nil, ""); m.status != 200 || !strings.Contains(string(m.body), "payd_callbacks_pending 0") {
				t.Errorf("a scrape read the database: %s", m.body)
			}
		}
		if _, err := e.api.RefreshGauges(t.Context()); err != nil {
			t.Fatal(err)
		}
		if m := e.call("GET", "/metrics", nil, ""); strings.Contains(string(m.body), "payd_callbacks_pending 0") ||
			!strings.Contains(string(m.body), "payd_callbacks_pending ") {
			t.Errorf("after a refresh the gauge shows no pending callback: %s", m.body)
		}
	})
}

// TestRequestSchemasAreTyped: every request body of the contract is typed
// (properties or a $ref, never a bare object), and the schemas refuse what
// payd refuses for the basic reasons (a missing field, a wrong type).
func TestRequestSchemasAreTyped(t *testing.T) {
	doc, err := api.Doc()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			n++
			s := op.RequestBody.Value.Content.Get("application/json").Schema
			if s.Ref == "" && len(s.Value.Properties) == 0 {
				t.Errorf("%s %s: the request body is an untyped object", method, path)
			}
		}
	}
	if n < 12 {
		t.Errorf("only %d request bodies found", n)
	}
	router := contractRouter(t)
	check := func(path, body string) error {
		req, _ := http.NewRequest("POST", "http://127.0.0.1"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{Request: req, PathParams: params,
			Route: route, Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}})
	}
	good := map[string]string{
		"/v2/instant/qr":       `{"type":"Dynamic","amountType":"Fixed","amount":10.5,"currency":"MDL","description":"d","expiresAt":"2026-03-01T11:00:00Z"}`,
		"/v2/checkouts":        `{"amount":10,"currency":"MDL","orderInfo":{"items":[{"title":"t","quantity":2.5}]}}`,
		"/v2/instant/test-pay": `{"qrId":"01a1fd38-56fa-7f9d-ba9b-1038a64df444","amount":1,"iban":"MD88AG000000011621810140","currency":"MDL","payerName":"P"}`,
	}
	for path, body := range good {
		if err := check(path, body); err != nil {
			t.Errorf("%s %s refused: %v", path, body, err)
		}
	}
	bad := map[string]string{
		"/v2/instant/qr":       `{"amountType":"Fixed","amount":10,"currency":"MDL","description":"d"}`,
		"/v2/checkouts":        `{"amount":"10","currency":"MDL"}`,
		"/v2/instant/test-pay": `{"qrId":"x","amount":1.001,"iban":"MD88","currency":"EUR","payerName":"P"}`,
		"/v2/rtp":              `{"alias":"12","amount":0,"currency":"MDL","description":"d","expiresAt":"2026-03-01T11:00:00Z"}`,
	}
	for path, body := range bad {
		if err := check(path, body); err == nil {
			t.Errorf("%s %s accepted by the schema", path, body)
		}
	}
}

// TestRequestSchemasAreClosed: every object a request body may hold says
// additionalProperties: false, as payd enforces (fields.go), and the
// bodies the public clients send pass that check.
func TestRequestSchemasAreClosed(t *testing.T) {
	doc, err := api.Doc()
	if err != nil {
		t.Fatal(err)
	}
	var walk func(where string, s *openapi3.Schema)
	walk = func(where string, s *openapi3.Schema) {
		switch {
		case s.Type.Is("array") && s.Items != nil:
			walk(where+"[]", s.Items.Value)
		case s.Type.Is("object"):
			if h := s.AdditionalProperties.Has; h == nil || *h {
				t.Errorf("%s: an object of a request body without additionalProperties: false", where)
			}
			for name, p := range s.Properties {
				walk(where+"."+name, p.Value)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil {
				walk(method+" "+path, op.RequestBody.Value.Content.Get("application/json").Schema.Value)
			}
		}
	}
	// The bodies of the public clients (alexminza/maib-mia-sdk-{node,php,python},
	// maib-checkout-sdk-node, zerodaysoft/maib-sdk): every member they send is listed.
	rf := loadRequestFields()
	clients := map[string]string{
		"POST /v2/auth/token":                         `{"clientId":"a","clientSecret":"b"}`,
		"POST /v2/mia/qr":                             `{"type":"Dynamic","expiresAt":"x","amountType":"Fixed","amount":50,"amountMin":1,"amountMax":2,"currency":"MDL","orderId":"1","description":"d","callbackUrl":"u","redirectUrl":"u","terminalId":"t"}`,
		"POST /v2/mia/qr/hybrid":                      `{"amountType":"Fixed","currency":"MDL","terminalId":"P011111","extension":{"expiresAt":"x","amount":50,"amountMin":1,"amountMax":2,"description":"d","orderId":"1","callbackUrl":"u","redirectUrl":"u"}}`,
		"POST /v2/mia/qr/{qrId}/extension":            `{"expiresAt":"x","amount":100,"amountMin":1,"amountMax":2,"description":"d","orderId":"4","callbackUrl":"u","redirectUrl":"u"}`,
		"POST /v2/mia/qr/{qrId}/cancel":               `{"reason":"r"}`,
		"POST /v2/mia/qr/{qrId}/extension/cancel":     `{"reason":"r"}`,
		"POST /v2/mia/test-pay":                       `{"qrId":"q","amount":50,"currency":"MDL","iban":"i","payerName":"p"}`,
		"POST /v2/payments/{payId}/refund":            `{"amount":25,"reason":"r","callbackUrl":"u"}`,
		"POST /v2/mia/payments/{payId}/refund":        `{"amount":25,"reason":"r","callbackUrl":"u"}`,
		"POST /v2/rtp":                                `{"alias":"37369112221","amount":150,"expiresAt":"x","currency":"MDL","description":"d","orderId":"1","terminalId":"t","callbackUrl":"u","redirectUrl":"u"}`,
		"POST /v2/rtp/{id}/cancel":                    `{"reason":"r"}`,
		"POST /v2/rtp/{payId}/refund":                 `{"reason":"r"}`,
		"POST /v2/rtp/{id}/test-accept":               `{"amount":150,"currency":"MDL"}`,
		"POST /v2/checkouts":                          `{"amount":50.61,"currency":"MDL","orderInfo":{"id":"E","description":"d","date":"x","orderAmount":null,"orderCurrency":null,"deliveryAmount":null,"deliveryCurrency":null,"items":[{"externalId":"1","title":"P","amount":50.61,"currency":"MDL","quantity":3,"displayOrder":null}]},"payerInfo":{"name":"J","email":"e","phone":"p","ip":"i","userAgent":"u"},"language":"ro","callbackUrl":"u","successUrl":"u","failUrl":"u"}`,
		"POST /v2/instant/qr/{qrId}/extension/cancel": `{}`,
	}
	for route, body := range clients {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &fields); err != nil {
			t.Fatal(err)
		}
		rf.of(route).unknown(fields, "", func(p string) { t.Errorf("%s: the client's member %s is refused", route, p) })
	}
	if len(rf.of("POST /v2/checkouts/{id}/cancel").members) != 0 {
		t.Error("checkout cancel takes members")
	}
}

// TestTrustedProxies: behind a trusted proxy the per-address limit is per
// client (the right-most untrusted X-Forwarded-For entry), so one busy
// client does not lock out the others; without the setting, or from a
// peer that is not trusted, X-Forwarded-For is ignored (a client cannot
// spoof its way past the limit).
func TestTrustedProxies(t *testing.T) {
	token := func(e *env, xff ...string) int {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v2/auth/token", strings.NewReader(`{"clientId":"x","clientSecret":"y"}`))
		req.Header.Set("Content-Type", "application/json")
		for _, v := range xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	cfg := testConfig()
	cfg.TokenRateAddr = 5
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		// The client's own entries (left of what the proxies appended) do not count.
		for i := 0; i < 5; i++ {
			if s := token(e, "203.0.113."+strconv.Itoa(i)+", 198.51.100.1", "10.1.1.1"); s != 401 {
				t.Fatalf("request %d of client A: %d", i, s)
			}
		}
		if s := token(e, "198.51.100.1"); s != 429 {
			t.Errorf("client A past its limit: %d, want 429", s)
		}
		if s := token(e, "198.51.100.2"); s != 401 {
			t.Errorf("client B behind the same proxy: %d, want 401 (not limited)", s)
		}
		// Every hop trusted: the left-most is the client.
		if s := token(e, "10.9.9.9"); s != 401 {
			t.Errorf("a client inside the trusted range: %d", s)
		}
	})
	cfg.TrustedProxies = nil
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		for i := 0; i < 5; i++ {
			token(e, "198.51.100."+strconv.Itoa(i))
		}
		if s := token(e, "198.51.100.99"); s != 429 {
			t.Errorf("without trusted proxies X-Forwarded-For changed the limit: %d, want 429", s)
		}
	})
}

func TestClientAddr(t *testing.T) {
	s := &Server{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}}
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"10.0.0.5:1234", nil, "10.0.0.5"},
		{"10.0.0.5:1234", []string{"198.51.100.7"}, "198.51.100.7"},
		{"10.0.0.5:1234", []string{"1.1.1.1, 198.51.100.7, 10.0.0.9"}, "198.51.100.7"},
		{"10.0.0.5:1234", []string{"1.1.1.1", "198.51.100.7"}, "198.51.100.7"},
		{"10.0.0.5:1234", []string{"garbage, 198.51.100.7"}, "198.51.100.7"},
		{"10.0.0.5:1234", []string{"198.51.100.7, unknown"}, "10.0.0.5"},
		{"10.0.0.5:1234", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"10.0.0.5:1234", []string{"::ffff:198.51.100.8"}, "198.51.100.8"},
		{"[::1]:80", []string{"2001:db8::9"}, "2001:db8::9"},
		{"192.0.2.1:80", []string{"198.51.100.7"}, "192.0.2.1"}, // not a trusted peer
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := s.clientAddr(r); got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
}
