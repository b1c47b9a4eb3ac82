// Package callback verifies and decodes the callbacks payd sends to a
// merchant: the X-Signature HMAC every callback carries, the SHA-256 body
// signature of QR, RTP and refund callbacks, and the typed events.
//
//	v := callback.NewVerifier(signatureKey)
//	http.Handle("/payd", v.Handler(callback.NewMemoryDedup(), func(ctx context.Context, e *callback.Event) error {
//		// mark the order paid; return an error to have payd deliver it again
//	}))
//
// The algorithms are those of docs/callbacks.md; the golden vectors in
// testdata/callbacks.json are checked by this package's tests and by
// payd's own, so the two cannot drift apart.
package callback

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"payd"
)

// Events payd sends.
const (
	EventQRPayment         = "qr.payment.executed"
	EventRTPAccepted       = "rtp.accepted"
	EventRefundAccepted    = "refund.accepted"
	EventCheckoutCompleted = "checkout.completed"
	EventCheckoutFailed    = "checkout.failed"
)

// DefaultSchedule is payd's default redelivery schedule (PAYD_CALLBACK_SCHEDULE).
var DefaultSchedule = []time.Duration{
	10 * time.Second, 60 * time.Second, 300 * time.Second, 600 * time.Second,
	3600 * time.Second, 43200 * time.Second, 86400 * time.Second,
}

// Verifier checks callbacks signed with one merchant's signature key.
type Verifier struct {
	Key string
	// Tolerance is how old X-Signature-Timestamp may be on a first attempt
	// (and how far ahead of the clock); 0 turns the check off.
	//
	// payd fixes the timestamp when the callback is created and sends the
	// same one on every redelivery, so a redelivery is allowed to be older
	// by the delays of Schedule before its attempt (plus 10 % jitter).
	Tolerance time.Duration
	Schedule  []time.Duration // DefaultSchedule when nil
	Now       func() time.Time
}

// NewVerifier returns a verifier for key with a 5-minute tolerance.
func NewVerifier(key string) *Verifier { return &Verifier{Key: key, Tolerance: 5 * time.Minute} }

// Errors of verification. Each wraps ErrInvalid.
var (
	ErrInvalid       = errors.New("callback: invalid")
	ErrSignature     = fmt.Errorf("%w: X-Signature does not match", ErrInvalid)
	ErrBodySignature = fmt.Errorf("%w: body signature does not match", ErrInvalid)
	ErrTimestamp     = fmt.Errorf("%w: X-Signature-Timestamp outside the tolerance", ErrInvalid)
	ErrMalformed     = fmt.Errorf("%w: malformed", ErrInvalid)
)

