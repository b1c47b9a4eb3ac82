package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"payd"
	"payd/client/internal/wire"
)

// ---- Request to Pay ----

// CreateRTP asks a payer, by phone alias, to pay.
func (c *Client) CreateRTP(ctx context.Context, r RTPRequest) (*RTPCreated, error) {
	var out RTPCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp", r, &out)
}

// RTP reads one RTP.
func (c *Client) RTP(ctx context.Context, id string) (*RTP, error) {
	var out RTP
	return &out, c.call(ctx, http.MethodGet, "/v2/rtp/"+url.PathEscape(id), nil, &out)
}

// RTPs lists RTPs (filters: status, orderId, description, amount, createdAtFrom…).
func (c *Client) RTPs(ctx context.Context, o ListOptions) (*Page[RTP], error) {
	var out Page[RTP]
	return &out, c.call(ctx, http.MethodGet, "/v2/rtp"+o.query(), nil, &out)
}

// CancelRTP cancels an open RTP.
func (c *Client) CancelRTP(ctx context.Context, id, reason string) (*RTPCancelled, error) {
	var out RTPCancelled
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/cancel", wire.CancelRequest{Reason: reason}, &out)
}

// RefundRTP refunds an RTP payment in full (by its payId).
func (c *Client) RefundRTP(ctx context.Context, payID string, r RTPRefund) (*RefundCreated, error) {
	var out RefundCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(payID)+"/refund", r, &out)
}

// TestAcceptRTP (sandbox) plays the payer accepting with the RTP's amount.
func (c *Client) TestAcceptRTP(ctx context.Context, id string, amount payd.Money) (*RTPDecision, error) {
	var out RTPDecision
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-accept",
		wire.TestAccept{Amount: amount, Currency: "MDL"}, &out)
}

// TestRejectRTP (sandbox) plays the payer rejecting.
func (c *Client) TestRejectRTP(ctx context.Context, id string) (*RTPDecision, error) {
	var out RTPDecision
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-reject", nil, &out)
}

// ---- QR codes ----

// CreateQR creates a Static or Dynamic QR.
func (c *Client) CreateQR(ctx context.Context, r QRRequest) (*QRCreated, error) {
	var out QRCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/qr", r, &out)
}

// CreateHybridQR creates a Hybrid QR.
func (c *Client) CreateHybridQR(ctx context.Context, r HybridRequest) (*HybridCreated, error) {
	var out HybridCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/qr/hybrid", r, &out)
}

// QR reads one QR.
func (c *Client) QR(ctx context.Context, id string) (*QR, error) {
	var out QR
	return &out, c.call(ctx, http.MethodGet, "/v2/instant/qr/"+url.PathEscape(id), nil, &out)
}

// QRs lists QRs.
func (c *Client) QRs(ctx context.Context, o ListOptions) (*Page[QR], error) {
	var out Page[QR]
	return &out, c.call(ctx, http.MethodGet, "/v2/instant/qr"+o.query(), nil, &out)
}

// CancelQR cancels a QR (and its active extension).
func (c *Client) CancelQR(ctx context.Context, id, reason string) (*QRCancelled, error) {
	var out QRCancelled
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/qr/"+url.PathEscape(id)+"/cancel", wire.CancelRequest{Reason: reason}, &out)
}

// CreateExtension gives a Hybrid QR new terms; it returns the extensionId.
func (c *Client) CreateExtension(ctx context.Context, qrID string, r ExtensionRequest) (string, error) {
	var out wire.ExtensionRef
	err := c.call(ctx, http.MethodPost, "/v2/instant/qr/"+url.PathEscape(qrID)+"/extension", r, &out)
	return out.ExtensionID, err
}

// CancelExtension cancels a Hybrid QR's active extension; it returns its id.
func (c *Client) CancelExtension(ctx context.Context, qrID string) (string, error) {
	var out wire.ExtensionRef
	err := c.call(ctx, http.MethodPost, "/v2/instant/qr/"+url.PathEscape(qrID)+"/extension/cancel", nil, &out)
	return out.ExtensionID, err
}

// Extensions lists extensions (filters: qrId, status, …).
func (c *Client) Extensions(ctx context.Context, o ListOptions) (*Page[Extension], error) {
	var out Page[Extension]
	return &out, c.call(ctx, http.MethodGet, "/v2/instant/qr/extension"+o.query(), nil, &out)
}

// QRPayment reads one QR payment.
func (c *Client) QRPayment(ctx context.Context, payID string) (*QRPayment, error) {
	var out QRPayment
	return &out, c.call(ctx, http.MethodGet, "/v2/instant/payments/"+url.PathEscape(payID), nil, &out)
}

// QRPayments lists QR payments (filters: qrId, extensionId, orderId, …).
func (c *Client) QRPayments(ctx context.Context, o ListOptions) (*Page[QRPayment], error) {
	var out Page[QRPayment]
	return &out, c.call(ctx, http.MethodGet, "/v2/instant/payments"+o.query(), nil, &out)
}

