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

// registerStore adds the gauges read from the database at scrape time.
func (m *metrics) registerStore(store *sqlstore.Store) {
	gauge := func(name, help string, f func(context.Context) (int, error)) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, err := f(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		})
	}
	m.reg.MustRegister(
		gauge("payd_callbacks_pending", "Callbacks waiting for delivery.", store.PendingCallbacks),
		gauge("payd_refunds_pending", "Refunds the processor has not settled.", store.PendingRefunds),
	)
}

// Registry is the server's Prometheus registry, for other components'
// collectors (callback delivery registers its attempt counter here).
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

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
