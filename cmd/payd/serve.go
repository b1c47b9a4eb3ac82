package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"time"

	"payd"
	"payd/internal/httpapi"
	"payd/internal/network"
	"payd/internal/rails/sandbox"
	"payd/internal/sqlstore"
	"payd/internal/web"
	"payd/internal/webhook"
	"payd/internal/worker"

	"github.com/prometheus/client_golang/prometheus"
)

// newLogger returns the server's logger and the access log that writes, to
// the same writer, the lines its handler would (httpapi.AccessLog): the
// format is chosen here once for both.
func newLogger(c *config, w io.Writer) (*slog.Logger, *httpapi.AccessLog) {
	json := c.LogFormat == "json"
	h := slog.Handler(slog.NewTextHandler(w, nil))
	if json {
		h = slog.NewJSONHandler(w, nil)
	}
	return slog.New(h), httpapi.NewAccessLog(w, json)
}

// loopStartDelay is how long the background loops wait after the server
// starts before their first pass. Started with it, their first passes each
// set up a database connection at the same moment, and on PostgreSQL, where
// one costs tens of milliseconds here, the first requests (the load
// balancer's readiness check first) waited behind them: ready after start
// on 10M rows, five starts alternated three times, median 342–371 ms
// without the wait, 117–132 ms with it.
const loopStartDelay = 300 * time.Millisecond

