package maibecomm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"payd"
)

// CallbackPath is where the acquirer posts its final responses, under
// payd's public URL.
const CallbackPath = "/acquirer/maib-ecomm/callback"

// Callback is the endpoint of the acquirer's final responses. A callback
// is taken only with a valid signature, and then only as news: payd asks
// the acquirer (pay-info) what became of the payment and applies that,
// once. Answers: 200 when applied (or applied before), 401 for a missing
// or wrong signature, 400 for an unreadable body, 404 for a payment payd
// did not start, 503 when the acquirer or the database could not be
// asked (the acquirer sends again).
type Callback struct {
	Client *Client
	Ledger payd.Ledger
	Clock  payd.Clock
	Log    *slog.Logger
}

func (h *Callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	var body struct {
		Result    map[string]any `json:"result"`
		Signature string         `json:"signature"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&body); err != nil || body.Result == nil {
		http.Error(w, "a JSON object with result and signature is required", http.StatusBadRequest)
		return
	}
	if body.Signature == "" || !Verify(body.Result, body.Signature, h.Client.SignatureKey) {
		h.Log.Warn("acquirer callback with a bad signature refused", "remote", r.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	payID, _ := body.Result["payId"].(string)
	if payID == "" {
		http.Error(w, "result.payId is required", http.StatusBadRequest)
		return
	}
	// The callback says something happened; the acquirer's own record says what.
	checkoutID, o, err := h.Client.checkoutOf(r.Context(), payID)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		http.Error(w, "unknown payment", http.StatusNotFound)
		return
	case err != nil:
		h.Log.Warn("acquirer callback: pay-info failed; the acquirer will send again", "pay_id", payID, "err", err)
		http.Error(w, "could not confirm the payment now", http.StatusServiceUnavailable)
		return
	case !o.Final():
		// Nothing to apply yet; the poller asks again on its schedule.
		w.WriteHeader(http.StatusOK)
		return
	}
	err = payd.ApplyCardOutcome(r.Context(), h.Ledger, checkoutID, o, h.Clock.Now())
	switch {
	case errors.Is(err, payd.ErrNotFound):
		http.Error(w, "unknown payment", http.StatusNotFound)
	case err != nil:
		h.Log.Error("acquirer callback not applied; the acquirer will send again", "pay_id", payID, "err", err)
		http.Error(w, "not applied; send it again", http.StatusServiceUnavailable)
	default:
		h.Log.Info("card payment outcome applied", "pay_id", payID, "checkout_id", checkoutID, "state", o.State)
		w.WriteHeader(http.StatusOK)
	}
}
