// Package httpapi serves payd's merchant API: the /v2 routes of the
// contract, each answering with the envelope of spec §0.4, plus the
// operations endpoints. Handlers read the request, call the store and the
// domain, and map the result to a wire type; the rules live in package payd.
package httpapi

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"payd"
	"payd/internal/console"
	"payd/internal/rails/sandbox"
	"payd/internal/sqlstore"
)

// Config is what the API needs to know about its deployment.
type Config struct {
	Sandbox         bool
	PublicURL       string // base of every issued URL, without a trailing slash
	TokenTTL        time.Duration
	MaxBodyBytes    int64
	AllowHTTPURLs   bool
	TokenRateClient int // token requests per minute per clientId
	TokenRateAddr   int // token requests per minute per source address
	PageRateAddr    int // payer page requests per minute per source address (default 600)
	RefundDelay     time.Duration
	CheckoutLife    time.Duration // checkout expiresAt = createdAt + this
	Currencies      []string      // accepted checkout currencies
	Version         string
	MaxInFlight     int           // API requests served at once; more wait (default 64)
	QueueLength     int           // requests that may wait for a slot (default 1024)
	QueueWait       time.Duration // how long one may wait before 503 90009 (default 2s)
	// AccessLog writes the access lines straight into the log's writer
	// (accesslog.go); nil: through the logger.
	AccessLog *AccessLog
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (client.go).
	TrustedProxies []netip.Prefix
	// Payer is the sandbox's simulated network behind the test endpoints
	// (sandbox mode only; one is made when it is not given).
	Payer *sandbox.Payer
	// OperatorToken is the bearer token of the operator's reports
	// (PAYD_OPERATOR_TOKEN); "": those reports answer 401. Kept only as
	// its hash.
	OperatorToken string
	// StatementDeadline is how long after midnight in the bank's time zone
	// the day before's end-of-day statement is due (default 6 h).
	StatementDeadline time.Duration
}

// Defaults fills the zero fields of c with the contract's defaults.
func (c Config) Defaults() Config {
	if c.PublicURL == "" {
		c.PublicURL = "http://127.0.0.1:8080"
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.TokenTTL == 0 {
		c.TokenTTL = 300 * time.Second
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.TokenRateClient == 0 {
		c.TokenRateClient = 20
	}
	if c.TokenRateAddr == 0 {
		c.TokenRateAddr = 60
	}
	if c.PageRateAddr == 0 {
		c.PageRateAddr = 600
	}
	if c.RefundDelay == 0 {
		c.RefundDelay = time.Second
	}
	if c.CheckoutLife == 0 {
		c.CheckoutLife = payd.DefaultCheckoutLifetime
	}
	if len(c.Currencies) == 0 {
		c.Currencies = []string{"MDL"}
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 64
	}
	if c.QueueLength == 0 {
		c.QueueLength = 1024
	}
	if c.QueueWait == 0 {
		c.QueueWait = 2 * time.Second
	}
	if c.StatementDeadline == 0 {
		c.StatementDeadline = 6 * time.Hour
	}
	return c
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	store   *sqlstore.Store
	clock   payd.Clock
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	limits  *tokenLimits
	fields  requestFields // the members each request body may have
	admit   *admission
	handler http.Handler
	// payer is the sandbox's simulated network behind the test endpoints;
	// nil in production, where those endpoints answer 403.
	payer *sandbox.Payer
	// operatorHash is the SHA-256 of the operator's token; nil when none.
	operatorHash []byte
}

// New builds the API over store. pages, when not nil, serves the hosted
// pages (every path outside /v2 and the operations endpoints).
func New(cfg Config, store *sqlstore.Store, clock payd.Clock, log *slog.Logger, pages http.Handler) *Server {
	s := &Server{
		cfg: cfg.Defaults(), store: store, clock: clock, log: log,
		metrics: newMetrics(), mux: http.NewServeMux(), fields: loadRequestFields(),
	}
	if s.cfg.Sandbox {
		if s.payer = s.cfg.Payer; s.payer == nil {
			s.payer = sandbox.New(store)
		}
	}
	if s.cfg.OperatorToken != "" {
		h := sha256.Sum256([]byte(s.cfg.OperatorToken))
		s.operatorHash, s.cfg.OperatorToken = h[:], ""
	}
	s.limits = newTokenLimits(s.cfg.TokenRateClient, s.cfg.TokenRateAddr, s.cfg.PageRateAddr)
	s.admit = newAdmission(s.cfg.MaxInFlight, s.cfg.QueueLength, s.cfg.QueueWait)
	s.metrics.registerStore(store, clock, s.cfg.StatementDeadline)
	// The console calls the API in process, past the access log and
	// metrics its own request already went through.
	cons := console.New(console.Config{Sandbox: s.cfg.Sandbox, PublicURL: s.cfg.PublicURL}, s.mux, store, clock, log)
	s.routes(pages, cons)
	s.handler = s.observe(s.mux)
	return s
}

// Mount serves h at pattern on the main listener, behind the same request
// id, access log and recovery as the API (the rails' inbound endpoint).
// Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// URLs is the rule set for merchant URLs in this deployment.
func (s *Server) urls() payd.URLRules { return payd.URLRules{AllowHTTP: s.cfg.AllowHTTPURLs} }

// call is one API request on its way through a handler.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	m    *payd.Merchant
	a    area
	body []byte
	now  time.Time
}

// routeOpts say which checks run before a handler.
type routeOpts struct {
	public      bool // no bearer token (the token endpoint)
	operator    bool // the operator's token, not a merchant's
	sandboxOnly bool
	preBody     func(*call) error // runs before the body is read (rate limits)
}

// api wraps a handler with the checks of spec §0.9, in their order:
// authentication, sandbox-only, merchant active, rate limit, body size,
// media type. The handler does the rest (JSON, path ids, validation,
// existence, state).
func (s *Server) api(a area, o routeOpts, h func(*call) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.admit.enter(r.Context()); err != nil {
			fail(w, r, s.log, err)
			return
		}
		defer s.admit.leave()
		c := &call{s: s, w: w, r: r, a: a, now: s.clock.Now()}
		if err := c.run(o, h); err != nil {
			if errors.Is(err, payd.ErrNotFound) {
				err = payd.E(payd.CodeInternal) // a handler forgot to map it; never leak
			}
			if c.m != nil && c.m.HasClock() {
				err = clockNote(err, c.m.ClockOffset, c.now)
			}
			fail(w, c.r, s.log, err)
		}
	})
}

