package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"payd"
)

// statuses is the one table from error code to HTTP status (spec §0.10).
var statuses = map[string]int{
	payd.CodeInternal:            http.StatusInternalServerError,
	payd.CodeBadCredentials:      http.StatusUnauthorized,
	payd.CodeInvalidParameter:    http.StatusBadRequest,
	payd.CodeInvalidRequest:      http.StatusBadRequest,
	payd.CodeQRCurrency:          http.StatusBadRequest,
	payd.CodeQRSorting:           http.StatusBadRequest,
	payd.CodeQRType:              http.StatusBadRequest,
	payd.CodeQRStatus:            http.StatusBadRequest,
	payd.CodeExpiresAtWindow:     http.StatusBadRequest,
	payd.CodeMissingCredentials:  http.StatusBadRequest,
	payd.CodeQRNotFound:          http.StatusNotFound,
	payd.CodeMerchantInactive:    http.StatusForbidden,
	payd.CodePaymentNotFound:     http.StatusNotFound,
	payd.CodeQRAlreadyCancelled:  http.StatusConflict,
	payd.CodeQRTypeUnsupported:   http.StatusConflict,
	payd.CodeAmountRequired:      http.StatusBadRequest,
	payd.CodeAmountBoundsMissing: http.StatusBadRequest,
	payd.CodeNotRefundable:       http.StatusConflict,
	payd.CodeAlreadyRefunded:     http.StatusConflict,
	payd.CodeRefundTooLarge:      http.StatusConflict,
	payd.CodeQRState:             http.StatusConflict,
	payd.CodeRTPCurrency:         http.StatusBadRequest,
	payd.CodeRTPStatusFilter:     http.StatusBadRequest,
	payd.CodeRTPSorting:          http.StatusBadRequest,
	payd.CodeRTPNotFound:         http.StatusNotFound,
	payd.CodeRTPMerchantInactive: http.StatusForbidden,
	payd.CodeRTPState:            http.StatusConflict,
	payd.CodeAliasNotEnrolled:    http.StatusConflict,
	payd.CodePartialRefund:       http.StatusConflict,
	payd.CodeCheckoutCurrency:    http.StatusBadRequest,
	payd.CodeCheckoutAmount:      http.StatusBadRequest,
	payd.CodeCheckoutNegative:    http.StatusBadRequest,
	payd.CodeCheckoutQuantity:    http.StatusBadRequest,
	payd.CodeCheckoutLanguage:    http.StatusBadRequest,
	payd.CodeCheckoutFormat:      http.StatusBadRequest,
	payd.CodeCheckoutMissing:     http.StatusBadRequest,
	payd.CodeCheckoutPaging:      http.StatusBadRequest,
	payd.CodeCheckoutNotFound:    http.StatusNotFound,
	payd.CodeCheckoutInactive:    http.StatusForbidden,
	payd.CodeCheckoutState:       http.StatusConflict,
	payd.CodeNoRoute:             http.StatusNotFound,
	payd.CodeUnauthorized:        http.StatusUnauthorized,
	payd.CodeSandboxOnly:         http.StatusForbidden,
	payd.CodeBodyTooLarge:        http.StatusRequestEntityTooLarge,
	payd.CodeMediaType:           http.StatusUnsupportedMediaType,
	payd.CodeRateLimited:         http.StatusTooManyRequests,
	payd.CodeRefundNotFound:      http.StatusNotFound,
	payd.CodeIdempotencyMismatch: http.StatusUnprocessableEntity,
	payd.CodeIdempotencyBusy:     http.StatusConflict,
	payd.CodeUnavailable:         http.StatusServiceUnavailable,
	payd.CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	payd.CodeCallbackNotFound:    http.StatusNotFound,
}

// HTTPStatus is the status a payd error code answers with.
func HTTPStatus(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type wireError struct {
	ErrorCode    string            `json:"errorCode"`
	ErrorMessage string            `json:"errorMessage"`
	ErrorArgs    map[string]string `json:"errorArgs,omitempty"`
}

type okEnvelope struct {
	OK     bool `json:"ok"`
	Result any  `json:"result"`
}

type failEnvelope struct {
	OK     bool        `json:"ok"`
	Errors []wireError `json:"errors"`
}

// jsonContentType is every JSON response's Content-Type, one value shared
// by all: the response writer copies a header's values when it sends them.
var jsonContentType = []string{"application/json; charset=utf-8"}

// envelopes holds the buffers respond writes envelopes into: the response
// writer copies what it is given, so a buffer serves again once written.
var envelopes = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// respond writes the success envelope around result.
func respond(w http.ResponseWriter, result any) error {
	if a, ok := result.(jsonAppender); ok {
		bp := envelopes.Get().(*[]byte)
		b := appendEnvelope((*bp)[:0], a)
		writeJSON(w, http.StatusOK, b)
		if cap(b) <= 64<<10 { // a rare long list's buffer is not kept
			*bp = b[:0]
			envelopes.Put(bp)
		}
		return nil
	}
	b, err := json.Marshal(okEnvelope{OK: true, Result: result})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	w.Write(b)
}

// fail writes the failure envelope for err. A payd.Error or payd.Errors is
// the client's to see; anything else is logged with the request id and
// answered with code 10000 and no detail.
func fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var items []*payd.Error
	var pe *payd.Error
	var pes payd.Errors
	switch {
	case errors.As(err, &pes):
		items = pes
	case errors.As(err, &pe):
		items = []*payd.Error{pe}
	case r.Context().Err() != nil:
		// The client went away; nobody will read this answer. It is
		// logged and counted as 499, not as a server error.
		log.InfoContext(r.Context(), "request abandoned by the client", "request_id", requestID(r.Context()), "err", err)
		b, _ := json.Marshal(failEnvelope{Errors: []wireError{{ErrorCode: payd.CodeInternal, ErrorMessage: payd.E(payd.CodeInternal).Message}}})
		writeJSON(w, statusClientClosed, b)
		return
	case unavailable(err):
		// Out of time or connections under load: the client may retry.
		log.WarnContext(r.Context(), "store unavailable", "request_id", requestID(r.Context()), "err", err)
		items = []*payd.Error{errOverloaded}
	default:
		log.ErrorContext(r.Context(), "internal error", "request_id", requestID(r.Context()), "err", err)
		items = []*payd.Error{payd.E(payd.CodeInternal)}
	}
	env := failEnvelope{Errors: make([]wireError, len(items))}
	for i, e := range items {
		env.Errors[i] = wireError{ErrorCode: e.Code, ErrorMessage: e.Message, ErrorArgs: e.Args}
	}
	status := HTTPStatus(items[0].Code)
	if ra := items[0].Args["retryAfter"]; (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	if status == http.StatusUnauthorized && r.URL.Path != "/v2/auth/token" {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	b, _ := json.Marshal(env)
	writeJSON(w, status, b)
}
