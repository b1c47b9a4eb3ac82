package httpapi

import (
	"time"

	"payd"
)

// Wire types carry the contract's JSON names and quirks; the domain keeps
// Go names. QR-area and RTP-area records omit absent values; checkout and
// payments-area records keep them as null (spec §0.5).

// wireTime renders a time in the contract's output format.
type wireTime time.Time

func (t wireTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + payd.FormatTime(time.Time(t)) + `"`), nil
}

// IsZero lets omitzero drop unset times.
func (t wireTime) IsZero() bool { return time.Time(t).IsZero() }

// nullTime is a time that is null when unset.
func nullTime(t time.Time) *wireTime {
	if t.IsZero() {
		return nil
	}
	w := wireTime(t)
	return &w
}

// nullStr is a string that is null when empty.
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type rtpCreated struct {
	RTPID     string   `json:"rtpId"`
	OrderID   string   `json:"orderId,omitempty"`
	ExpiresAt wireTime `json:"expiresAt"`
}

type rtpRecord struct {
	RTPID       string     `json:"rtpId"`
	OrderID     string     `json:"orderId,omitempty"`
	URL         string     `json:"url"`
	Amount      payd.Money `json:"amount"`
	Currency    string     `json:"currency"`
	Description string     `json:"description"`
	CallbackURL string     `json:"callbackUrl,omitempty"`
	RedirectURL string     `json:"redirectUrl,omitempty"`
	Status      string     `json:"status"`
	CreatedAt   wireTime   `json:"createdAt"`
	UpdatedAt   wireTime   `json:"updatedAt"`
	ExpiresAt   wireTime   `json:"expiresAt"`
	TerminalID  string     `json:"terminalId,omitempty"`
}

func (s *Server) rtpRecord(r *payd.RTP) rtpRecord {
	return rtpRecord{
		RTPID: r.ID, OrderID: r.OrderID, URL: s.cfg.PublicURL + "/rtp/" + r.ID, Amount: r.Amount,
		Currency: r.Currency, Description: r.Description, CallbackURL: r.CallbackURL, RedirectURL: r.RedirectURL,
		Status: string(r.Status), CreatedAt: wireTime(r.CreatedAt), UpdatedAt: wireTime(r.UpdatedAt),
		ExpiresAt: wireTime(r.ExpiresAt), TerminalID: r.TerminalID,
	}
}

type listResult[T any] struct {
	TotalCount int `json:"totalCount"`
	Items      []T `json:"items"`
}

type countedList[T any] struct {
	Items      []T `json:"items"`
	Count      int `json:"count"`
	TotalCount int `json:"totalCount"`
}

type statusResult struct {
	RTPID  string `json:"rtpId,omitempty"`
	QRID   string `json:"qrId,omitempty"`
	Status string `json:"status"`
}

type refundCreated struct {
	RefundID string `json:"refundId"`
	Status   string `json:"status"`
}

// paymentRecord is the payments-area record (spec §5.1): every key present.
type paymentRecord struct {
	PaymentID              string     `json:"paymentId"`
	PaymentIntentID        string     `json:"paymentIntentId"`
	ExecutedAt             wireTime   `json:"executedAt"`
	Status                 string     `json:"status"`
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
	PaymentEntryPoint      string     `json:"paymentEntryPoint"`
	Note                   *string    `json:"note"`
	RequestedRefundAmount  payd.Money `json:"requestedRefundAmount"`
	RefundedAmount         payd.Money `json:"refundedAmount"`
	RefundableAmount       payd.Money `json:"refundableAmount"`
	IsRefundable           bool       `json:"isRefundable"`
	PartialRefundAvailable bool       `json:"partialRefundAvailable"`
	FirstRefundedAt        *wireTime  `json:"firstRefundedAt"`
	LastRefundedAt         *wireTime  `json:"lastRefundedAt"`
}

func paymentRecordOf(p *payd.Payment) paymentRecord {
	refundable := p.Refundable()
	terminal := p.TerminalID
	if p.Kind == payd.PaymentCard {
		terminal = ""
	}
	return paymentRecord{
		PaymentID: p.ID, PaymentIntentID: p.IntentID(), ExecutedAt: wireTime(p.ExecutedAt), Status: p.Status(),
		Amount: p.Amount, Currency: p.Currency, Type: p.Type(), ProviderType: p.ProviderType(), PaymentMethod: p.Method(),
		SenderName: nullStr(p.SenderName), SenderIBAN: nullStr(p.SenderIBAN), RecipientIBAN: nullStr(p.RecipientIBAN),
		MCC: p.MCC, ReferenceNumber: p.ReferenceNumber, OrderID: nullStr(p.OrderID), TerminalID: nullStr(terminal),
		ApprovalCode: nullStr(p.ApprovalCode), PaymentEntryPoint: p.EntryPoint(),
		RequestedRefundAmount: p.RequestedRefund, RefundedAmount: p.Refunded, RefundableAmount: refundable,
		IsRefundable: !p.Failed && refundable > 0, PartialRefundAvailable: !p.Failed && refundable > 0 && p.Kind != payd.PaymentRTP,
		FirstRefundedAt: nullTime(p.FirstRefundedAt), LastRefundedAt: nullTime(p.LastRefundedAt),
	}
}

type refundRecord struct {
	ID           string     `json:"id"`
	PaymentID    string     `json:"paymentId"`
	RefundType   string     `json:"refundType"`
	Amount       payd.Money `json:"amount"`
	Currency     string     `json:"currency"`
	RefundReason string     `json:"refundReason"`
	ExecutedAt   *wireTime  `json:"executedAt"`
	Status       string     `json:"status"`
}

func refundRecordOf(r *payd.Refund) refundRecord {
	return refundRecord{ID: r.ID, PaymentID: r.PaymentID, RefundType: r.Type(), Amount: r.Amount, Currency: r.Currency,
		RefundReason: r.Reason, ExecutedAt: nullTime(r.ExecutedAt), Status: string(r.Status)}
}
