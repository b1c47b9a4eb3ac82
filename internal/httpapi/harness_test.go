package httpapi

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"payd"
	"payd/api"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
	"payd/internal/web"
)

// env is a real payd API on loopback over a real store, with a fake clock.
type env struct {
	t        testing.TB
	srv      *httptest.Server
	api      *Server
	store    *sqlstore.Store
	clock    *payd.FakeClock
	router   routers.Router
	merchant *payd.Merchant
	creds    *payd.Credentials
	token    string
	dbURL    string
}

// dbText returns every value stored in the database's payd tables, as
// text, so tests can check what is (not) kept at rest.
// db opens the env's database directly (closed with the test).
func (e *env) db() *sql.DB {
	e.t.Helper()
	driver, dsn := "sqlite", strings.TrimPrefix(e.dbURL, "sqlite:")
	if strings.HasPrefix(e.dbURL, "postgres") {
		driver, dsn = "pgx", e.dbURL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	return db
}

func (e *env) dbText() string {
	e.t.Helper()
	driver, dsn := "sqlite", strings.TrimPrefix(e.dbURL, "sqlite:")
	if strings.HasPrefix(e.dbURL, "postgres") {
		driver, dsn = "pgx", e.dbURL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, table := range []string{"merchants", "tokens", "rtps", "payments", "refunds", "callbacks", "callback_attempts", "qrs",
		"qr_extensions", "checkouts", "idempotency_keys", "rails_orders", "rails_inbox", "operator_sessions", "card_sessions"} {
		rows, err := db.Query("SELECT * FROM " + table)
		if err != nil {
			e.t.Fatalf("%s: %v", table, err)
		}
		lines, err := storetest.Values(rows)
		if err != nil {
			e.t.Fatalf("%s: %v", table, err)
		}
		for _, vals := range lines {
			for _, v := range vals {
				fmt.Fprintf(&b, "%v\n", v)
			}
		}
	}
	return b.String()
}

var contractRouter = func() func(t testing.TB) routers.Router {
	var r routers.Router
	return func(t testing.TB) routers.Router {
		if r != nil {
			return r
		}
		doc, err := api.Doc()
		if err != nil {
			t.Fatal(err)
		}
		doc2 := *doc
		doc2.Servers = nil
		if r, err = legacy.NewRouter(&doc2); err != nil {
			t.Fatal(err)
		}
		return r
	}
}()

// forEachEngine runs f against a fresh env on SQLite and, when configured,
// PostgreSQL.
func forEachEngine(t *testing.T, cfg Config, f func(t *testing.T, e *env)) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, dbURL string) {
		e := newEnv(t, s, cfg)
		e.dbURL = dbURL
		f(t, e)
	})
}

func testConfig() Config {
	// Tokens outlive the tests' clock jumps; TestAuthentication checks the default lifetime.
	return Config{Sandbox: true, AllowHTTPURLs: true, TokenRateClient: 10000, TokenRateAddr: 10000, PageRateAddr: 100000, RefundDelay: time.Second,
		TokenTTL: 1000 * 24 * time.Hour}
}

func newEnv(t testing.TB, s *sqlstore.Store, cfg Config) *env {
	t.Helper()
	clock := payd.NewFakeClock(storetest.Epoch)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{t: t, store: s, clock: clock, router: contractRouter(t)}
	e.srv = httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + e.srv.Listener.Addr().String()
	pages := web.New(web.Config{Sandbox: cfg.Sandbox, PublicURL: cfg.PublicURL}, s, clock, log)
	e.api = New(cfg, s, clock, log, pages)
	e.srv.Config.Handler = e.api
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.merchant, e.creds, e.token = e.newMerchant(0)
	return e
}

