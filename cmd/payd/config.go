package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd/internal/network"
	"payd/internal/rails/sandbox"
	"payd/internal/worker"
)

var errUsage = errors.New("usage")

// config is every setting of the service.
type config struct {
	Addr             string
	DatabaseURL      string
	Mode             string
	PublicURL        string
	TokenTTL         time.Duration
	MaxBodyBytes     int64
	AllowHTTPURLs    bool
	CallbackSchedule []time.Duration
	CallbackLease    time.Duration
	CallbackPerHost  int
	TokenRateClient  int
	TokenRateAddr    int
	PageRateAddr     int
	// BankLocation is the bank's time zone (PAYD_BANK_TIMEZONE), whose
	// calendar booking dates are in.
	BankLocation      *time.Location
	StatementDeadline time.Duration
	RefundDelay       time.Duration
	MaxInFlight       int
	QueueWait         time.Duration
	QRInactivity      time.Duration
	CheckoutLife      time.Duration
	Currencies        []string
	LogFormat         string
	PprofAddr         string
	MetricsAddr       string
	Retention         time.Duration
	SecretKey         string
	Instance          string
	Rails             string // sandbox, or a registered rails network's name (internal/network)
	OperatorToken     string
	CardAcquirer      string // "" (no cards in production) or a registered acquirer's name
	// Net holds every registered network's settings, by flag name.
	Net            network.Values
	CallbackAllow  []netip.Prefix
	TrustedProxies []netip.Prefix
}

func (c *config) sandbox() bool { return c.Mode == "sandbox" }

// setting is one configuration value: a flag and its PAYD_ variable.
type setting struct {
	flag, env, def, help string
	apply                func(c *config, v string) error
}

