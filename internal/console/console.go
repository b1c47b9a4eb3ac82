// Package console serves the merchant's console at /console: sign in with
// the API credentials, see every object with its timeline, every callback
// with its attempts, and (in the sandbox) act as payers and move the test
// clock. Lists, details and actions go through the merchant API in
// process, so the console shows and does exactly what the API does; only
// the timelines' state changes and the overview's counts read the store.
package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"payd"
	"payd/internal/i18n"
	"payd/internal/sqlstore"
	"payd/internal/web"
)

//go:embed templates
var templateFS embed.FS

// Config is what the console needs to know about its deployment.
type Config struct {
	Sandbox    bool
	PublicURL  string        // https makes the session cookie Secure
	SessionTTL time.Duration // default 8 hours
}

// Console is the /console handler.
type Console struct {
	cfg   Config
	api   http.Handler
	store *sqlstore.Store
	clock payd.Clock
	log   *slog.Logger
	tmpl  map[string]*template.Template // by language
	mux   *http.ServeMux
}

const (
	sessionCookie = "payd_console"
	signinCookie  = "payd_console_signin" // the sign-in form's CSRF token
	flashCookie   = "payd_console_flash"
)

// New builds the console over api, the merchant API it calls in process.
func New(cfg Config, api http.Handler, store *sqlstore.Store, clock payd.Clock, log *slog.Logger) *Console {
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	c := &Console{cfg: cfg, api: api, store: store, clock: clock, log: log, mux: http.NewServeMux()}
	c.tmpl = map[string]*template.Template{}
	for _, lang := range i18n.Languages {
		c.tmpl[lang] = template.Must(template.New("").Funcs(funcs(lang)).ParseFS(templateFS, "templates/*.html"))
	}
	m := c.mux
	m.HandleFunc("GET /console/signin", c.signinPage)
	m.HandleFunc("POST /console/signin", c.signin)
	m.HandleFunc("POST /console/signout", c.signedIn(c.signout))
	m.HandleFunc("GET /console", c.signedIn(c.overview))
	m.HandleFunc("GET /console/{$}", c.signedIn(c.overview))
	m.HandleFunc("POST /console/clock", c.signedIn(c.advanceClock))
	m.HandleFunc("POST /console/clock/reset", c.signedIn(c.resetClock))
	m.HandleFunc("GET /console/search", c.signedIn(c.search))
	m.HandleFunc("GET /console/export", c.signedIn(c.exportPage))
	m.HandleFunc("GET /console/export/payments.csv", c.signedIn(c.exportPayments))
	m.HandleFunc("GET /console/export/refunds.csv", c.signedIn(c.exportRefunds))
	m.HandleFunc("GET /console/settlement", c.signedIn(c.settlement))
	m.HandleFunc("GET /console/settlement.csv", c.signedIn(c.settlementCSV))
	m.HandleFunc("GET /console/operator", c.operatorPage)
	m.HandleFunc("POST /console/operator", c.operatorSignin)
	m.HandleFunc("POST /console/operator/signout", c.operatorSignout)
	m.HandleFunc("POST /console/operator/explain", c.operatorExplain)
	m.HandleFunc("POST /console/operator/match", c.operatorMatch)
	m.HandleFunc("GET /console/operator/export", c.operatorExport)
	m.HandleFunc("GET /console/{kind}", c.signedIn(c.list))
	m.HandleFunc("GET /console/{kind}/{id}", c.signedIn(c.detail))
	m.HandleFunc("POST /console/{kind}/{id}/{action}", c.signedIn(c.act))
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) { c.notFound(w, r, nil) })
	return c
}

// ServeHTTP serves a console page with the hosted pages' security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	web.SecurityHeaders(w.Header(), "'self'")
	c.mux.ServeHTTP(w, r)
}

// session is a signed-in merchant: the access token in its cookie.
type session struct {
	token string
	csrf  string // its forms' token (formToken)
	m     *payd.Merchant
}

// Merchant is the signed-in merchant's name.
func (s *session) Merchant() string { return s.m.Name }

// TokenPrefix starts every console session token. The API takes such a
// token only from the console's own in-process calls (InProcess): the
// session cookie is no bearer token for the API.
const TokenPrefix = "console."

// OperatorPrefix starts every operator session token of the console
// (reports.go): the API takes one in place of the operator's token, from
// the console in process only.
const OperatorPrefix = TokenPrefix + "operator."

type inProcessKey struct{}

// InProcess reports whether a request is one the console sends to the API
// in process.
func InProcess(ctx context.Context) bool { v, _ := ctx.Value(inProcessKey{}).(bool); return v }

// formToken is a session's CSRF token: a tag under the deployment's key of
// the session token, which only the cookie holds, so that it is bound to
// the session on the server (nobody without the key can make one, and a
// cookie alone does not pass).
func (c *Console) formToken(token string) string { return c.store.Tag("console form", token) }

