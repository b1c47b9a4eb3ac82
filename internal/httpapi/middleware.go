package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"payd"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	merchantKey
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// merchantFrom returns the authenticated merchant of the request.
func merchantFrom(ctx context.Context) *payd.Merchant {
	m, _ := ctx.Value(merchantKey).(*payd.Merchant)
	return m
}

func validRequestID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// metrics are the server's Prometheus collectors, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	refused  *prometheus.CounterVec // bank statements refused, by reason
	gauges   []storeGauges
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payd_http_requests_total", Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "payd_http_request_duration_seconds", Help: "HTTP request latency by route pattern and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "status"}),
	}
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "payd_statements_refused_total",
		Help: "Bank statements (camt.053, camt.054) refused, by reason: schema, content, msgid_reused, unknown_version (docs/reconciliation.md)."},
		[]string{"reason"})
	m.reg.MustRegister(m.requests, m.latency, m.refused)
	return m
}

// observe is the outermost middleware: request id, panic recovery, access
// log and metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		client := s.clientAddr(r)
		r = r.WithContext(withClient(context.WithValue(r.Context(), requestIDKey, id), client))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					fail(sw, r, s.log, fmt.Errorf("panic: %v", v))
				}
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := strconv.Itoa(sw.status)
			d := time.Since(start)
			s.metrics.requests.WithLabelValues(route, status).Inc()
			s.metrics.latency.WithLabelValues(route, status).Observe(d.Seconds())
			h := s.log.Handler()
			if !h.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			e := accessEntry{at: time.Now(), requestID: id, method: r.Method, path: r.URL.Path, route: route, client: client,
				status: sw.status, duration: d}
			if m := merchantFrom(r.Context()); m != nil {
				e.merchantID = m.ID
			}
			if s.cfg.AccessLog != nil && s.cfg.AccessLog.write(&e) {
				return
			}
			// The handler directly: Logger.LogAttrs would also walk the
			// stack for a caller the handler does not print (1.5% of payd's
			// CPU serving rtp-get).
			h.Handle(r.Context(), e.record())
		}()
		next.ServeHTTP(sw, r)
	})
}