var settings = []setting{
	{"addr", "PAYD_ADDR", "127.0.0.1:8080", "address to listen on", func(c *config, v string) error { c.Addr = v; return nil }},
	{"database-url", "PAYD_DATABASE_URL", "sqlite:data/payd.db", "postgres://… or a SQLite file (sqlite:PATH or a path)", func(c *config, v string) error {
		if err := checkDatabaseURL(v); err != nil {
			return err
		}
		c.DatabaseURL = v
		return nil
	}},
	{"mode", "PAYD_MODE", "sandbox", "sandbox or production", func(c *config, v string) error {
		if v != "sandbox" && v != "production" {
			return fmt.Errorf("mode must be sandbox or production, not %q", v)
		}
		c.Mode = v
		return nil
	}},
	{"public-url", "PAYD_PUBLIC_URL", "", "base of every URL payd hands out (default http://ADDR)", func(c *config, v string) error { c.PublicURL = v; return nil }},
	{"token-ttl", "PAYD_TOKEN_TTL", "300s", "access token lifetime", durationSetting(func(c *config) *time.Duration { return &c.TokenTTL })},
	{"max-body-bytes", "PAYD_MAX_BODY_BYTES", "1048576", "request body limit", func(c *config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 {
			return fmt.Errorf("max body bytes must be an integer ≥ 1024")
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{"allow-http-urls", "PAYD_ALLOW_HTTP_URLS", "", "accept http:// merchant URLs (default: true in sandbox)", func(c *config, v string) error {
		if v == "" {
			c.AllowHTTPURLs = c.sandbox()
			return nil
		}
		b, err := strconv.ParseBool(v)
		c.AllowHTTPURLs = b
		return err
	}},
	{"callback-schedule", "PAYD_CALLBACK_SCHEDULE", "10s,60s,300s,600s,3600s,43200s,86400s", "callback redelivery delays", func(c *config, v string) error {
		c.CallbackSchedule = nil
		for _, p := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(p))
			if err != nil || d <= 0 {
				return fmt.Errorf("callback schedule: bad delay %q", p)
			}
			c.CallbackSchedule = append(c.CallbackSchedule, d)
		}
		return nil
	}},
	{"callback-allow", "PAYD_CALLBACK_ALLOW", "", "address ranges (CIDR, comma-separated) callbacks may reach even in production, e.g. the operator's own network",
		prefixesSetting(func(c *config) *[]netip.Prefix { return &c.CallbackAllow })},
	{"trusted-proxies", "PAYD_TRUSTED_PROXIES", "", "the reverse proxies (CIDR, comma-separated) whose X-Forwarded-For names the client: rate limits and logs use that address",
		prefixesSetting(func(c *config) *[]netip.Prefix { return &c.TrustedProxies })},
	{"callback-lease", "PAYD_CALLBACK_LEASE", "30s", "how long an instance holds a claimed callback before another may take it", durationSetting(func(c *config) *time.Duration { return &c.CallbackLease })},
	{"callback-per-host", "PAYD_CALLBACK_PER_HOST", "32", "callback attempts one instance has in flight to one host (scheme, host and port) at once, 1 to 256; past it, that host's callbacks wait for one of its attempts to end", func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > worker.DeliveryLoops*worker.DeliveryParallel {
			return fmt.Errorf("callback per host: %q is not a number from 1 to %d", v, worker.DeliveryLoops*worker.DeliveryParallel)
		}
		c.CallbackPerHost = n
		return nil
	}},
	{"token-rate-client", "PAYD_TOKEN_RATE_CLIENT", "20", "token requests per minute per clientId and source address", intSetting(func(c *config) *int { return &c.TokenRateClient })},
	{"token-rate-addr", "PAYD_TOKEN_RATE_ADDR", "60", "token requests per minute per source address", intSetting(func(c *config) *int { return &c.TokenRateAddr })},
	{"page-rate-addr", "PAYD_PAGE_RATE_ADDR", "600", "payer page requests per minute per source address (an IPv6 client's /64)", intSetting(func(c *config) *int { return &c.PageRateAddr })},
	{"refund-delay", "PAYD_REFUND_DELAY", "1s", "sandbox refund processing time", durationSetting(func(c *config) *time.Duration { return &c.RefundDelay })},
	{"max-in-flight", "PAYD_MAX_IN_FLIGHT", "64", "API requests served at once; more wait in a bounded queue", intSetting(func(c *config) *int { return &c.MaxInFlight })},
	{"queue-wait", "PAYD_QUEUE_WAIT", "2s", "how long a request may wait for a slot before 503 90009 with Retry-After", durationSetting(func(c *config) *time.Duration { return &c.QueueWait })},
	{"qr-inactivity", "PAYD_QR_INACTIVITY", "720h", "idle period after which Static and Hybrid QRs become Inactive", durationSetting(func(c *config) *time.Duration { return &c.QRInactivity })},
	{"checkout-lifetime", "PAYD_CHECKOUT_LIFETIME", "25m", "how long a checkout session lives", durationSetting(func(c *config) *time.Duration { return &c.CheckoutLife })},
	{"checkout-currencies", "PAYD_CHECKOUT_CURRENCIES", "MDL", "accepted checkout currencies (of MDL, EUR, USD)", func(c *config, v string) error {
		c.Currencies = nil
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p != "MDL" && p != "EUR" && p != "USD" {
				return fmt.Errorf("checkout currency %q is not MDL, EUR or USD", p)
			}
			c.Currencies = append(c.Currencies, p)
		}
		return nil
	}},
	{"log-format", "PAYD_LOG_FORMAT", "text", "text or json", func(c *config, v string) error { c.LogFormat = v; return nil }},
	{"retention", "PAYD_RETENTION", "2160h", "delivered callbacks and their attempts, delivered rails orders and the rails inbox are deleted after this long", durationSetting(func(c *config) *time.Duration { return &c.Retention })},
	{"secret-key", "PAYD_SECRET_KEY", "", "the operator key sealing signature keys at rest: 32 bytes in Base64 (required in production; the sandbox on SQLite makes PATH.key beside its database when it is not set)", func(c *config, v string) error { c.SecretKey = v; return nil }},
	{"metrics-addr", "PAYD_METRICS_ADDR", "", "serve /metrics on this address of its own (production serves it nowhere else)", func(c *config, v string) error { c.MetricsAddr = v; return nil }},
	{"pprof-addr", "PAYD_PPROF_ADDR", "", "serve net/http/pprof on this loopback address (off when empty)", func(c *config, v string) error { c.PprofAddr = v; return nil }},
	{"rails", "PAYD_RAILS", "", "", func(c *config, v string) error {
		if _, ok := network.Lookup(network.Rails, v); v != "" && v != sandbox.Name && !ok {
			return fmt.Errorf("rails must be %s or %s, not %q", sandbox.Name, strings.Join(network.Names(network.Rails), " or "), v)
		}
		c.Rails = v
		return nil
	}},
	{"operator-token", "PAYD_OPERATOR_TOKEN", "", "the operator's bearer token for the reconciliation report (at least 32 characters; unset: that report answers 401)", func(c *config, v string) error {
		if v != "" && len(v) < 32 {
			return fmt.Errorf("the operator token must be at least 32 characters (e.g. head -c 32 /dev/urandom | base64)")
		}
		c.OperatorToken = v
		return nil
	}},
	{"card-acquirer", "PAYD_CARD_ACQUIRER", "", "", func(c *config, v string) error {
		if _, ok := network.Lookup(network.Cards, v); v != "" && !ok {
			return fmt.Errorf("%q: the card acquirer must be %s (or unset: no cards)", v, strings.Join(network.Names(network.Cards), " or "))
		}
		c.CardAcquirer = v
		return nil
	}},
	{"instance", "PAYD_INSTANCE", "", "this instance's name in leases (default host:pid)", func(c *config, v string) error { c.Instance = v; return nil }},
	{"bank-timezone", "PAYD_BANK_TIMEZONE", "Europe/Chisinau", "the bank's time zone, whose calendar the statements' booking dates are in", func(c *config, v string) error {
		loc, err := time.LoadLocation(v)
		if err != nil {
			return fmt.Errorf("bank time zone %q: %w", v, err)
		}
		c.BankLocation = loc
		return nil
	}},
	{"statement-deadline", "PAYD_STATEMENT_DEADLINE", "6h", "how long after midnight (the bank's time zone) the day before's end-of-day statement is due; past it an account without one is counted missing",
		durationSetting(func(c *config) *time.Duration { return &c.StatementDeadline })},
}