// openStore opens and migrates the database, with the operator's secret
// key (made beside the database for a sandbox on SQLite; note says so).
func openStore(ctx context.Context, c *config, clock payd.Clock, note io.Writer) (*sqlstore.Store, error) {
	key, created, err := sqlstore.LoadSecretKey(c.DatabaseURL, c.SecretKey, "", c.sandbox())
	if errors.Is(err, sqlstore.ErrNoSecretKey) && c.sandbox() {
		err = fmt.Errorf("%w (the sandbox makes one only beside a SQLite database)", err)
	}
	if err != nil {
		return nil, err
	}
	if created != "" {
		fmt.Fprintf(note, "payd: created the secret key file %s: it seals the signature keys in the database; keep it with the database\n", created)
	}
	store, err := sqlstore.Open(c.DatabaseURL)
	if err == nil && c.BankLocation != nil {
		store.SetBankLocation(c.BankLocation)
	}
	if psp := c.qrRegistry(); err == nil && psp != "" {
		store.SetQRRegistry(psp) // every QR's url a MIA link, its changes told to the registry
	}
	if err != nil {
		return nil, err
	}
	if err := store.SetSecretKey(key); err != nil {
		store.Close()
		return nil, err
	}
	if _, err := store.Migrate(ctx, clock.Now()); err != nil {
		store.Close()
		return nil, err
	}
	if err := store.CheckSecretKey(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, _, err := loadConfig("serve", args, getenv, stderr, nil)
	if err != nil {
		return err
	}
	if err := c.checkRails(); err != nil {
		return err
	}
	tuneGC(os.Getenv) // the runtime reads the process's own environment, not getenv's
	logOut := newBufferedLog(stderr)
	defer logOut.Close()
	log, access := newLogger(c, logOut)
	clock := payd.SystemClock{}
	store, err := openStore(ctx, c, clock, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	store.SetQRInactivity(c.QRInactivity)
	if n, err := store.SealLegacy(ctx); err != nil {
		return fmt.Errorf("seal stored secrets: %w", err)
	} else if n > 0 {
		log.Info("sealed secrets written before sealing existed", "count", n)
	}
	if !c.sandbox() && store.Engine() == sqlstore.SQLite {
		fmt.Fprintln(stderr, "payd: warning: production on SQLite: one instance only, and backups are yours to make; PostgreSQL is the production database")
		log.Warn("production mode on SQLite")
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	if c.PublicURL == "" {
		c.PublicURL = "http://" + addr
	}
	if c.sandbox() {
		if err := greet(ctx, store, c, clock, stdout); err != nil {
			ln.Close()
			return err
		}
	}
	instance := c.Instance
	if instance == "" {
		host, _ := os.Hostname()
		instance = fmt.Sprintf("%s:%d", host, os.Getpid())
	}

	callbacksWake, refundsWake := worker.NewWaker(), worker.NewWaker()
	store.SetNotify(callbacksWake.Wake, refundsWake.Wake)

	// The sandbox's simulated network, one for the test endpoints, the
	// pages' simulators and the auto aliases; none in production.
	var payer *sandbox.Payer
	if c.Rails == sandbox.Name {
		payer = sandbox.New(store)
	}
	// Production's networks, registered by their packages (networks.go):
	// the rails, and the card acquirer whose own page takes the card (none:
	// checkouts offer MIA QR only). Each is asked to start here; what it
	// serves on payd's listener is mounted once the API exists.
	var api *httpapi.Server
	var mounts []func()
	host := &network.Host{Values: c.Net, PublicURL: c.PublicURL, Location: c.BankLocation, Clock: clock, Log: log,
		Ledger: store, Inbox: store, Statements: store, StatementRefused: func(reason string) { api.StatementRefused(reason) },
		// Connections to a network are kept alive, one for each delivery
		// the orders passes (claimed and handed) run at once.
		Conns: (worker.OrderLoops + worker.HandedLoops) * worker.OrderParallel,
		Mount: func(pattern string, h http.Handler) { mounts = append(mounts, func() { api.Mount(pattern, h) }) }}
	networks := &payd.Networks{ByName: map[string]payd.Rails{}}
	var acquirer network.Started
	for _, chosen := range []struct {
		role network.Role
		name string
	}{{network.Rails, c.Rails}, {network.Cards, c.CardAcquirer}} {
		n, ok := network.Lookup(chosen.role, chosen.name)
		if !ok {
			continue
		}
		started, err := n.Start(host)
		if err != nil {
			return fmt.Errorf("start %s: %w", n.Name, err)
		}
		if started.Orders != nil {
			networks.ByName[n.Name] = started.Orders
		}
		if chosen.role == network.Rails {
			networks.Rails = n.Name
			store.SetRails(n.Name)
		} else {
			networks.Cards, acquirer = n.Name, started
		}
	}
	webCfg := web.Config{Sandbox: c.sandbox(), PublicURL: c.PublicURL, Payer: payer}
	if acquirer.Gateway != nil {
		webCfg.Gateway, webCfg.CardCallbackURL = acquirer.Gateway, acquirer.CallbackURL
	}
	pages := web.New(webCfg, store, clock, log)
	api = httpapi.New(httpapi.Config{
		Sandbox: c.sandbox(), PublicURL: c.PublicURL, TokenTTL: c.TokenTTL, MaxBodyBytes: c.MaxBodyBytes,
		AllowHTTPURLs: c.AllowHTTPURLs, TokenRateClient: c.TokenRateClient, TokenRateAddr: c.TokenRateAddr, PageRateAddr: c.PageRateAddr,
		RefundDelay: c.RefundDelay, CheckoutLife: c.CheckoutLife, Currencies: c.Currencies, Version: version,
		MaxInFlight: c.MaxInFlight, QueueWait: c.QueueWait, AccessLog: access, TrustedProxies: c.TrustedProxies, Payer: payer,
		OperatorToken: c.OperatorToken, StatementDeadline: c.StatementDeadline,
	}, store, clock, log, pages)
	for _, mount := range mounts {
		mount()
	}

	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	// Background work stops with workCtx, after the server has drained.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	loop := func(name string, every time.Duration, wake <-chan struct{}, full int, pass worker.Pass) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-workCtx.Done():
				return
			case <-time.After(loopStartDelay):
			}
			worker.Run(workCtx, log, name, every, wake, full, pass)
		}()
	}
	lease := c.CallbackLease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	delivery := &worker.Delivery{
		Store: store, Client: webhook.NewClientAllowing(c.sandbox(), c.CallbackAllow), Clock: clock, Log: log, Owner: instance,
		Schedule: c.CallbackSchedule, Lease: lease, PerHost: c.CallbackPerHost, Attempts: worker.NewAttemptsCounter(api.Registry()),
		Clocked: c.sandbox(),
	}
	api.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "payd_callbacks_parked",
		Help: "Callbacks waiting for their host to have fewer attempts in flight (a merchant's endpoint slow or hung)."},
		func() float64 { return float64(delivery.Parked()) }))
	api.Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "payd_callbacks_given_back_total",
		Help: "Leased callbacks this instance gave back unattempted because their attempt could not start soon (the instance behind, or their host at its limit)."},
		func() float64 { return float64(delivery.GivenBack()) }))
	wg.Add(1)
	go func() { defer wg.Done(); store.ListenAuth(workCtx, log, nil) }()
	for range worker.DeliveryLoops {
		loop("delivery", worker.DeliveryInterval, callbacksWake, worker.DeliveryBatch, delivery.RunOnce)
	}
	// A payment's callback is handed to delivery in memory at its commit,
	// leased to this instance (sqlstore/handover.go), and attempted at once.
	handed := func(run func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); run(workCtx) }()
	}
	store.HandCallbacks(instance, lease, clock)
	handed(delivery.RunHanded)
	eb := worker.ExpiryBatch(store.Engine())
	loop("expiry", worker.ExpiryInterval, nil, eb, worker.Paced(eb, 3, (&worker.Expiry{Store: store, Clock: clock, Batch: eb}).RunOnce))
	loop("tokens", worker.TokenInterval, nil, 0, (&worker.Tokens{Store: store, Clock: clock}).RunOnce)
	loop("settlement", worker.SettlementInterval, nil, 0, (&worker.Settlement{Store: store, Clock: clock}).RunOnce)
	if c.Retention > 0 {
		loop("retention", worker.RetentionInterval, nil, 0, (&worker.Retention{Store: store, Clock: clock, Keep: c.Retention}).RunOnce)
	}
	if c.Rails == sandbox.Name {
		// The sandbox's network: refunds settle by their reason, the auto
		// aliases decide. Nothing of it runs in production.
		loop("refunds", worker.RefundInterval, refundsWake, 100, (&sandbox.Refunds{Store: store, Ledger: store, Clock: clock}).RunOnce)
		loop("rtp-auto", worker.AutoInterval, nil, 100, (&sandbox.Decisions{Store: store, Payer: payer, Clock: clock, Log: log}).RunOnce)
	}
	if len(networks.ByName) > 0 {
		// Two passes at once, as for callbacks: one gathers while the other
		// waits for its slowest delivery (worker.OrderLoops).
		// An RTP's pain.013 is handed to them in memory at its commit, as
		// callbacks are; what is not handed (cancels, refunds, retries,
		// another instance's leftovers) is claimed. Each order goes to the
		// network it names (payd.Networks).
		orders := &worker.Orders{Store: store, Rails: networks, Clock: clock, Log: log, Owner: instance, Lease: lease}
		for range worker.OrderLoops {
			loop("rails-orders", worker.RefundInterval, refundsWake, 256, orders.RunOnce)
		}
		store.HandOrders(instance, lease, clock)
		// While a network is away, new orders wait unleased (worker/away.go);
		// payd_rails_away says so, by the network's role.
		for role, name := range map[network.Role]string{network.Rails: networks.Rails, network.Cards: networks.Cards} {
			if _, ok := networks.ByName[name]; !ok {
				continue
			}
			api.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "payd_rails_away",
				ConstLabels: prometheus.Labels{"network": string(role)},
				Help:        "1 while this instance holds a network's orders, its connector unavailable (one order probes it), else 0."},
				func() float64 {
					if orders.Away(name) {
						return 1
					}
					return 0
				}))
		}
		store.HoldOrders(orders.Holding)
		for range worker.HandedLoops {
			handed(orders.RunHanded)
		}
	}
	if acquirer.Gateway != nil {
		loop("cards", worker.CardInterval, nil, 32, (&worker.Cards{Store: store, Network: networks.Cards, Gateway: acquirer.Gateway, Clock: clock, Log: log}).RunOnce)
	}

	loop("gauges", httpapi.GaugeInterval, nil, 0, api.RefreshGauges)
	// This instance serves the database: its row says so to operator
	// commands that must not run beside it (payd keys rotate).
	if err := store.Serving(ctx, instance, clock.Now()); err != nil {
		log.Warn("serving row not written; retried", "err", err)
	}
	loop("serving", sqlstore.InstanceBeat, nil, 0, func(ctx context.Context) (int, error) {
		return 0, store.Serving(ctx, instance, clock.Now())
	})
	if c.MetricsAddr != "" {
		if err := serveMetrics(workCtx, c.MetricsAddr, api.MetricsHandler(), log); err != nil {
			ln.Close()
			stopWork()
			wg.Wait()
			return err
		}
	}
	if c.PprofAddr != "" {
		if err := servePprof(workCtx, c.PprofAddr, log); err != nil {
			ln.Close()
			stopWork()
			wg.Wait()
			return err
		}
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "payd %s (%s mode) listening on http://%s\n", version, c.Mode, addr)
	log.Info("serving", "addr", addr, "mode", c.Mode, "rails", c.Rails, "public_url", c.PublicURL, "database", store.Engine(), "instance", instance)

	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("shutting down")
		shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err = srv.Shutdown(shutCtx)
		cancel()
	}
	stopWork()
	wg.Wait()
	relCtx, relCancel := context.WithTimeout(context.Background(), 5*time.Second)
	if rerr := delivery.ReleaseParked(relCtx); rerr != nil {
		log.Warn("parked callbacks not released; their leases run out instead", "err", rerr)
	}
	if serr := store.StoppedServing(relCtx, instance); serr != nil {
		log.Warn("serving row not removed; it runs out instead", "err", serr)
	}
	relCancel()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// greet prints how to call the sandbox. On a database without merchants it