// signinToken is the sign-in form's CSRF token: a nonce (also set as a
// cookie) with its expiry, tagged under the deployment's key. The server
// checks the tag and the expiry, and the cookie's nonce: a token it did
// not issue, or one for another browser, does not pass.
func (c *Console) signinToken(nonce string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return nonce + "." + exp + "." + c.store.Tag("console sign-in", nonce, exp)
}

func (c *Console) validSigninToken(tok, cookieNonce string, now time.Time) bool {
	nonce, rest, _ := strings.Cut(tok, ".")
	exp, _, _ := strings.Cut(rest, ".")
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || nonce == "" || now.Unix() > secs {
		return false
	}
	want := c.signinToken(nonce, time.Unix(secs, 0))
	return subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 && subtle.ConstantTimeCompare([]byte(nonce), []byte(cookieNonce)) == 1
}

func (c *Console) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/console", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: strings.HasPrefix(c.cfg.PublicURL, "https://"), MaxAge: maxAge}
}

// signedIn runs h for a signed-in merchant, checking the CSRF token of a
// POST; anyone else is sent to the sign-in form.
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		var m *payd.Merchant
		if err == nil && !strings.HasPrefix(ck.Value, TokenPrefix) {
			err = http.ErrNoCookie // not a session (an API token set by hand)
		}
		if err == nil {
			m, err = c.store.Authenticate(r.Context(), ck.Value, c.clock.Now())
		}
		if err != nil {
			if !errors.Is(err, http.ErrNoCookie) && !errors.Is(err, payd.ErrNotFound) {
				c.fail(w, err)
				return
			}
			http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
			return
		}
		s := &session{token: ck.Value, csrf: c.formToken(ck.Value), m: m}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) || r.ParseForm() != nil ||
				subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				c.render(w, r, http.StatusForbidden, "message.html", s, map[string]any{"Message": c.tr(r, "forbidden")})
				return
			}
		}
		h(w, r, s)
	}
}

// sameOrigin refuses what a browser marks as a cross-site post.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://") == r.Host
	}
	return true
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	c.renderSignin(w, r, http.StatusOK, "", "")
}

func (c *Console) renderSignin(w http.ResponseWriter, r *http.Request, status int, clientID, msg string) {
	nonce := randomToken()
	http.SetCookie(w, c.cookie(signinCookie, nonce, 3600))
	tok := c.signinToken(nonce, c.clock.Now().Add(time.Hour))
	c.render(w, r, status, "signin.html", nil, map[string]any{"CSRF": tok, "ClientID": clientID, "Error": msg})
}

// signin checks the credentials through the API's token endpoint (with
// its rate limits per address, per clientId and address, and per clientId
// for failures), then issues the session's own, longer-lived token.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(signinCookie)
	if !sameOrigin(r) || r.ParseForm() != nil || err != nil || !c.validSigninToken(r.PostForm.Get("csrf"), ck.Value, c.clock.Now()) {
		c.renderSignin(w, r, http.StatusForbidden, "", c.tr(r, "forbidden"))
		return
	}
	clientID := strings.TrimSpace(r.PostForm.Get("clientId"))
	res := c.call(r, "", http.MethodPost, "/v2/auth/token",
		map[string]string{"clientId": clientID, "clientSecret": r.PostForm.Get("clientSecret")})
	if !res.ok() {
		status, msg := http.StatusUnauthorized, c.tr(r, "signin.failed")
		if res.Status == http.StatusTooManyRequests {
			status, msg = http.StatusTooManyRequests, c.tr(r, "signin.limited")
			if ra := res.Header.Get("Retry-After"); ra != "" {
				w.Header().Set("Retry-After", ra)
			}
		} else if res.Status >= 500 {
			status, msg = res.Status, res.message()
		}
		c.renderSignin(w, r, status, clientID, msg)
		return
	}
	short := str(field(res.Result, "accessToken"))
	now := c.clock.Now()
	m, err := c.store.Authenticate(r.Context(), short, now)
	if err != nil {
		c.fail(w, err)
		return
	}
	tok, err := c.store.IssuePrefixedToken(r.Context(), TokenPrefix, m, c.cfg.SessionTTL, now)
	if err != nil {
		c.fail(w, err)
		return
	}
	if err := c.store.RevokeToken(r.Context(), short); err != nil {
		c.log.Warn("console: revoke sign-in token", "err", err)
	}
	http.SetCookie(w, c.cookie(signinCookie, "", -1))
	http.SetCookie(w, c.cookie(sessionCookie, tok, int(c.cfg.SessionTTL/time.Second)))
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.store.RevokeToken(r.Context(), s.token); err != nil {
		c.fail(w, err)
		return
	}
	http.SetCookie(w, c.cookie(sessionCookie, "", -1))
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