// prefixesSetting reads comma-separated CIDR ranges.
func prefixesSetting(field func(*config) *[]netip.Prefix) func(*config, string) error {
	return func(c *config, v string) error {
		var out []netip.Prefix
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			pr, err := netip.ParsePrefix(p)
			if err != nil {
				if a, aerr := netip.ParseAddr(p); aerr == nil {
					pr = netip.PrefixFrom(a, a.BitLen()) // one address
				} else {
					return fmt.Errorf("bad address range %q (want CIDR, e.g. 10.1.0.0/16)", p)
				}
			}
			out = append(out, pr.Masked())
		}
		*field(c) = out
		return nil
	}
}

func findFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name {
			return true
		}
	}
	return false
}

func durationSetting(field func(*config) *time.Duration) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			if n, nerr := strconv.Atoi(v); nerr == nil {
				d, err = time.Duration(n)*time.Second, nil
			}
		}
		if err != nil || d < 0 {
			return fmt.Errorf("bad duration %q", v)
		}
		*field(c) = d
		return nil
	}
}

func intSetting(field func(*config) *int) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("bad number %q", v)
		}
		*field(c) = n
		return nil
	}
}

// secrets are the settings that hold a secret. Each can also be read from a
// file (flag NAME-file, variable PAYD_…_FILE), so that it need not appear in
// the process list or the environment.
// A network's own secrets are marked in its settings (network.Setting).
var secrets = map[string]bool{"secret-key": true, "operator-token": true}