// first creates a demo merchant; its secret can be shown only then.
func greet(ctx context.Context, store *sqlstore.Store, c *config, clock payd.Clock, out io.Writer) error {
	ms, err := store.Merchants(ctx)
	if err != nil {
		return err
	}
	base := strings.TrimRight(c.PublicURL, "/")
	if len(ms) > 0 {
		fmt.Fprintf(out, "payd sandbox: %d merchant(s) in %s; the first has clientId %s.\n"+
			"  Lost its secret? payd merchant rotate-secret %s\n  Console: %s/console\n", len(ms), redact(c.DatabaseURL), ms[0].ClientID, ms[0].ClientID, base)
		return nil
	}
	cr, err := store.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Demo merchant"}, clock.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, `payd sandbox: created a demo merchant (shown once; the secret is stored hashed)
  merchantId:   %s
  clientId:     %s
  clientSecret: %s
  signatureKey: %s
Get an access token:
  curl -s -X POST %s/v2/auth/token -H 'Content-Type: application/json' -d '{"clientId":"%s","clientSecret":"%s"}'
Or sign in to the console with the clientId and clientSecret: %s/console
`, cr.MerchantID, cr.ClientID, cr.ClientSecret, cr.SignatureKey, base, cr.ClientID, cr.ClientSecret, base)
	return nil
}

// serveMetrics serves /metrics on a listener of its own (PAYD_METRICS_ADDR),
// for the monitoring network; production serves metrics nowhere else.
func serveMetrics(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("PAYD_METRICS_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("metrics listener", "err", err)
		}
	}()
	log.Info("metrics", "addr", ln.Addr().String())
	return nil
}

// servePprof serves the Go profiler on a loopback address of its own, for
// the profiles in BENCHMARKS.md; it is off unless PAYD_PPROF_ADDR is set.
func servePprof(ctx context.Context, addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("PAYD_PPROF_ADDR must be a loopback address, not %q", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Error("pprof", "err", err)
		}
	}()
	return nil
}
