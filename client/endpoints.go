package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"payd"
)

// ---- Request to Pay ----

// RTPRequest is POST /v2/rtp.
type RTPRequest struct {
	Alias       string     `json:"alias"` // 373XXXXXXXX
	Amount      payd.Money `json:"amount"`
	Currency    string     `json:"currency"` // MDL
	Description string     `json:"description"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	OrderID     string     `json:"orderId,omitempty"`
	TerminalID  string     `json:"terminalId,omitempty"`
	CallbackURL string     `json:"callbackUrl,omitempty"`
	RedirectURL string     `json:"redirectUrl,omitempty"`
}

// RTPCreated is the result of CreateRTP.
type RTPCreated struct {
	RTPID     string    `json:"rtpId"`
	OrderID   string    `json:"orderId"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// RTP is an RTP record.
type RTP struct {
	RTPID       string     `json:"rtpId"`
	OrderID     string     `json:"orderId"`
	URL         string     `json:"url"`
	Amount      payd.Money `json:"amount"`
	Currency    string     `json:"currency"`
	Description string     `json:"description"`
	CallbackURL string     `json:"callbackUrl"`
	RedirectURL string     `json:"redirectUrl"`
	Status      string     `json:"status"` // Created, Active, Accepted, Rejected, Expired, Cancelled, Refunded
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	TerminalID  string     `json:"terminalId"`
}

// Status is the result of the cancel operations.
type Status struct {
	RTPID  string `json:"rtpId"`
	QRID   string `json:"qrId"`
	Status string `json:"status"`
}

// RTPDecision is the result of the sandbox's TestAcceptRTP and TestRejectRTP.
type RTPDecision struct {
	RTPID      string      `json:"rtpId"`
	RTPStatus  string      `json:"rtpStatus"`
	OrderID    string      `json:"orderId"`
	PayID      string      `json:"payId"`
	Amount     payd.Money  `json:"amount"`
	Commission *payd.Money `json:"commission"`
	Currency   string      `json:"currency"`
	PayerName  string      `json:"payerName"`
	PayerIBAN  string      `json:"payerIban"`
	ExecutedAt string      `json:"executedAt"`
	Signature  string      `json:"signature"`
}

// RefundRequest refunds a payment: Amount nil refunds what is left.
type RefundRequest struct {
	Amount      *payd.Money `json:"amount,omitempty"`
	Reason      string      `json:"reason"`
	CallbackURL string      `json:"callbackUrl,omitempty"`
}

// RefundCreated is the result of a refund request.
type RefundCreated struct {
	RefundID string `json:"refundId"`
	Status   string `json:"status"`
}

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
func (c *Client) CancelRTP(ctx context.Context, id, reason string) (*Status, error) {
	var out Status
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/cancel", map[string]string{"reason": reason}, &out)
}

// RefundRTP refunds an RTP payment in full (by its payId).
func (c *Client) RefundRTP(ctx context.Context, payID string, r RefundRequest) (*RefundCreated, error) {
	var out RefundCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(payID)+"/refund", r, &out)
}

// TestAcceptRTP (sandbox) plays the payer accepting with the RTP's amount.
func (c *Client) TestAcceptRTP(ctx context.Context, id string, amount payd.Money) (*RTPDecision, error) {
	var out RTPDecision
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-accept",
		map[string]any{"amount": amount, "currency": "MDL"}, &out)
}

