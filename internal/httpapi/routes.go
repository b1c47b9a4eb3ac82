package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"payd"
)

// routes registers every route, one line each, in the order of the contract.
func (s *Server) routes(pages, console http.Handler) {
	authed, sandbox := routeOpts{}, routeOpts{sandboxOnly: true}
	token := routeOpts{public: true, preBody: s.limitAddr}
	m := s.mux

	m.Handle("POST /v2/auth/token", s.api(areaAuth, token, s.handleToken))

	// The QR area, also served under the /v2/mia alias (spec §0.1).
	for _, p := range []string{"/v2/instant", "/v2/mia"} {
		m.Handle("POST "+p+"/qr", s.api(areaQR, authed, s.handleQRCreate))
		m.Handle("POST "+p+"/qr/hybrid", s.api(areaQR, authed, s.handleQRHybridCreate))
		m.Handle("GET "+p+"/qr/{qrId}", s.api(areaQR, authed, s.handleQRGet))
		m.Handle("POST "+p+"/qr/{qrId}/cancel", s.api(areaQR, authed, s.handleQRCancel))
		m.Handle("POST "+p+"/qr/{qrId}/extension", s.api(areaQR, authed, s.handleExtensionCreate))
		m.Handle("POST "+p+"/qr/{qrId}/extension/cancel", s.api(areaQR, authed, s.handleExtensionCancel))
		m.Handle("GET "+p+"/qr", s.api(areaQR, authed, s.handleQRList))
		m.Handle("GET "+p+"/qr/extension", s.api(areaQR, authed, s.handleExtensionList))
		m.Handle("GET "+p+"/payments/{payId}", s.api(areaPayments, authed, s.handleQRPaymentGet))
		m.Handle("GET "+p+"/payments", s.api(areaPayments, authed, s.handleQRPaymentList))
		m.Handle("POST "+p+"/test-pay", s.api(areaQR, sandbox, s.handleTestPay))
	}

	m.Handle("POST /v2/rtp", s.api(areaRTP, authed, s.handleRTPCreate))
	m.Handle("GET /v2/rtp/{id}", s.api(areaRTP, authed, s.handleRTPGet))
	m.Handle("POST /v2/rtp/{id}/cancel", s.api(areaRTP, authed, s.handleRTPCancel))
	m.Handle("GET /v2/rtp", s.api(areaRTP, authed, s.handleRTPList))
	m.Handle("POST /v2/rtp/{payId}/refund", s.api(areaRTP, authed, s.handleRTPRefund))
	m.Handle("POST /v2/rtp/{id}/test-accept", s.api(areaRTP, sandbox, s.handleRTPTestAccept))
	m.Handle("POST /v2/rtp/{id}/test-reject", s.api(areaRTP, sandbox, s.handleRTPTestReject))

	m.Handle("POST /v2/checkouts", s.api(areaCheckout, authed, s.handleCheckoutCreate))
	m.Handle("POST /v2/checkouts/{id}/cancel", s.api(areaCheckout, authed, s.handleCheckoutCancel))
	m.Handle("GET /v2/checkouts/{id}", s.api(areaCheckout, authed, s.handleCheckoutGet))
	m.Handle("GET /v2/checkouts", s.api(areaCheckout, authed, s.handleCheckoutList))

	m.Handle("GET /v2/payments/{id}", s.api(areaPayments, authed, s.handlePaymentGet))
	m.Handle("GET /v2/payments", s.api(areaPayments, authed, s.handlePaymentList))
	m.Handle("POST /v2/payments/{payId}/refund", s.api(areaPayments, authed, s.handleRefund))
	m.Handle("POST /v2/mia/payments/{payId}/refund", s.api(areaPayments, authed, s.handleRefund)) // the Python client's path
	m.Handle("GET /v2/payments/refunds/{id}", s.api(areaRefunds, authed, s.handleRefundGet))

	m.Handle("GET /v2/reports/settlement", s.api(areaPayments, authed, s.handleSettlement))
	operator := routeOpts{operator: true}
	m.Handle("GET /v2/reports/reconciliation", s.api(areaPayments, operator, s.handleReconciliation))
	m.Handle("POST /v2/reports/reconciliation/entries/{entryId}/explain", s.api(areaPayments, operator, s.handleReconExplain))
	m.Handle("POST /v2/reports/reconciliation/match", s.api(areaPayments, operator, s.handleReconMatch))

	m.Handle("GET /v2/callbacks", s.api(areaCallbacks, authed, s.handleCallbackList))
	m.Handle("GET /v2/callbacks/{id}", s.api(areaCallbacks, authed, s.handleCallbackGet))
	m.Handle("POST /v2/callbacks/{id}/resend", s.api(areaCallbacks, authed, s.handleCallbackResend))

	m.Handle("GET /v2/sandbox/clock", s.api(areaAuth, sandbox, s.handleClock))
	m.Handle("POST /v2/sandbox/clock/advance", s.api(areaAuth, sandbox, s.handleClockAdvance))
	m.Handle("POST /v2/sandbox/clock/reset", s.api(areaAuth, sandbox, s.handleClockReset))

	m.HandleFunc("GET /healthz", s.handleHealthz)
	m.HandleFunc("GET /readyz", s.handleReadyz)
	if s.cfg.Sandbox {
		// In production metrics are served only on PAYD_METRICS_ADDR.
		m.Handle("GET /metrics", s.metricsHandler())
	}
	m.HandleFunc("GET /openapi.json", s.handleOpenAPI)

	// The merchant's console; the root leads to it.
	m.Handle("/console", console)
	m.Handle("/console/", console)
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/console", http.StatusSeeOther) })

	if pages != nil {
		m.Handle("/", s.pagesOr404(pages))
	} else {
		m.HandleFunc("/", s.handleNoRoute)
	}
}

// pagesOr404 sends the API's and operations' unknown paths to the envelope
// 404/405 and everything else to the hosted pages.
func (s *Server) pagesOr404(pages http.Handler) http.Handler {
	pages = s.payerPages(pages)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Paths match case-sensitively, so /V2/rtp is unknown: it gets the
		// API's envelope too, not a page.
		if p := strings.ToLower(r.URL.Path); p == "/v2" || strings.HasPrefix(p, "/v2/") || p == "/metrics" {
			s.handleNoRoute(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	})
}

// payerPages puts the payer's pages, which anyone may request without a
// token, behind a limit per source address (PageRateAddr a minute; an
// IPv6 client's /64) and the API's admission control: a page request can
// load the database and, through a checkout's card, the acquirer, so no
// address may send them without bound and a flood waits its turn with the
// API's requests instead of crowding them out.
func (s *Server) payerPages(pages http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := s.clock.Now()
		if err := s.limits.pages.allow(limitKeyOf(addrKey(clientOf(r))), now); err != nil {
			pageRefusal(w, http.StatusTooManyRequests, err)
			return
		}
		if err := s.admit.enter(r.Context()); err != nil {
			pageRefusal(w, http.StatusServiceUnavailable, err)
			return
		}
		defer s.admit.leave()
		pages.ServeHTTP(w, r)
	})
}

// pageRefusal answers a page request refused by a limit, in plain text
// with the limit's Retry-After.
func pageRefusal(w http.ResponseWriter, status int, err error) {
	retry := "1"
	var pe *payd.Error
	if errors.As(err, &pe) && pe.Args["retryAfter"] != "" {
		retry = pe.Args["retryAfter"]
	}
	w.Header().Set("Retry-After", retry)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, http.StatusText(status)+". Please try again in a moment.\n")
}
