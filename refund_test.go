package payd

import (
	"testing"
	"time"
)

// TestCardRefundedOnce: a card payment is refunded once, as its acquirer
// allows, in the sandbox as in production: after a partial refund nothing
// is refundable and a second refund is 14015; once that refund is
// rejected (its amount released) the payment may be refunded again. Other
// payments take partial refunds until their amount is used.
func TestCardRefundedOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	part := Money(3000)
	for _, tc := range []struct {
		kind          PaymentKind
		network       string
		afterPartial  Money
		secondAllowed bool
	}{
		{PaymentCard, "acq-1", 0, false}, {PaymentCard, "", 0, false}, {PaymentQR, "", 7000, true},
	} {
		p := &Payment{ID: "p", Kind: tc.kind, NetworkRef: tc.network, Amount: 10000, Currency: "MDL"}
		if got := p.Refundable(); got != 10000 {
			t.Errorf("%s: refundable %s before any refund", tc.kind, got)
		}
		if _, err := NewRefund(p, RefundInput{Amount: &part}, now, 0); err != nil {
			t.Fatalf("%s: first refund: %v", tc.kind, err)
		}
		p.RequestedRefund = part
		if got := p.Refundable(); got != tc.afterPartial {
			t.Errorf("%s: refundable %s after a partial refund, want %s", tc.kind, got, tc.afterPartial)
		}
		_, err := NewRefund(p, RefundInput{Amount: &part}, now, 0)
		if (err == nil) != tc.secondAllowed || err != nil && !IsCode(err, CodeAlreadyRefunded) {
			t.Errorf("%s: second refund: %v, allowed %v", tc.kind, err, tc.secondAllowed)
		}
		p.RequestedRefund = 0 // the first was rejected
		if got := p.Refundable(); got != 10000 {
			t.Errorf("%s: refundable %s after the refund was rejected", tc.kind, got)
		}
	}
}