// allSettings are the settings with every registered network's: a rails
// network's after PAYD_RAILS, an acquirer's after PAYD_CARD_ACQUIRER (the
// two name the registered networks in their help); secret holds secrets'
// flags and the networks' secret ones.
var allSettings = sync.OnceValues(func() (out []setting, secret map[string]bool) {
	secret = maps.Clone(secrets)
	for _, s := range settings {
		var role network.Role
		switch s.flag {
		case "rails":
			role = network.Rails
			s.help = "the payment networks' adapter: " + sandbox.Name + " (the only one in sandbox mode) or " +
				strings.Join(network.Names(role), " or ") + " (required in production)"
		case "card-acquirer":
			role = network.Cards
			s.help = "production's card acquirer, whose own page takes the card: " + strings.Join(network.Names(role), " or ") +
				" (default: none, checkouts offer MIA QR only)"
		}
		out = append(out, s)
		for _, n := range network.All() {
			if n.Role != role {
				continue
			}
			for _, ns := range n.Settings {
				if ns.Secret {
					secret[ns.Flag] = true
				}
				out = append(out, setting{flag: ns.Flag, env: ns.Env, def: ns.Default, help: ns.Help, apply: func(c *config, v string) error {
					if ns.Parse != nil {
						if err := ns.Parse(v); err != nil {
							return err
						}
					}
					c.Net[ns.Flag] = v
					return nil
				}})
			}
		}
	}
	return out, secret
})

// errHelp: the user asked for a command's help, which was printed.
var errHelp = errors.New("help")

// loadConfig reads the settings: a flag wins over its variable, which wins
// over the default; a secret's file is read when the secret itself is not
// given. Only the settings the command takes (commands in cli.go) are
// flags; the others come from their variables. extra registers the
// command's own flags.
func loadConfig(name string, args []string, getenv func(string) string, out io.Writer, extra func(*flag.FlagSet)) (*config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("payd "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	cmd := findCommand(name)
	offered := func(flag string) bool { return cmd == nil || cmd.flags == nil || findFlag(cmd.flags, flag) }
	none := ""
	settings, secret := allSettings()
	vals, files := make([]*string, len(settings)), make([]*string, len(settings))
	for i, s := range settings {
		vals[i], files[i] = &none, &none
		if offered(s.flag) {
			vals[i] = fs.String(s.flag, "", s.help+" ($"+s.env+", default "+strconv.Quote(s.def)+")")
		}
		if secret[s.flag] && offered(s.flag+"-file") {
			files[i] = fs.String(s.flag+"-file", "", "a file holding "+s.env+" ($"+s.env+"_FILE)")
		}
	}
	if extra != nil {
		extra(fs)
	}
	if cmd != nil {
		fs.Usage = commandUsage(fs, cmd)
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, nil, errHelp
		}
		return nil, nil, errUsage
	}
	c := &config{Net: network.Values{}}
	// mode first: other defaults depend on it.
	order := append([]int{2}, 0, 1)
	for i := 3; i < len(settings); i++ {
		order = append(order, i)
	}
	for _, i := range order {
		s := settings[i]
		v := *vals[i]
		if v == "" {
			v = getenv(s.env)
		}
		if v == "" && secret[s.flag] {
			file := *files[i]
			if file == "" {
				file = getenv(s.env + "_FILE")
			}
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return nil, nil, fmt.Errorf("%s_FILE: %w", s.env, err)
				}
				v = strings.TrimSpace(string(b))
			}
		}
		if v == "" {
			v = s.def
		}
		if err := s.apply(c, v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.env, err)
		}
	}
	if c.CallbackSchedule == nil {
		c.CallbackSchedule = worker.DefaultSchedule
	}
	if c.PublicURL == "" {
		if !c.sandbox() {
			return nil, nil, fmt.Errorf("PAYD_PUBLIC_URL: production needs the https URL payers and merchants reach this service at (e.g. https://pay.example.com)")
		}
		return c, fs, nil // serve derives it from the address it listens on
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, nil, fmt.Errorf("PAYD_PUBLIC_URL: %q is not an http(s) URL", c.PublicURL)
	}
	if !c.sandbox() && u.Scheme != "https" {
		return nil, nil, fmt.Errorf("PAYD_PUBLIC_URL must be https in production")
	}
	return c, fs, nil
}

