package payd

import (
	"strconv"
	"strings"
	"time"
)

// PaymentKind says which area a payment came from.
type PaymentKind string

const (
	PaymentQR   PaymentKind = "qr"   // a QR paid from a bank app (possibly a checkout's QR)
	PaymentRTP  PaymentKind = "rtp"  // an accepted Request to Pay
	PaymentCard PaymentKind = "card" // a card payment on a checkout page
)

// Payment is one executed (or, for a declined card, failed) payment. Its
// refund-derived fields are kept current in the same transaction as every
// refund change, so they never need recomputing on read.
type Payment struct {
	ID              string
	MerchantID      string
	Kind            PaymentKind
	RTPID           string
	QRID            string
	ExtensionID     string
	CheckoutID      string
	ReferenceNumber string
	Amount          Money
	Commission      Money
	Currency        string
	Description     string
	OrderID         string
	TerminalID      string
	SenderName      string
	SenderIBAN      string
	CardMask        string // first 6 and last 4 digits; never the full number
	ApprovalCode    string
	Network         string // the registered network that carried it ("" when recorded before networks were)
	NetworkRef      string // the rail's reference of the credit (pacs.008 transaction id); "" in the sandbox
	Failed          bool   // a declined card
	RequestedRefund Money
	Refunded        Money
	FirstRefundedAt time.Time // zero when no refund was accepted
	LastRefundedAt  time.Time
	ExecutedAt      time.Time
	// Merchant attributes reported with the payment.
	RecipientIBAN string
	MCC           string
}

// Payment statuses of the payments-area record (spec §5.1).
const (
	PaymentExecuted          = "Executed"
	PaymentFailed            = "Failed"
	PaymentRefunded          = "Refunded"
	PaymentPartiallyRefunded = "PartiallyRefunded"
)

// Status is the payments-area status: Failed, Refunded, PartiallyRefunded
// or Executed.
func (p *Payment) Status() string {
	switch {
	case p.Failed:
		return PaymentFailed
	case p.Refunded == p.Amount:
		return PaymentRefunded
	case p.Refunded > 0:
		return PaymentPartiallyRefunded
	}
	return PaymentExecuted
}

// QRStatus is the QR-area status, where a partial refund still reads Executed.
func (p *Payment) QRStatus() string {
	if !p.Failed && p.Refunded == p.Amount {
		return PaymentRefunded
	}
	return PaymentExecuted
}

// Refundable is what may still be refunded: amount − requested refunds.
// A card payment is refunded once, as its acquirer allows (docs/cards.md):
// once a refund of it is requested, nothing more is, until that refund is
// rejected (its amount released). The sandbox's cards follow the same rule.
func (p *Payment) Refundable() Money {
	if p.Failed || p.Kind == PaymentCard && p.RequestedRefund > 0 {
		return 0
	}
	return p.Amount - p.RequestedRefund
}

// IntentID is the object the payment paid: the checkout, else the QR or RTP.
func (p *Payment) IntentID() string {
	switch {
	case p.CheckoutID != "":
		return p.CheckoutID
	case p.Kind == PaymentQR:
		return p.QRID
	}
	return p.RTPID
}

// Type, ProviderType and Method are the payment's rail as the payments area
// names it.
func (p *Payment) Type() string {
	if p.Kind == PaymentCard {
		return "MMC"
	}
	return "MIA"
}

// ProviderType is QR, RTP or MMC.
func (p *Payment) ProviderType() string {
	switch p.Kind {
	case PaymentQR:
		return "QR"
	case PaymentRTP:
		return "RTP"
	}
	return "MMC"
}

// Method is MiaQr, Rtp or Card.
func (p *Payment) Method() string {
	switch p.Kind {
	case PaymentQR:
		return "MiaQr"
	case PaymentRTP:
		return "Rtp"
	}
	return "Card"
}

// EntryPoint is Checkout for payments made through a checkout, else API.
func (p *Payment) EntryPoint() string {
	if p.CheckoutID != "" {
		return "Checkout"
	}
	return "API"
}

// ReferenceID renders a sequence number as an instant-payment reference:
// MIA and 12 zero-padded digits.
func ReferenceID(seq int64) string {
	s := strings.Repeat("0", 12) + strconv.FormatInt(seq, 10)
	return "MIA" + s[len(s)-12:]
}