// TestRejectRTP (sandbox) plays the payer rejecting.
func (c *Client) TestRejectRTP(ctx context.Context, id string) (*RTPDecision, error) {
	var out RTPDecision
	return &out, c.call(ctx, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-reject", nil, &out)
}

// ---- QR codes ----

// QRRequest is POST /v2/instant/qr. Type: Static or Dynamic; AmountType:
// Fixed (Amount), Controlled (AmountMin, AmountMax) or Free.
type QRRequest struct {
	Type        string      `json:"type"`
	AmountType  string      `json:"amountType"`
	Amount      *payd.Money `json:"amount,omitempty"`
	AmountMin   *payd.Money `json:"amountMin,omitempty"`
	AmountMax   *payd.Money `json:"amountMax,omitempty"`
	Currency    string      `json:"currency"`
	Description string      `json:"description,omitempty"`
	OrderID     string      `json:"orderId,omitempty"`
	CallbackURL string      `json:"callbackUrl,omitempty"`
	RedirectURL string      `json:"redirectUrl,omitempty"`
	TerminalID  string      `json:"terminalId,omitempty"`
	ExpiresAt   *time.Time  `json:"expiresAt,omitempty"` // Dynamic only
}

// ExtensionRequest gives a Hybrid QR its terms.
type ExtensionRequest struct {
	Amount      *payd.Money `json:"amount,omitempty"`
	AmountMin   *payd.Money `json:"amountMin,omitempty"`
	AmountMax   *payd.Money `json:"amountMax,omitempty"`
	Description string      `json:"description"`
	OrderID     string      `json:"orderId,omitempty"`
	CallbackURL string      `json:"callbackUrl,omitempty"`
	RedirectURL string      `json:"redirectUrl,omitempty"`
	ExpiresAt   time.Time   `json:"expiresAt"`
}

// HybridRequest is POST /v2/instant/qr/hybrid, optionally with the first extension.
type HybridRequest struct {
	AmountType string            `json:"amountType"`
	Currency   string            `json:"currency"`
	TerminalID string            `json:"terminalId,omitempty"`
	Extension  *ExtensionRequest `json:"extension,omitempty"`
}

// QRCreated is the result of CreateQR and CreateHybridQR.
type QRCreated struct {
	QRID        string    `json:"qrId"`
	ExtensionID string    `json:"extensionId"`
	OrderID     string    `json:"orderId"`
	Type        string    `json:"type"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// QR is a QR record.
type QR struct {
	QRID        string      `json:"qrId"`
	Type        string      `json:"type"`
	Status      string      `json:"status"`
	URL         string      `json:"url"`
	ExtensionID string      `json:"extensionId"`
	OrderID     string      `json:"orderId"`
	Description string      `json:"description"`
	CallbackURL string      `json:"callbackUrl"`
	RedirectURL string      `json:"redirectUrl"`
	AmountType  string      `json:"amountType"`
	Currency    string      `json:"currency"`
	TerminalID  string      `json:"terminalId"`
	Amount      *payd.Money `json:"amount"`
	AmountMin   *payd.Money `json:"amountMin"`
	AmountMax   *payd.Money `json:"amountMax"`
	CreatedAt   time.Time   `json:"createdAt"`
	UpdatedAt   time.Time   `json:"updatedAt"`
	ExpiresAt   time.Time   `json:"expiresAt"`
}

// Extension is an extension record.
type Extension struct {
	ExtensionID string      `json:"extensionId"`
	QRID        string      `json:"qrId"`
	Status      string      `json:"status"`
	Amount      *payd.Money `json:"amount"`
	AmountMin   *payd.Money `json:"amountMin"`
	AmountMax   *payd.Money `json:"amountMax"`
	Description string      `json:"description"`
	OrderID     string      `json:"orderId"`
	CallbackURL string      `json:"callbackUrl"`
	RedirectURL string      `json:"redirectUrl"`
	CreatedAt   time.Time   `json:"createdAt"`
	UpdatedAt   time.Time   `json:"updatedAt"`
	ExpiresAt   time.Time   `json:"expiresAt"`
}

// QRPayment is the QR area's payment record.
type QRPayment struct {
	PayID       string     `json:"payId"`
	ReferenceID string     `json:"referenceId"`
	QRID        string     `json:"qrId"`
	ExtensionID string     `json:"extensionId"`
	OrderID     string     `json:"orderId"`
	Amount      payd.Money `json:"amount"`
	Commission  payd.Money `json:"commission"`
	Currency    string     `json:"currency"`
	Description string     `json:"description"`
	PayerName   string     `json:"payerName"`
	PayerIBAN   string     `json:"payerIban"`
	Status      string     `json:"status"`
	ExecutedAt  time.Time  `json:"executedAt"`
	RefundedAt  *time.Time `json:"refundedAt"`
	TerminalID  string     `json:"terminalId"`
}

// TestPayment (sandbox) is a QR paid by TestPayQR.
type TestPayment struct {
	QRID         string     `json:"qrId"`
	QRStatus     string     `json:"qrStatus"`
	OrderID      string     `json:"orderId"`
	PayID        string     `json:"payId"`
	Amount       payd.Money `json:"amount"`
	Commission   payd.Money `json:"commission"`
	Currency     string     `json:"currency"`
	PayerName    string     `json:"payerName"`
	PayerIBAN    string     `json:"payerIban"`
	ExecutedAt   time.Time  `json:"executedAt"`
	SignatureKey string     `json:"signatureKey"`
}

// CreateQR creates a Static or Dynamic QR.
func (c *Client) CreateQR(ctx context.Context, r QRRequest) (*QRCreated, error) {
	var out QRCreated
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/qr", r, &out)
}

// CreateHybridQR creates a Hybrid QR.
func (c *Client) CreateHybridQR(ctx context.Context, r HybridRequest) (*QRCreated, error) {
	var out QRCreated
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
func (c *Client) CancelQR(ctx context.Context, id, reason string) (*Status, error) {
	var out Status
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/qr/"+url.PathEscape(id)+"/cancel", map[string]string{"reason": reason}, &out)
}

// CreateExtension gives a Hybrid QR new terms; it returns the extensionId.
func (c *Client) CreateExtension(ctx context.Context, qrID string, r ExtensionRequest) (string, error) {
	var out struct {
		ExtensionID string `json:"extensionId"`
	}
	err := c.call(ctx, http.MethodPost, "/v2/instant/qr/"+url.PathEscape(qrID)+"/extension", r, &out)
	return out.ExtensionID, err
}

// CancelExtension cancels a Hybrid QR's active extension; it returns its id.
func (c *Client) CancelExtension(ctx context.Context, qrID string) (string, error) {
	var out struct {
		ExtensionID string `json:"extensionId"`
	}
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
	return &out, c.call(ctx, http.MethodPost, "/v2/instant/test-pay", map[string]any{"qrId": qrID, "amount": amount,
		"currency": "MDL", "payerName": payerName, "iban": iban}, &out)
}

// ---- Checkouts ----

// CheckoutRequest is POST /v2/checkouts.
type CheckoutRequest struct {
	Amount      payd.Money `json:"amount"`
	Currency    string     `json:"currency"`
	Language    string     `json:"language,omitempty"` // ro, ru, en
	CallbackURL string     `json:"callbackUrl,omitempty"`
	SuccessURL  string     `json:"successUrl,omitempty"`
	FailURL     string     `json:"failUrl,omitempty"`
	OrderInfo   *OrderInfo `json:"orderInfo,omitempty"`
	PayerInfo   *PayerInfo `json:"payerInfo,omitempty"`
}

// OrderInfo describes the order a checkout pays.
type OrderInfo struct {
	ID               string      `json:"id,omitempty"`
	Description      string      `json:"description,omitempty"`
	OrderAmount      *payd.Money `json:"orderAmount,omitempty"`
	OrderCurrency    string      `json:"orderCurrency,omitempty"`
	Date             *time.Time  `json:"date,omitempty"`
	DeliveryAmount   *payd.Money `json:"deliveryAmount,omitempty"`
	DeliveryCurrency string      `json:"deliveryCurrency,omitempty"`
	Items            []OrderItem `json:"items,omitempty"`
}

// OrderItem is one line of an order. Quantity is a decimal (2, 0.5).
type OrderItem struct {
	ExternalID   string      `json:"externalId,omitempty"`
	Title        string      `json:"title,omitempty"`
	Amount       *payd.Money `json:"amount,omitempty"`
	Currency     string      `json:"currency,omitempty"`
	Quantity     float64     `json:"quantity,omitempty"`
	DisplayOrder int         `json:"displayOrder,omitempty"`
}

// PayerInfo is what the merchant knows of the payer.
type PayerInfo struct {
	Name      string `json:"name,omitempty"`
	Email     string `json:"email,omitempty"`
	Phone     string `json:"phone,omitempty"`
	IP        string `json:"ip,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
}

// CheckoutCreated is the result of CreateCheckout: send the buyer to CheckoutURL.
type CheckoutCreated struct {
	CheckoutID  string `json:"checkoutId"`
	CheckoutURL string `json:"checkoutUrl"`
}

// Checkout is a checkout record.
type Checkout struct {
	ID          string           `json:"id"`
	CreatedAt   time.Time        `json:"createdAt"`
	Status      string           `json:"status"`
	Amount      payd.Money       `json:"amount"`
	Currency    string           `json:"currency"`
	CallbackURL *string          `json:"callbackUrl"`
	SuccessURL  *string          `json:"successUrl"`
	FailURL     *string          `json:"failUrl"`
	Language    string           `json:"language"`
	URL         string           `json:"url"`
	ExpiresAt   time.Time        `json:"expiresAt"`
	CompletedAt *time.Time       `json:"completedAt"`
	FailedAt    *time.Time       `json:"failedAt"`
	CancelledAt *time.Time       `json:"cancelledAt"`
	Order       *CheckoutOrder   `json:"order"`
	Payer       *PayerInfo       `json:"payer"`
	Payment     *CheckoutPayment `json:"payment"`
}

// CheckoutOrder is the order a checkout pays, as its record shows it.
type CheckoutOrder struct {
	ID               *string     `json:"id"`
	Description      *string     `json:"description"`
	Amount           *payd.Money `json:"amount"`
	Currency         *string     `json:"currency"`
	DeliveryAmount   *payd.Money `json:"deliveryAmount"`
	DeliveryCurrency *string     `json:"deliveryCurrency"`
	Date             *time.Time  `json:"date"`
	Items            []OrderItem `json:"orderItems"`
}

// CheckoutPayment is the payment of a checkout.
type CheckoutPayment struct {
	PaymentID       string     `json:"paymentId"`
	ExecutedAt      time.Time  `json:"executedAt"`
	Status          string     `json:"status"`
	Amount          payd.Money `json:"amount"`
	Currency        string     `json:"currency"`
	PaymentMethod   *string    `json:"paymentMethod"`
	RefundedAmount  payd.Money `json:"refundedAmount"`
	ReferenceNumber string     `json:"referenceNumber"`
}

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
func (c *Client) CancelCheckout(ctx context.Context, id string) (*Status, error) {
	var out struct {
		CheckoutID string `json:"checkoutId"`
		Status     string `json:"status"`
	}
	err := c.call(ctx, http.MethodPost, "/v2/checkouts/"+url.PathEscape(id)+"/cancel", nil, &out)
	return &Status{Status: out.Status}, err
}

// ---- Payments and refunds ----

// Payment is a payments-area record.
type Payment struct {
	PaymentID              string     `json:"paymentId"`
	PaymentIntentID        string     `json:"paymentIntentId"`
	ExecutedAt             time.Time  `json:"executedAt"`
	Status                 string     `json:"status"` // Executed, PartiallyRefunded, Refunded, Failed
	Amount                 payd.Money `json:"amount"`
	Currency               string     `json:"currency"`
	Type                   string     `json:"type"`
	ProviderType           string     `json:"providerType"`
	PaymentMethod          string     `json:"paymentMethod"`
	SenderName             *string    `json:"senderName"`
	SenderIBAN             *string    `json:"senderIban"`
	RecipientIBAN          *string    `json:"recipientIban"`
	MCC                    string     `json:"mcc"`
	ReferenceNumber        string     `json:"referenceNumber"`
	OrderID                *string    `json:"orderId"`
	TerminalID             *string    `json:"terminalId"`
	ApprovalCode           *string    `json:"approvalCode"`
	PaymentEntryPoint      string     `json:"paymentEntryPoint"` // API or Checkout
	Note                   *string    `json:"note"`
	RequestedRefundAmount  payd.Money `json:"requestedRefundAmount"`
	RefundedAmount         payd.Money `json:"refundedAmount"`
	RefundableAmount       payd.Money `json:"refundableAmount"`
	IsRefundable           bool       `json:"isRefundable"`
	PartialRefundAvailable bool       `json:"partialRefundAvailable"`
	FirstRefundedAt        *time.Time `json:"firstRefundedAt"`
	LastRefundedAt         *time.Time `json:"lastRefundedAt"`
}

// Refund is a refund record.
type Refund struct {
	ID           string     `json:"id"`
	RefundID     string     `json:"refundId"` // the same as ID, as the refund's creation names it
	PaymentID    string     `json:"paymentId"`
	RefundType   string     `json:"refundType"` // Full or Partial
	Amount       payd.Money `json:"amount"`
	Currency     string     `json:"currency"`
	RefundReason string     `json:"refundReason"`
	ExecutedAt   *time.Time `json:"executedAt"`
	Status       string     `json:"status"` // Created, Requested, Accepted, Rejected, Manual
}

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

// CallbackItem is a callback in the log.
type CallbackItem struct {
	CallbackID     string     `json:"callbackId"`
	Event          string     `json:"event"`
	ObjectID       string     `json:"objectId"`
	URL            string     `json:"url"`
	State          string     `json:"state"` // Pending, Delivered, Failed
	Attempts       int        `json:"attempts"`
	CreatedAt      time.Time  `json:"createdAt"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt"`
	DeliveredAt    *time.Time `json:"deliveredAt"`
	LastStatusCode *int       `json:"lastStatusCode"`
	LastError      *string    `json:"lastError"`
}

// CallbackDetail is a callback with what was sent and every attempt.
type CallbackDetail struct {
	CallbackItem
	Body       string            `json:"body"`
	Headers    map[string]string `json:"headers"`
	AttemptLog []struct {
		Attempt      int       `json:"attempt"`
		StartedAt    time.Time `json:"startedAt"`
		DurationMS   int64     `json:"durationMs"`
		StatusCode   *int      `json:"statusCode"`
		Error        *string   `json:"error"`
		ResponseBody *string   `json:"responseBody"`
	} `json:"attemptLog"`
}

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

// Clock is the merchant's time on the sandbox's test clock.
type Clock struct {
	Now           time.Time `json:"now"`
	OffsetSeconds int64     `json:"offsetSeconds"`
}

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