// checkRails enforces which rails each mode may use: the sandbox's
// simulated network only in sandbox mode, a registered network in
// production, with its settings. serve checks it; operator commands that
// only touch the database do not.
func (c *config) checkRails() error {
	if err := c.checkAcquirer(); err != nil {
		return err
	}
	names := strings.Join(network.Names(network.Rails), " or ")
	if c.sandbox() {
		if c.Rails != "" && c.Rails != sandbox.Name {
			return fmt.Errorf("PAYD_RAILS: sandbox mode uses the sandbox rails only; %s needs PAYD_MODE=production", c.Rails)
		}
		c.Rails = sandbox.Name
		return nil
	}
	switch c.Rails {
	case "":
		var choices []string
		for _, name := range network.Names(network.Rails) {
			n, _ := network.Lookup(network.Rails, name)
			choices = append(choices, strings.TrimSpace("PAYD_RAILS="+name+" "+n.Needs))
		}
		return fmt.Errorf("PAYD_RAILS: production needs real rails: set %s", strings.Join(choices, " or "))
	case sandbox.Name:
		return fmt.Errorf("PAYD_RAILS: the sandbox rails move no money and are refused in production; set PAYD_RAILS=%s", names)
	}
	n, _ := network.Lookup(network.Rails, c.Rails)
	return c.checkNetwork(n)
}

// checkNetwork runs a chosen network's own check of its settings.
func (c *config) checkNetwork(n network.Network) error {
	if n.Check == nil {
		return nil
	}
	return n.Check(c.Net)
}

// qrRegistry is the PSP code of the QR registry the chosen rails' QRs
// carry links of ("": none, as in the sandbox).
func (c *config) qrRegistry() string {
	n, ok := network.Lookup(network.Rails, c.Rails)
	if !ok || n.QRRegistry == nil {
		return ""
	}
	return n.QRRegistry(c.Net)
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkDatabaseURL accepts postgres://…, postgresql://…, sqlite:PATH or a
// plain path, and refuses any other scheme (a typo must not silently
// become a SQLite file named "mysql:").
func checkDatabaseURL(v string) error {
	switch {
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"), strings.HasPrefix(v, "sqlite:"):
		return nil
	case schemeRE.MatchString(v):
		return fmt.Errorf("%q is not a database payd can use: give postgres://…, postgresql://…, sqlite:PATH or a file path", redact(v))
	}
	return nil
}

var userinfoRE = regexp.MustCompile(`(://[^:/@\s]*):[^@/\s]*@`)

// redact hides the password of every URL in s (user info "user:secret@"
// becomes "user:xxxxx@"), for anything payd prints or logs.
func redact(s string) string { return userinfoRE.ReplaceAllString(s, "$1:xxxxx@") }

// checkAcquirer enforces the card acquirer's settings: production only
// (the sandbox takes its test cards on its own form), with the acquirer's
// own check.
func (c *config) checkAcquirer() error {
	if c.CardAcquirer == "" {
		return nil
	}
	if c.sandbox() {
		return fmt.Errorf("PAYD_CARD_ACQUIRER: the sandbox takes its test cards on its own form; an acquirer needs PAYD_MODE=production")
	}
	n, _ := network.Lookup(network.Cards, c.CardAcquirer)
	return c.checkNetwork(n)
}