// TestPayQR (sandbox) pays a QR as a payer would.
func (c *Client) TestPayQR(ctx context.Context, qrID string, amount payd.Money, payerName, iban string) (*TestPayment, error) {
	var out TestPayment
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/test-pay", wire.TestPay{QRID: qrID, Amount: amount,
		Currency: "MDL", PayerName: payerName, IBAN: iban}, &out)
}

// ---- Checkouts ----

// CreateCheckout registers a hosted checkout.
func (c *Client) CreateCheckout(ctx context.Context, r CheckoutRequest) (*CheckoutCreated, error) {
	var out CheckoutCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/checkouts", r, &out)
}

// Checkout reads one checkout.
func (c *Client) Checkout(ctx context.Context, id string) (*Checkout, error) {
	var out Checkout
	return &out, c.call(ctx, http.MethodGet, "/v2/checkouts/"+url.PathEscape(id), nil, &out)
}

// Checkouts lists checkouts.
func (c *Client) Checkouts(ctx context.Context, o ListOptions) (*Page[Checkout], error) {
	var out Page[Checkout]
	return &out, c.call(ctx, http.MethodGet, "/v2/checkouts"+o.query(), nil, &out)
}

// CancelCheckout cancels a checkout that is not finished.
func (c *Client) CancelCheckout(ctx context.Context, id string) (*CheckoutCancelled, error) {
	var out CheckoutCancelled
	return &out, c.call(ctx, http.MethodPost, "/v2/checkouts/"+url.PathEscape(id)+"/cancel", nil, &out)
}

// ---- Payments and refunds ----

// Payment reads one payment of any area.
func (c *Client) Payment(ctx context.Context, id string) (*Payment, error) {
	var out Payment
	return &out, c.call(ctx, http.MethodGet, "/v2/payments/"+url.PathEscape(id), nil, &out)
}

// Payments lists payments (filters: paymentIntentId, orderId, status, …).
func (c *Client) Payments(ctx context.Context, o ListOptions) (*Page[Payment], error) {
	var out Page[Payment]
	return &out, c.call(ctx, http.MethodGet, "/v2/payments"+o.query(), nil, &out)
}

// Refund refunds a payment, in full or (QR and card payments) in part.
func (c *Client) Refund(ctx context.Context, payID string, r RefundRequest) (*RefundCreated, error) {
	var out RefundCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/payments/"+url.PathEscape(payID)+"/refund", r, &out)
}

// RefundStatus reads one refund.
func (c *Client) RefundStatus(ctx context.Context, id string) (*Refund, error) {
	var out Refund
	return &out, c.call(ctx, http.MethodGet, "/v2/payments/refunds/"+url.PathEscape(id), nil, &out)
}

// ---- Callback log ----

// Callbacks lists your callbacks (filters: state, event, objectId, createdAtFrom, createdAtTo).
func (c *Client) Callbacks(ctx context.Context, o ListOptions) (*Page[CallbackItem], error) {
	var out Page[CallbackItem]
	return &out, c.call(ctx, http.MethodGet, "/v2/callbacks"+o.query(), nil, &out)
}

// Callback reads one callback with its body, headers and attempts.
func (c *Client) Callback(ctx context.Context, id string) (*CallbackDetail, error) {
	var out CallbackDetail
	return &out, c.call(ctx, http.MethodGet, "/v2/callbacks/"+url.PathEscape(id), nil, &out)
}

// ResendCallback queues a callback again, in any state.
func (c *Client) ResendCallback(ctx context.Context, id string) (*CallbackItem, error) {
	var out CallbackItem
	return &out, c.call(ctx, http.MethodPost, "/v2/callbacks/"+url.PathEscape(id)+"/resend", nil, &out)
}

// ---- The sandbox's test clock ----

// SandboxClock reads your test clock (sandbox only).
func (c *Client) SandboxClock(ctx context.Context) (*Clock, error) {
	var out Clock
	return &out, c.call(ctx, http.MethodGet, "/v2/sandbox/clock", nil, &out)
}

// AdvanceSandboxClock moves your test clock forward (1 s to 365 days):
// expiries, inactivity, retries and settlements follow at once.
func (c *Client) AdvanceSandboxClock(ctx context.Context, d time.Duration) (*Clock, error) {
	var out Clock
	return &out, c.call(ctx, http.MethodPost, "/v2/sandbox/clock/advance", map[string]int64{"seconds": int64(d / time.Second)}, &out)
}

// ResetSandboxClock puts your test clock back on real time.
func (c *Client) ResetSandboxClock(ctx context.Context) (*Clock, error) {
	var out Clock
	return &out, c.call(ctx, http.MethodPost, "/v2/sandbox/clock/reset", nil, &out)
}
