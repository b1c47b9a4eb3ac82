package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"payd"
	"payd/api"
	"payd/internal/sqlstore"
)

type healthResult struct {
	Status string `json:"status"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	respond(w, healthResult{Status: "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		w.Header().Set("Retry-After", "1")
		fail(w, r, s.log, payd.E(payd.CodeUnavailable))
		return
	}
	// An instance whose operator key no longer opens the stored secrets
	// (re-sealed under another key) would answer every merchant 500: it
	// is not ready, so a load balancer sends no one to it.
	if err := s.store.CheckSecretKey(ctx); err != nil {
		s.log.Error("not ready: the operator key does not open the stored secrets", "err", err)
		w.Header().Set("Retry-After", "1")
		fail(w, r, s.log, payd.E(payd.CodeUnavailable))
		return
	}
	respond(w, healthResult{Status: "ok"})
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	b, err := api.JSON()
	if err != nil {
		fail(w, r, s.log, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// storeGauges are gauges whose values come from the database. They are
// refreshed in the background (RefreshGauges, every GaugeInterval), never
// by a scrape: scraping stays cheap and cannot be used to load the
// database. Each read sets its gauges (-1 when it fails).
type storeGauges struct {
	gauges []prometheus.Gauge
	read   func(context.Context) ([]float64, error)
}

// GaugeInterval is how often RefreshGauges reads the database.
const GaugeInterval = 5 * time.Second

// ReconGaugeInterval is how often the reconciliation gauge is read again.
var ReconGaugeInterval = time.Minute

// registerStore adds the gauges read from the database.
func (m *metrics) registerStore(store *sqlstore.Store, clock payd.Clock, deadline time.Duration) {
	add := func(read func(context.Context) ([]float64, error), names ...[2]string) {
		sg := storeGauges{read: read}
		for _, n := range names {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: n[0], Help: n[1]})
			m.reg.MustRegister(g)
			sg.gauges = append(sg.gauges, g)
		}
		m.gauges = append(m.gauges, sg)
	}
	count := func(f func(context.Context) (int, error)) func(context.Context) ([]float64, error) {
		return func(ctx context.Context) ([]float64, error) {
			n, err := f(ctx)
			return []float64{float64(n)}, err
		}
	}
	add(count(store.PendingCallbacks), [2]string{"payd_callbacks_pending", "Callbacks waiting for delivery."})
	add(count(store.PendingRefunds), [2]string{"payd_refunds_pending", "Refunds the processor has not settled."})
	add(func(ctx context.Context) ([]float64, error) {
		n, age, err := store.PendingOrders(ctx, clock.Now())
		return []float64{float64(n), age.Seconds()}, err
	}, [2]string{"payd_rails_orders_pending", "Rails orders (pain.013, camt.055, pacs.004) the network has not taken yet."},
		[2]string{"payd_rails_orders_oldest_seconds", "Age of the oldest rails order the network has not taken yet."})
	add(count(store.FailedOrders), [2]string{"payd_rails_orders_failed", "Rails orders the network refused for good (a card reversal the acquirer would not make): each needs a person."})
	// What does not reconcile, over the last week's booking dates: read
	// when this process took a statement, else at most once a minute (it
	// counts what no statement booked).
	recon := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "payd_reconciliation_unmatched",
		Help: "Statement lines and payments that do not reconcile and no operator explained, by kind, over the last 7 booking dates and the next (docs/reconciliation.md)."}, []string{"kind"})
	m.reg.MustRegister(recon)
	var kinds []string
	for _, o := range payd.ReconOutcomes {
		if payd.Unresolved(o) {
			kinds = append(kinds, o)
		}
	}
	var last []float64
	var lastAt time.Time
	var lastTaken int64
	sg := storeGauges{read: func(ctx context.Context) ([]float64, error) {
		now, taken := clock.Now(), store.StatementsTaken()
		if last != nil && now.Sub(lastAt) < ReconGaugeInterval && taken == lastTaken {
			return last, nil
		}
		loc := store.BankLocation()
		// The last 7 booking dates, and tomorrow's: a bank books ahead what
		// it takes after its cut-off.
		u, err := store.ReconUnresolved(ctx, now.In(loc).AddDate(0, 0, -6).Format(time.DateOnly), now.In(loc).AddDate(0, 0, 1).Format(time.DateOnly))
		if err != nil {
			return nil, err
		}
		vals := make([]float64, len(kinds))
		for i, k := range kinds {
			vals[i] = float64(u[k])
		}
		last, lastAt, lastTaken = vals, now, taken
		return vals, nil
	}}
	for _, k := range kinds {
		sg.gauges = append(sg.gauges, recon.WithLabelValues(k))
	}
	m.gauges = append(m.gauges, sg)
	// The merchants' accounts whose end-of-day statement for the bank's
	// yesterday has not come by StatementDeadline (an alert: the day
	// cannot be reconciled).
	add(func(ctx context.Context) ([]float64, error) {
		loc := store.BankLocation()
		now := clock.Now().In(loc)
		if now.Sub(time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)) < deadline {
			now = now.AddDate(0, 0, -1) // before the deadline: yesterday's statement may still come
		}
		missing, err := store.AccountsWithoutStatement(ctx, now.AddDate(0, 0, -1).Format(time.DateOnly))
		return []float64{float64(len(missing))}, err
	}, [2]string{"payd_reconciliation_statements_missing",
		"Merchants' accounts with no end-of-day statement (camt.053) for the last bank day due (the day before yesterday until the deadline, PAYD_STATEMENT_DEADLINE after midnight in the bank's time zone)."})
	// Work handed to this instance's loops in memory (sqlstore/handover.go):
	// read at each scrape, from memory.
	for kind, stats := range map[string]func() sqlstore.HandStats{"orders": store.HandedOrderStats, "callbacks": store.HandedCallbackStats} {
		labels := prometheus.Labels{"kind": kind}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "payd_handed_queued", ConstLabels: labels,
				Help: "New rails orders and callbacks handed to this instance's loops in memory and not yet taken by them."},
				func() float64 { return float64(stats().Queued) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "payd_handed_total", ConstLabels: labels,
				Help: "New rails orders and callbacks handed to this instance's loops in memory."},
				func() float64 { return float64(stats().Handed) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "payd_handed_full_total", ConstLabels: labels,
				Help: "New rails orders and callbacks that found this instance's queue full and were left to the claims."},
				func() float64 { return float64(stats().Full) }))
	}
	if _, ok := store.WriterStats(); ok {
		stat := func(name, help string, f func(sqlstore.WriterStats) float64) {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
				st, _ := store.WriterStats()
				return f(st)
			}))
		}
		stat("payd_sqlite_write_batches_total", "Transactions SQLite's single writer committed (each carries one or more use cases).",
			func(st sqlstore.WriterStats) float64 { return float64(st.Batches) })
		stat("payd_sqlite_write_use_cases_total", "Write use cases SQLite's single writer ran.",
			func(st sqlstore.WriterStats) float64 { return float64(st.UseCases) })
		stat("payd_sqlite_writer_busy_seconds_total", "Time SQLite's single writer spent running transactions; its rate is the writer's utilisation (near 1: writes queue).",
			func(st sqlstore.WriterStats) float64 { return st.Busy.Seconds() })
		stat("payd_sqlite_commit_seconds_total", "Time SQLite's single writer spent in commits (the log's writes and sync).",
			func(st sqlstore.WriterStats) float64 { return st.Committing.Seconds() })
		stat("payd_rtp_cache_hits_total", "RTP reads by id answered from memory (SQLite).",
			func(st sqlstore.WriterStats) float64 { return float64(st.RTPCacheHits) })
	}
}

// RefreshGauges reads the database-backed gauges once. serve runs it every
// GaugeInterval.
func (s *Server) RefreshGauges(ctx context.Context) (int, error) {
	for _, sg := range s.metrics.gauges {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		vals, err := sg.read(rctx)
		cancel()
		for i, g := range sg.gauges {
			if err != nil || i >= len(vals) {
				g.Set(-1)
			} else {
				g.Set(vals[i])
			}
		}
	}
	return len(s.metrics.gauges), nil
}

// MetricsHandler serves the Prometheus metrics; in production it is served
// only on its own listener (PAYD_METRICS_ADDR), never on the public one.
func (s *Server) MetricsHandler() http.Handler { return s.metricsHandler() }

// Registry is the server's Prometheus registry, for other components'
// collectors (callback delivery registers its attempt counter here).
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// StatementRefused counts a bank statement refused, by reason
// (payd_statements_refused_total): the rails' inbound endpoint tells it.
func (s *Server) StatementRefused(reason string) { s.metrics.refused.WithLabelValues(reason).Inc() }

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
}

// handleNoRoute answers every request no pattern claims: 405 with Allow
// when the path exists for other methods, else 404, both as envelopes.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 && r.Method != http.MethodHead {
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		fail(w, r, s.log, payd.E(payd.CodeMethodNotAllowed, "method", r.Method, "path", r.URL.Path))
		return
	}
	fail(w, r, s.log, payd.E(payd.CodeNoRoute, "method", r.Method, "path", r.URL.Path))
}