// flash leaves a message for the next page the browser shows.
// flash is the message the next page shows once: a success, or a refusal
// (shown as an error, never in the success banner).
type flash struct {
	Msg string
	OK  bool
}

func (c *Console) flash(w http.ResponseWriter, f flash) {
	kind := "e"
	if f.OK {
		kind = "o"
	}
	http.SetCookie(w, c.cookie(flashCookie, base64.RawURLEncoding.EncodeToString([]byte(kind+f.Msg)), 60))
}

func (c *Console) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, c.cookie(flashCookie, "", -1))
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) < 2 || len(b) > 1000 {
		return nil
	}
	return &flash{Msg: string(b[1:]), OK: b[0] == 'o'}
}

// apiResult is an in-process API answer.
type apiResult struct {
	Status int
	Header http.Header
	OK     bool `json:"ok"`
	Result any  `json:"result"`
	Errors []struct {
		Code    string `json:"errorCode"`
		Message string `json:"errorMessage"`
	} `json:"errors"`
}

func (a *apiResult) ok() bool { return a.Status == http.StatusOK && a.OK }

func (a *apiResult) message() string {
	var msgs []string
	for _, e := range a.Errors {
		msgs = append(msgs, e.Message)
	}
	if len(msgs) == 0 {
		return http.StatusText(a.Status)
	}
	return strings.Join(msgs, " ")
}

// recorder keeps an in-process answer.
type recorder struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(b)
}

// serve sends one request in process, from the browser's address, and
// keeps the answer; prepare adds headers and cookies.
func (c *Console) serve(r *http.Request, method, path string, body []byte, prepare func(*http.Request)) *recorder {
	w := &recorder{h: http.Header{}}
	req, err := http.NewRequestWithContext(context.WithValue(r.Context(), inProcessKey{}, true), method, path, bytes.NewReader(body))
	if err != nil {
		w.status = http.StatusBadRequest
		return w
	}
	req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
	prepare(req)
	c.api.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w
}

// call sends one request to the merchant API in process, with the
// session's token ("" for none).
func (c *Console) call(r *http.Request, token, method, path string, body any) *apiResult {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	w := c.serve(r, method, path, b, func(req *http.Request) {
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	})
	res := &apiResult{Header: w.h}
	if err := json.Unmarshal(w.buf.Bytes(), res); err != nil {
		res.OK = false
	}
	res.Status = w.status
	return res
}

// page is what every signed-in template gets.
type page struct {
	S       *session
	CSRF    string
	Sandbox bool
	Now     time.Time
	Offset  string
	Flash   *flash
	Active  string
	Path    string // where a clock form returns to
	Lang    string
	Langs   []string
	Query   string // the search box's text
	Data    map[string]any
}

// langOf is the request's language (see language).
func (c *Console) langOf(w http.ResponseWriter, r *http.Request) string {
	return language(w, r, c.cookie)
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, s *session, data map[string]any) {
	active := r.PathValue("kind")
	if active == "" {
		active = strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/console/")
		if active == "/console" || active == r.URL.Path {
			active = ""
		}
	}
	pg := page{Sandbox: c.cfg.Sandbox, Data: data, Active: active, Path: r.URL.RequestURI(), Lang: c.langOf(w, r), Langs: i18n.Languages,
		Query: r.URL.Query().Get("q")}
	if s != nil {
		pg.S, pg.CSRF, pg.Now, pg.Flash = s, s.csrf, s.m.Now(c.clock.Now()), c.takeFlash(w, r)
		if s.m.ClockOffset > 0 {
			pg.Offset = s.m.ClockOffset.String()
		}
	}
	var buf bytes.Buffer
	if err := c.tmpl[pg.Lang].ExecuteTemplate(&buf, name, pg); err != nil {
		c.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, http.StatusNotFound, "message.html", s, map[string]any{"Message": c.tr(r, "notfound")})
}

func (c *Console) fail(w http.ResponseWriter, err error) {
	if sqlstore.Unavailable(err) {
		c.log.Warn("console: database unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "The service is briefly unavailable; please try again in a moment.", http.StatusServiceUnavailable)
		return
	}
	c.log.Error("console", "err", err)
	http.Error(w, "Internal error.", http.StatusInternalServerError)
}

// back returns the browser to the page it acted on, with the outcome.
func (c *Console) back(w http.ResponseWriter, r *http.Request, to string, f flash) {
	c.flash(w, f)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// field reads key from a decoded JSON object.
func field(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

// fieldPath reads a dotted path of keys ("order.id") from a decoded JSON
// object.
func fieldPath(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		v = field(v, k)
	}
	return v
}

// str shows a decoded JSON value: numbers without exponent, null as "".
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		b, _ := json.Marshal(x)
		return string(b)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func prettyJSON(s string) string {
	var out bytes.Buffer
	if json.Indent(&out, []byte(s), "", "  ") != nil {
		return s
	}
	return out.String()
}