func (c *call) run(o routeOpts, h func(*call) error) error {
	if o.operator {
		if err := c.s.operatorToken(c.r, c.now); err != nil {
			return err
		}
	} else if !o.public {
		m, err := c.s.authenticate(c.r, c.now)
		if err != nil {
			return err
		}
		c.m = m
		*c.r = *c.r.WithContext(contextWithMerchant(c.r.Context(), m))
		if c.s.cfg.Sandbox {
			c.now = m.Now(c.now) // the merchant's test clock
		}
		if o.sandboxOnly && !c.s.cfg.Sandbox {
			return payd.E(payd.CodeSandboxOnly)
		}
		if !m.Active {
			return payd.E(c.a.inactive)
		}
	}
	if o.preBody != nil {
		if err := o.preBody(c); err != nil {
			return err
		}
	}
	if c.r.Method == http.MethodPost {
		b, err := readBody(c.r, c.s.cfg.MaxBodyBytes)
		if err != nil {
			return err
		}
		c.body = b
	}
	return c.idempotent(h)
}

// object parses the JSON body (see parseObject). A member the route's
// request schema does not have is a field error (reported with the
// others by the object's err).
func (c *call) object(required bool) (*object, error) {
	o, err := parseObject(c.a, c.body, required)
	if err != nil {
		return nil, err
	}
	c.s.fields.of(c.r.Pattern).unknown(o.fields, "", func(path string) {
		o.unknown = true
		o.fail(c.a.invalidField(path, "is not a field of this request"))
	})
	return o, nil
}

// noBody checks the body of a route that takes none: empty, or an object
// without members.
func (c *call) noBody() error {
	o, err := c.object(false)
	if err != nil {
		return err
	}
	return o.err(nil)
}

// pathID reads a GUID path value; anything else is the area's 404.
func (c *call) pathID(name string) (string, error) {
	raw := c.r.PathValue(name)
	id, ok := payd.ParseID(raw)
	if !ok {
		return "", c.a.notFound(raw)
	}
	return id, nil
}

// notFound maps a store's ErrNotFound to the area's not-found error for id.
func (c *call) notFound(err error, id string) error {
	if errors.Is(err, payd.ErrNotFound) {
		return c.a.notFound(id)
	}
	return err
}

func (c *call) respond(v any) error { return respond(c.w, v) }