// HMAC is Base64(HMAC-SHA256(key, body + "." + timestamp)), the value of
// X-Signature after "sha256=".
func HMAC(key string, body []byte, timestampMS int64) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	m.Write([]byte("." + strconv.FormatInt(timestampMS, 10)))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// BodySignature is the SHA-256 signature of a QR, RTP or refund callback's
// result: the non-empty top-level values (amounts with two decimals) in
// case-insensitive name order, joined by ':', then ':' and the key,
// hashed with SHA-256 and Base64-encoded.
func BodySignature(key string, result json.RawMessage) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil {
		return "", fmt.Errorf("%w: result is not an object", ErrMalformed)
	}
	type kv struct{ k, v string }
	var kept []kv
	for k, raw := range fields {
		raw = bytes.TrimSpace(raw)
		var v string
		switch {
		case len(raw) == 0 || string(raw) == "null":
			continue
		case raw[0] == '"':
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", fmt.Errorf("%w: %s", ErrMalformed, k)
			}
		case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
			m, err := payd.ParseMoney(string(raw))
			if err != nil {
				return "", fmt.Errorf("%w: %s is not an amount", ErrMalformed, k)
			}
			v = m.String()
		default:
			v = string(raw)
		}
		if strings.TrimSpace(v) == "" {
			continue
		}
		kept = append(kept, kv{k, v})
	}
	sort.SliceStable(kept, func(i, j int) bool { return strings.ToLower(kept[i].k) < strings.ToLower(kept[j].k) })
	var b strings.Builder
	for _, f := range kept {
		b.WriteString(f.v)
		b.WriteByte(':')
	}
	b.WriteString(key)
	sum := sha256.Sum256([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// Verify checks a callback's headers and body and decodes it. The body
// must be the exact bytes received.
func (v *Verifier) Verify(h http.Header, body []byte) (*Event, error) {
	ts, err := strconv.ParseInt(h.Get("X-Signature-Timestamp"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: no X-Signature-Timestamp", ErrMalformed)
	}
	want := "sha256=" + HMAC(v.Key, body, ts)
	if subtle.ConstantTimeCompare([]byte(h.Get("X-Signature")), []byte(want)) != 1 {
		return nil, ErrSignature
	}
	attempt, _ := strconv.Atoi(h.Get("X-Callback-Attempt"))
	if err := v.checkAge(ts, attempt); err != nil {
		return nil, err
	}
	e := &Event{ID: h.Get("X-Callback-Id"), Name: h.Get("X-Callback-Event"), Attempt: attempt, Timestamp: time.UnixMilli(ts).UTC()}
	if err := e.decode(v.Key, body); err != nil {
		return nil, err
	}
	return e, nil
}

func (v *Verifier) checkAge(ts int64, attempt int) error {
	if v.Tolerance <= 0 {
		return nil
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	allowed := v.Tolerance
	schedule := v.Schedule
	if schedule == nil {
		schedule = DefaultSchedule
	}
	for i := 0; i < attempt-1 && i < len(schedule); i++ {
		allowed += schedule[i] + schedule[i]/10
	}
	if age := now.Sub(time.UnixMilli(ts)); age > allowed || age < -v.Tolerance {
		return ErrTimestamp
	}
	return nil
}

// Event is a verified callback.
type Event struct {
	ID        string    // X-Callback-Id: the same on every attempt; deduplicate on it
	Name      string    // X-Callback-Event, e.g. EventQRPayment
	Attempt   int       // X-Callback-Attempt
	Timestamp time.Time // when payd created the callback
	// Exactly one of these is set, by Name.
	QRPayment *QRPayment
	RTP       *RTPAccepted
	Refund    *RefundAccepted
	Checkout  *Checkout
}

// QRPayment is the body of qr.payment.executed.
type QRPayment struct {
	QRID        string     `json:"qrId"`
	ExtensionID string     `json:"extensionId"`
	QRStatus    string     `json:"qrStatus"`
	PayID       string     `json:"payId"`
	ReferenceID string     `json:"referenceId"`
	OrderID     string     `json:"orderId"`
	Amount      payd.Money `json:"amount"`
	Commission  payd.Money `json:"commission"`
	Currency    string     `json:"currency"`
	PayerName   string     `json:"payerName"`
	PayerIBAN   string     `json:"payerIban"`
	ExecutedAt  string     `json:"executedAt"`
	TerminalID  string     `json:"terminalId"`
}

// RTPAccepted is the body of rtp.accepted.
type RTPAccepted struct {
	RTPID      string     `json:"rtpId"`
	RTPStatus  string     `json:"rtpStatus"`
	OrderID    string     `json:"orderId"`
	PayID      string     `json:"payId"`
	Amount     payd.Money `json:"amount"`
	Commission payd.Money `json:"commission"`
	Currency   string     `json:"currency"`
	PayerName  string     `json:"payerName"`
	PayerIBAN  string     `json:"payerIban"`
	ExecutedAt string     `json:"executedAt"`
}

// RefundAccepted is the body of refund.accepted.
type RefundAccepted struct {
	RefundID   string     `json:"refundId"`
	PayID      string     `json:"payId"`
	Amount     payd.Money `json:"amount"`
	Currency   string     `json:"currency"`
	Status     string     `json:"status"`
	RefundType string     `json:"refundType"`
	ExecutedAt string     `json:"executedAt"`
	OrderID    string     `json:"orderId"`
}

// Checkout is the body of checkout.completed and checkout.failed.
type Checkout struct {
	CheckoutID               string      `json:"checkoutId"`
	TerminalID               *string     `json:"terminalId"`
	Amount                   payd.Money  `json:"amount"`
	Currency                 string      `json:"currency"`
	CompletedAt              *string     `json:"completedAt"`
	PayerName                *string     `json:"payerName"`
	PayerEmail               *string     `json:"payerEmail"`
	PayerPhone               *string     `json:"payerPhone"`
	PayerIP                  *string     `json:"payerIp"`
	OrderID                  *string     `json:"orderId"`
	OrderDescription         *string     `json:"orderDescription"`
	OrderDeliveryAmount      *payd.Money `json:"orderDeliveryAmount"`
	OrderDeliveryCurrency    *string     `json:"orderDeliveryCurrency"`
	PaymentID                string      `json:"paymentId"`
	PaymentAmount            payd.Money  `json:"paymentAmount"`
	PaymentCurrency          string      `json:"paymentCurrency"`
	PaymentStatus            string      `json:"paymentStatus"` // Executed or Failed
	PaymentExecutedAt        string      `json:"paymentExecutedAt"`
	SenderIBAN               *string     `json:"senderIban"`
	SenderName               *string     `json:"senderName"`
	SenderCardNumber         *string     `json:"senderCardNumber"`
	RetrievalReferenceNumber string      `json:"retrievalReferenceNumber"`
	ProcessingStatus         string      `json:"processingStatus"`
	ProcessingStatusCode     string      `json:"processingStatusCode"`
	ApprovalCode             *string     `json:"approvalCode"`
	ThreeDSResult            *string     `json:"threeDsResult"`
	ThreeDSReason            *string     `json:"threeDsReason"`
	PaymentMethod            string      `json:"paymentMethod"` // Card or MiaQr
}

// decode verifies the body signature where the event has one and fills
// the typed body.
func (e *Event) decode(key string, body []byte) error {
	if e.Name == EventCheckoutCompleted || e.Name == EventCheckoutFailed {
		e.Checkout = &Checkout{}
		if err := json.Unmarshal(body, e.Checkout); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return nil
	}
	var env struct {
		Result    json.RawMessage `json:"result"`
		Signature string          `json:"signature"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Result) == 0 {
		return fmt.Errorf("%w: no result", ErrMalformed)
	}
	want, err := BodySignature(key, env.Result)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(env.Signature), []byte(want)) != 1 {
		return ErrBodySignature
	}
	var target any
	switch e.Name {
	case EventQRPayment:
		e.QRPayment = &QRPayment{}
		target = e.QRPayment
	case EventRTPAccepted:
		e.RTP = &RTPAccepted{}
		target = e.RTP
	case EventRefundAccepted:
		e.Refund = &RefundAccepted{}
		target = e.Refund
	default:
		return fmt.Errorf("%w: unknown event %q", ErrMalformed, e.Name)
	}
	if err := json.Unmarshal(env.Result, target); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}