// newMerchant provisions a merchant with the given commission and returns
// it with a valid token.
func (e *env) newMerchant(rate int) (*payd.Merchant, *payd.Credentials, string) {
	e.t.Helper()
	c, err := e.store.CreateMerchant(context.Background(), sqlstore.MerchantOptions{Name: "Test shop", CommissionBP: rate, IBAN: "MD24AG000225100013104168"}, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := e.store.Merchant(context.Background(), c.MerchantID)
	if err != nil {
		e.t.Fatal(err)
	}
	r := e.call("POST", "/v2/auth/token", map[string]string{"clientId": c.ClientID, "clientSecret": c.ClientSecret}, "")
	r.wantOK()
	return m, c, r.str("result.accessToken")
}

// resp is a response with its decoded JSON.
type resp struct {
	t      testing.TB
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// call sends a JSON request (body may be nil, a string sent as is, or a
// value to marshal) with the given token ("" for none).
func (e *env) call(method, path string, body any, token string) *resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

// as calls with the env's merchant token.
func (e *env) as(method, path string, body any) *resp {
	e.t.Helper()
	return e.call(method, path, body, e.token)
}

func (e *env) send(req *http.Request) *resp {
	e.t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := &resp{t: e.t, status: res.StatusCode, header: res.Header, body: b}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.json); err != nil {
			e.t.Fatalf("%s %s: response is not JSON: %s", req.Method, req.URL.Path, b)
		}
	}
	e.validate(req, reqBody, r)
	return r
}

// validate checks the response against api/openapi.yaml. Paths the
// contract does not know (unknown routes, pages) must still be envelopes
// when they are under /v2.
//
// A request payd accepted (200) must match the contract's request schema
// too, so the typed request schemas are never stricter than payd (and
// generated clients can send what payd takes).
func (e *env) validate(req *http.Request, reqBody []byte, r *resp) {
	e.t.Helper()
	if strings.HasPrefix(req.URL.Path, "/v2") || req.URL.Path == "/healthz" || req.URL.Path == "/readyz" {
		ct := r.header.Get("Content-Type")
		csv := r.status == 200 && req.URL.Query().Get("format") == "csv" && ct == "text/csv; charset=utf-8" // a report asked for as CSV
		if ct != "application/json; charset=utf-8" && !csv {
			e.t.Errorf("%s %s: Content-Type %q", req.Method, req.URL.Path, ct)
		}
		if r.header.Get("X-Request-Id") == "" {
			e.t.Errorf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
		}
		ok, _ := r.json["ok"].(bool)
		if !csv && ok != (r.status == 200) {
			e.t.Errorf("%s %s: status %d with ok=%v", req.Method, req.URL.Path, r.status, ok)
		}
	}
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		return // not in the contract: unknown routes and pages
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 r.status,
		Header:                 r.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		e.t.Errorf("%s %s → %d does not match api/openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, r.status, err, r.body)
	}
	if r.status == http.StatusOK && req.Method == http.MethodGet && route.Path == "/v2/callbacks/{id}" {
		if err := callbackBodyError(r.str("result.event"), []byte(r.str("result.body"))); err != nil {
			e.t.Errorf("callback %s: %v", req.URL.Path, err)
		}
	}
	if r.status == http.StatusOK && req.Method == http.MethodPost && len(bytes.TrimSpace(reqBody)) > 0 {
		vreq := req.Clone(context.Background())
		vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
		rin := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateRequest(context.Background(), rin); err != nil {
			e.t.Errorf("POST %s was accepted by payd but its body does not match the request schema of api/openapi.yaml: %v\nbody: %s",
				req.URL.Path, err, reqBody)
		}
	}
}

// get walks a dotted path ("result.items.0.rtpId") through the JSON.
func (r *resp) get(path string) any {
	var v any = r.json
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := 0
			for _, c := range k {
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (r *resp) str(path string) string {
	s, _ := r.get(path).(string)
	return s
}

func (r *resp) num(path string) float64 {
	f, _ := r.get(path).(float64)
	return f
}

func (r *resp) wantOK() *resp {
	r.t.Helper()
	if r.status != 200 || r.json["ok"] != true {
		r.t.Fatalf("want 200 ok, got %d: %s", r.status, r.body)
	}
	return r
}

// wantError checks the status and the first error's code.
func (r *resp) wantError(status int, code string) *resp {
	r.t.Helper()
	if r.status != status || r.str("errors.0.errorCode") != code {
		r.t.Errorf("want %d %s, got %d: %s", status, code, r.status, r.body)
	}
	return r
}

// codes lists the error codes of a failure.
func (r *resp) codes() []string {
	var out []string
	errs, _ := r.json["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		out = append(out, m["errorCode"].(string))
	}
	return out
}

// paramsOf is the sorted errorArgs.parameter of every error item.
func paramsOf(r *resp) []string {
	var out []string
	errs, _ := r.json["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		args, _ := m["errorArgs"].(map[string]any)
		p, _ := args["parameter"].(string)
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func newReq(method, url, body string) *http.Request {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	return req
}
