// Package web serves the pages a payer sees: the RTP page, and later the QR
// page and the hosted checkout. Pages are html/template with no external
// assets and no JavaScript needed, in Romanian, Russian or English. The
// unguessable id in the path is the access key; forms carry a
// double-submit CSRF token and cross-site posts are refused.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"payd"
	"payd/internal/i18n"
	"payd/internal/rails/sandbox"
	"payd/internal/sqlstore"
)

//go:embed templates
var templateFS embed.FS

// Config is what the pages need to know about the deployment.
type Config struct {
	Sandbox   bool
	PublicURL string
	// Payer is the sandbox's simulated network behind the simulator forms
	// (sandbox mode only; one is made when it is not given).
	Payer *sandbox.Payer
	// Gateway is the production card acquirer, whose own page takes the
	// card (nil: no cards in production); CardCallbackURL is where it
	// posts its outcomes.
	Gateway         payd.CardGateway
	CardCallbackURL string
}

// Pages is the hosted pages' handler.
type Pages struct {
	cfg Config
	// payer is the sandbox's simulated network behind the simulator forms;
	// nil in production, where those forms answer 404.
	payer *sandbox.Payer
	// cards authorizes card payments; nil when no acquirer is configured,
	// and then Card is not offered (production, for now).
	cards payd.CardAcquirer
	// gateway is a production acquirer with its own card page.
	gateway payd.CardGateway
	store   *sqlstore.Store
	clock   payd.Clock
	log     *slog.Logger
	tmpl    *template.Template
	mux     *http.ServeMux
}

// New builds the pages.
func New(cfg Config, store *sqlstore.Store, clock payd.Clock, log *slog.Logger) *Pages {
	p := &Pages{cfg: cfg, store: store, clock: clock, log: log, mux: http.NewServeMux()}
	if cfg.Sandbox {
		if p.payer = cfg.Payer; p.payer == nil {
			p.payer = sandbox.New(store)
		}
		p.cards = p.payer.Cards
	} else {
		p.gateway = cfg.Gateway
	}
	p.tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"money": func(m payd.Money) string { return m.String() },
		"deref": func(m *payd.Money) payd.Money { return *m },
		// lineTotal is an order item's price × quantity (nil without a price).
		"lineTotal": func(it payd.OrderItem) *payd.Money {
			if it.Amount == nil {
				return nil
			}
			total := *it.Amount
			if it.Quantity != nil {
				total = it.Quantity.Times(total)
			}
			return &total
		},
		"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":  func(t time.Time) string { return payd.FormatTime(t) },
	}).ParseFS(templateFS, "templates/*.html"))
	p.mux.HandleFunc("GET /rtp/{id}", p.rtpPage)
	p.mux.HandleFunc("POST /rtp/{id}/accept", p.rtpDecide)
	p.mux.HandleFunc("POST /rtp/{id}/reject", p.rtpDecide)
	p.mux.HandleFunc("GET /qr/{id}", p.qrImageOrPage)
	p.mux.HandleFunc("POST /qr/{id}/pay", p.qrPay)
	p.mux.HandleFunc("GET /checkout/{id}", p.checkoutPage)
	p.mux.HandleFunc("POST /checkout/{id}/method", p.checkoutMethod)
	p.mux.HandleFunc("POST /checkout/{id}/card", p.checkoutCard)
	p.mux.HandleFunc("GET /checkout/{id}/card/return", p.checkoutCardReturn)
	p.mux.HandleFunc("/", p.notFound)
	return p
}

// SecurityHeaders sets the headers every server-rendered page of payd
// carries; formAction is where its forms may post.
func SecurityHeaders(h http.Header, formAction string) {
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; form-action "+formAction+
		"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP serves a page with the security headers every page carries
// (forms may also post to the merchant's return URLs).
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SecurityHeaders(w.Header(), "'self' https: http:")
	// What changes here, the payer changed.
	p.mux.ServeHTTP(w, r.WithContext(payd.WithCause(r.Context(), payd.CausePayer)))
}

// timeOf is the time of merchantID: real time, or the sandbox's test
// clock when the merchant moved it.
func (p *Pages) timeOf(ctx context.Context, merchantID string) time.Time {
	now := p.clock.Now()
	if m, err := p.store.Merchant(ctx, merchantID); err == nil {
		return m.Now(now)
	}
	return now
}

// checkoutTime is the time of the merchant that owns checkout id.
func (p *Pages) checkoutTime(ctx context.Context, id string) time.Time {
	if c, err := p.store.Checkout(ctx, "", id, p.clock.Now()); err == nil {
		return p.timeOf(ctx, c.MerchantID)
	}
	return p.clock.Now()
}

// notFound is the styled 404 page, in the payer's language.
func (p *Pages) notFound(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusNotFound, "notfound.html", language(r), nil, "")
}

// failed answers a store error that is not a not-found: 503 with
// Retry-After while the database is out of reach (the payer may simply try
// again), else 500.
func (p *Pages) failed(w http.ResponseWriter, what string, err error) {
	if sqlstore.Unavailable(err) {
		p.log.Warn(what+": database unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		p.plain(w, http.StatusServiceUnavailable, "The service is briefly unavailable; please try again in a moment.")
		return
	}
	p.log.Error(what, "err", err)
	p.plain(w, http.StatusInternalServerError, "Internal error.")
}

func (p *Pages) plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}

// page is what every template gets.
type page struct {
	Lang    string
	T       map[string]string
	Langs   []string
	CSRF    string
	Sandbox bool
	Error   string
	Data    any
}

func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name, lang string, data any, errMsg string) {
	pg := page{Lang: lang, T: catalog.Texts(lang), Langs: i18n.Languages, CSRF: p.csrfToken(w, r), Sandbox: p.cfg.Sandbox, Error: errMsg, Data: data}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := p.tmpl.ExecuteTemplate(w, name, pg); err != nil {
		p.log.Error("render page", "page", name, "err", err)
	}
}

// language picks the page language: ?lang, then Accept-Language, then ro.
func language(r *http.Request) string { return catalog.Pick(r, r.URL.Query().Get("lang")) }

const csrfCookie = "payd_csrf"

// csrfToken returns the request's CSRF token, setting a new cookie when
// there is none. A form is accepted only when its field matches the cookie.
// The cookie is Secure when the pages are served over https: their public
// URL says so, also behind a TLS proxy that speaks plain HTTP to payd.
func (p *Pages) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	var b [16]byte
	rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.HasPrefix(p.cfg.PublicURL, "https://")})
	return tok
}

var errCSRF = errors.New("cross-site form post refused")

// checkForm parses a posted form and refuses cross-site posts: a foreign
// Origin or Sec-Fetch-Site, or a CSRF field that does not match the cookie.
func checkForm(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return errCSRF
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if host := strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://"); host != r.Host {
			return errCSRF
		}
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return err
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
		return errCSRF
	}
	return nil
}
