package payd

import "time"

// RefundStatus is where a refund is in its lifecycle (spec §5.3).
type RefundStatus string

const (
	// RefundCreated: stored; its amount is reserved. The processor takes it up.
	RefundCreated RefundStatus = "Created"
	// RefundRequested: taken up by the processor.
	RefundRequested RefundStatus = "Requested"
	// RefundAccepted: executed (executedAt set). Final.
	RefundAccepted RefundStatus = "Accepted"
	// RefundRejected: refused; its amount is released. Final.
	RefundRejected RefundStatus = "Rejected"
	// RefundManual: needs an operator; its amount stays reserved.
	RefundManual RefundStatus = "Manual"
)

// Sandbox refund reasons that steer the outcome (spec §7.2).
const (
	ReasonTestReject = "TEST_REJECT"
	ReasonTestManual = "TEST_MANUAL"
)

// Refund is a refund of (part of) a payment.
type Refund struct {
	ID          string
	MerchantID  string
	PaymentID   string
	Amount      Money
	Currency    string
	Reason      string
	CallbackURL string
	Status      RefundStatus
	Full        bool // the amount equals the payment's whole amount
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExecutedAt  time.Time // zero until Accepted
	ProcessAt   time.Time // when the processor moves it on
}

// ProcessedAt is the refund record's executedAt: "when the refund was
// created or processed" — its creation time while Created or Requested,
// its execution time once Accepted, the time of its outcome when Rejected
// or Manual. Never empty, as the real clients' schema requires a date-time.
func (r *Refund) ProcessedAt() time.Time {
	switch r.Status {
	case RefundAccepted:
		return r.ExecutedAt
	case RefundRejected, RefundManual:
		return r.UpdatedAt
	}
	return r.CreatedAt
}

// Type is Full or Partial.
func (r *Refund) Type() string {
	if r.Full {
		return "Full"
	}
	return "Partial"
}

// RefundInput is a refund request after decoding.
type RefundInput struct {
	Amount      *Money // nil: the whole refundable amount
	Reason      string
	CallbackURL string
	RTPOnly     bool // through POST /v2/rtp/{payId}/refund
}

// Validate reports every field problem of the request.
func (in RefundInput) Validate(urls URLRules) error {
	var errs Errors
	if in.Amount != nil && (*in.Amount <= 0 || *in.Amount > MaxAmount) {
		errs = append(errs, Invalid("amount", "must be greater than 0"))
	}
	checkText(&errs, "reason", in.Reason, MaxReason, true)
	checkURL(&errs, urls, "callbackUrl", in.CallbackURL)
	return errs.Err()
}

// NewRefund applies the refund rules of spec §5.2 to a payment, in their
// order, and returns the refund to store. The caller has serialized refund
// creation for the payment and must reserve the amount.
func NewRefund(p *Payment, in RefundInput, now time.Time, delay time.Duration) (*Refund, error) {
	if in.RTPOnly && p.Kind != PaymentRTP {
		return nil, E(CodePaymentNotFound, "payId", p.ID)
	}
	if p.Failed {
		return nil, E(CodeNotRefundable, "payId", p.ID)
	}
	// Nothing refundable: refunded in full, or a card payment refunded
	// once already (Payment.Refundable).
	refundable := p.Refundable()
	if refundable <= 0 {
		return nil, E(CodeAlreadyRefunded, "payId", p.ID)
	}
	amount := refundable
	if in.Amount != nil {
		amount = *in.Amount
	}
	if p.Kind == PaymentRTP && amount != refundable {
		return nil, E(CodePartialRefund, "paymentId", p.ID)
	}
	if amount > refundable {
		return nil, E(CodeRefundTooLarge, "amount", amount.String(), "refundableAmount", refundable.String())
	}
	return &Refund{
		ID: NewID(now), MerchantID: p.MerchantID, PaymentID: p.ID,
		Amount: amount, Currency: p.Currency, Reason: in.Reason, CallbackURL: in.CallbackURL,
		Status: RefundCreated, Full: amount == p.Amount,
		CreatedAt: now, UpdatedAt: now, ProcessAt: now.Add(delay),
	}, nil
}
