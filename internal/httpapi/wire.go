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

func (t wireTime) MarshalJSON() ([]byte, error) { return appendWireTime(nil, t), nil }

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
	RefundID     string     `json:"refundId"` // the create's name for it, for clients that read it
	PaymentID    string     `json:"paymentId"`
	RefundType   string     `json:"refundType"`
	Amount       payd.Money `json:"amount"`
	Currency     string     `json:"currency"`
	RefundReason string     `json:"refundReason"`
	ExecutedAt   *wireTime  `json:"executedAt"`
	Status       string     `json:"status"`
}

func refundRecordOf(r *payd.Refund) refundRecord {
	return refundRecord{ID: r.ID, RefundID: r.ID, PaymentID: r.PaymentID, RefundType: r.Type(), Amount: r.Amount, Currency: r.Currency,
		RefundReason: r.Reason, ExecutedAt: nullTime(r.ProcessedAt()), Status: string(r.Status)}
}

type qrCreated struct {
	QRID      string   `json:"qrId"`
	OrderID   string   `json:"orderId,omitempty"`
	Type      string   `json:"type"`
	URL       string   `json:"url"`
	ExpiresAt wireTime `json:"expiresAt,omitzero"`
}

type hybridCreated struct {
	QRID        string `json:"qrId"`
	ExtensionID string `json:"extensionId,omitempty"`
	URL         string `json:"url"`
}

type extensionRef struct {
	ExtensionID string `json:"extensionId"`
}

// qrRecord is the QR details record and list item (spec §2.9).
type qrRecord struct {
	QRID        string      `json:"qrId"`
	Type        string      `json:"type"`
	Status      string      `json:"status"`
	URL         string      `json:"url"`
	ExtensionID string      `json:"extensionId,omitempty"`
	OrderID     string      `json:"orderId,omitempty"`
	Description string      `json:"description,omitempty"`
	CallbackURL string      `json:"callbackUrl,omitempty"`
	RedirectURL string      `json:"redirectUrl,omitempty"`
	AmountType  string      `json:"amountType"`
	Currency    string      `json:"currency"`
	TerminalID  string      `json:"terminalId,omitempty"`
	Amount      *payd.Money `json:"amount,omitempty"`
	AmountMin   *payd.Money `json:"amountMin,omitempty"`
	AmountMax   *payd.Money `json:"amountMax,omitempty"`
	CreatedAt   wireTime    `json:"createdAt"`
	UpdatedAt   wireTime    `json:"updatedAt"`
	ExpiresAt   wireTime    `json:"expiresAt,omitzero"`
}

func (s *Server) qrRecord(q *payd.QR) qrRecord {
	r := qrRecord{
		QRID: q.ID, Type: string(q.Type), Status: string(q.Status), URL: s.qrURL(q), ExtensionID: q.ExtensionID,
		OrderID: q.OrderID, Description: q.Description, CallbackURL: q.CallbackURL, RedirectURL: q.RedirectURL,
		AmountType: string(q.AmountType), Currency: q.Currency, TerminalID: q.TerminalID,
		Amount: q.Amounts.Amount, AmountMin: q.Amounts.Min, AmountMax: q.Amounts.Max,
		CreatedAt: wireTime(q.CreatedAt), UpdatedAt: wireTime(q.UpdatedAt),
	}
	if q.Type != payd.QRStatic {
		r.ExpiresAt = wireTime(q.ExpiresAt)
	}
	return r
}

type extensionRecord struct {
	ExtensionID string      `json:"extensionId"`
	QRID        string      `json:"qrId"`
	Status      string      `json:"status"`
	Amount      *payd.Money `json:"amount,omitempty"`
	AmountMin   *payd.Money `json:"amountMin,omitempty"`
	AmountMax   *payd.Money `json:"amountMax,omitempty"`
	Description string      `json:"description"`
	OrderID     string      `json:"orderId,omitempty"`
	CallbackURL string      `json:"callbackUrl,omitempty"`
	RedirectURL string      `json:"redirectUrl,omitempty"`
	CreatedAt   wireTime    `json:"createdAt"`
	UpdatedAt   wireTime    `json:"updatedAt"`
	ExpiresAt   wireTime    `json:"expiresAt"`
}

func extensionRecordOf(x *payd.Extension) extensionRecord {
	return extensionRecord{
		ExtensionID: x.ID, QRID: x.QRID, Status: string(x.Status), Amount: x.Amounts.Amount, AmountMin: x.Amounts.Min,
		AmountMax: x.Amounts.Max, Description: x.Description, OrderID: x.OrderID, CallbackURL: x.CallbackURL,
		RedirectURL: x.RedirectURL, CreatedAt: wireTime(x.CreatedAt), UpdatedAt: wireTime(x.UpdatedAt), ExpiresAt: wireTime(x.ExpiresAt),
	}
}

type testPayResult struct {
	QRID         string     `json:"qrId"`
	QRStatus     string     `json:"qrStatus"`
	OrderID      string     `json:"orderId,omitempty"`
	PayID        string     `json:"payId"`
	Amount       payd.Money `json:"amount"`
	Commission   payd.Money `json:"commission"`
	Currency     string     `json:"currency"`
	PayerName    string     `json:"payerName"`
	PayerIBAN    string     `json:"payerIban"`
	ExecutedAt   wireTime   `json:"executedAt"`
	SignatureKey string     `json:"signatureKey"`
}

// qrPayment is the QR-area payment record (spec §2.12).
type qrPayment struct {
	PayID       string     `json:"payId"`
	ReferenceID string     `json:"referenceId"`
	QRID        string     `json:"qrId"`
	ExtensionID string     `json:"extensionId,omitempty"`
	OrderID     string     `json:"orderId,omitempty"`
	Amount      payd.Money `json:"amount"`
	Commission  payd.Money `json:"commission"`
	Currency    string     `json:"currency"`
	Description string     `json:"description,omitempty"`
	PayerName   string     `json:"payerName,omitempty"`
	PayerIBAN   string     `json:"payerIban,omitempty"`
	Status      string     `json:"status"`
	ExecutedAt  wireTime   `json:"executedAt"`
	RefundedAt  wireTime   `json:"refundedAt,omitzero"`
	TerminalID  string     `json:"terminalId,omitempty"`
}

func qrPaymentOf(p *payd.Payment) qrPayment {
	r := qrPayment{
		PayID: p.ID, ReferenceID: p.ReferenceNumber, QRID: p.QRID, ExtensionID: p.ExtensionID, OrderID: p.OrderID,
		Amount: p.Amount, Commission: p.Commission, Currency: p.Currency, Description: p.Description,
		PayerName: p.SenderName, PayerIBAN: p.SenderIBAN, Status: p.QRStatus(), ExecutedAt: wireTime(p.ExecutedAt),
		TerminalID: p.TerminalID,
	}
	if r.Status == payd.PaymentRefunded {
		r.RefundedAt = wireTime(p.LastRefundedAt)
	}
	return r
}

type checkoutCreated struct {
	CheckoutID  string `json:"checkoutId"`
	CheckoutURL string `json:"checkoutUrl"`
}

type checkoutCancelled struct {
	CheckoutID string `json:"checkoutId"`
	Status     string `json:"status"`
}

// checkoutRecord is the checkout record with the seed's names and case
// (CompletedAt, FailedAt, CancelledAt, PaymentId); every key is present.
// The same values are also sent in camel case (completedAt, failedAt,
// cancelledAt, paymentId): the real service's documentation and its
// TypeScript client read those names, the seed shows the others, and
// sending both serves every client.
type checkoutRecord struct {
	ID           string           `json:"id"`
	CreatedAt    wireTime         `json:"createdAt"`
	Status       string           `json:"status"`
	Amount       payd.Money       `json:"amount"`
	Currency     string           `json:"currency"`
	CallbackURL  *string          `json:"callbackUrl"`
	SuccessURL   *string          `json:"successUrl"`
	FailURL      *string          `json:"failUrl"`
	Language     string           `json:"language"`
	URL          string           `json:"url"`
	Order        *wireOrder       `json:"order"`
	Payer        *wirePayer       `json:"payer"`
	ExpiresAt    wireTime         `json:"expiresAt"`
	CompletedAt  *wireTime        `json:"CompletedAt"`
	FailedAt     *wireTime        `json:"FailedAt"`
	CancelledAt  *wireTime        `json:"CancelledAt"`
	CompletedAt2 *wireTime        `json:"completedAt"`
	FailedAt2    *wireTime        `json:"failedAt"`
	CancelledAt2 *wireTime        `json:"cancelledAt"`
	Payment      *checkoutPayment `json:"payment"`
}

type wireOrder struct {
	ID               *string     `json:"id"`
	Description      *string     `json:"description"`
	Amount           *payd.Money `json:"amount"`
	Currency         *string     `json:"currency"`
	DeliveryAmount   *payd.Money `json:"deliveryAmount"`
	DeliveryCurrency *string     `json:"deliveryCurrency"`
	Date             *wireTime   `json:"date"`
	OrderItems       []wireItem  `json:"orderItems"`
}

// wireQuantity renders a quantity as its shortest decimal number.
type wireQuantity payd.Quantity

func (q wireQuantity) MarshalJSON() ([]byte, error) { return []byte(payd.Quantity(q).String()), nil }

type wireItem struct {
	ExternalID   *string       `json:"externalId"`
	Title        *string       `json:"title"`
	Amount       *payd.Money   `json:"amount"`
	Currency     *string       `json:"currency"`
	Quantity     *wireQuantity `json:"quantity"`
	DisplayOrder *int          `json:"displayOrder"`
}

type wirePayer struct {
	Name      *string `json:"name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	IP        *string `json:"ip"`
	UserAgent *string `json:"userAgent"`
}

// checkoutPayment is the checkout record's payment: the payments-area
// record's values under the seed's names.
type checkoutPayment struct {
	PaymentID             string     `json:"PaymentId"`
	PaymentID2            string     `json:"paymentId"` // the same, as the real clients spell it
	ExecutedAt            wireTime   `json:"executedAt"`
	Status                string     `json:"status"`
	Amount                payd.Money `json:"amount"`
	Currency              string     `json:"currency"`
	Type                  string     `json:"type"`
	ProviderType          string     `json:"providerType"`
	SenderName            *string    `json:"senderName"`
	SenderIBAN            *string    `json:"senderIban"`
	RecipientIBAN         *string    `json:"recipientIban"`
	ReferenceNumber       string     `json:"referenceNumber"`
	MCC                   string     `json:"mcc"`
	OrderID               *string    `json:"orderId"`
	TerminalID            *string    `json:"terminalId"`
	RefundedAmount        payd.Money `json:"refundedAmount"`
	PaymentMethod         *string    `json:"paymentMethod"`
	ApprovalCode          *string    `json:"approvalCode"`
	RequestedRefundAmount payd.Money `json:"requestedRefundAmount"`
	FirstRefundedAt       *wireTime  `json:"firstRefundedAt"`
	LastRefundedAt        *wireTime  `json:"lastRefundedAt"`
	Note                  *string    `json:"note"`
}

// returnURL is where the payer is sent after the checkout: the merchant's
// URL, else the checkout's own page, which shows the result (spec §4.7).
// Public clients read successUrl and failUrl as URLs, never null.
func returnURL(merchant, own string) *string {
	if merchant != "" {
		return &merchant
	}
	return &own
}

func checkoutRecordOf(c *payd.Checkout, url string, p *payd.Payment) checkoutRecord {
	r := checkoutRecord{
		ID: c.ID, CreatedAt: wireTime(c.CreatedAt), Status: string(c.Status), Amount: c.Amount, Currency: c.Currency,
		CallbackURL: nullStr(c.CallbackURL), SuccessURL: returnURL(c.SuccessURL, url), FailURL: returnURL(c.FailURL, url),
		Language: c.Language, URL: url, ExpiresAt: wireTime(c.ExpiresAt),
		CompletedAt: nullTime(c.CompletedAt), FailedAt: nullTime(c.FailedAt), CancelledAt: nullTime(c.CancelledAt),
		CompletedAt2: nullTime(c.CompletedAt), FailedAt2: nullTime(c.FailedAt), CancelledAt2: nullTime(c.CancelledAt),
	}
	if o := c.Order; o != nil {
		wo := &wireOrder{ID: nullStr(o.ID), Description: nullStr(o.Description), Amount: o.Amount, Currency: nullStr(o.Currency),
			DeliveryAmount: o.DeliveryAmount, DeliveryCurrency: nullStr(o.DeliveryCurrency), Date: nullTime(o.Date), OrderItems: []wireItem{}}
		for _, it := range o.Items {
			wi := wireItem{ExternalID: nullStr(it.ExternalID), Title: nullStr(it.Title), Amount: it.Amount,
				Currency: nullStr(it.Currency), DisplayOrder: it.DisplayOrder}
			if it.Quantity != nil {
				q := wireQuantity(*it.Quantity)
				wi.Quantity = &q
			}
			wo.OrderItems = append(wo.OrderItems, wi)
		}
		r.Order = wo
	}
	if p := c.Payer; p != nil {
		r.Payer = &wirePayer{Name: nullStr(p.Name), Email: nullStr(p.Email), Phone: nullStr(p.Phone), IP: nullStr(p.IP), UserAgent: nullStr(p.UserAgent)}
	}
	if p != nil {
		pr := paymentRecordOf(p)
		r.Payment = &checkoutPayment{
			PaymentID: pr.PaymentID, PaymentID2: pr.PaymentID, ExecutedAt: pr.ExecutedAt, Status: pr.Status, Amount: pr.Amount, Currency: pr.Currency,
			Type: pr.Type, ProviderType: pr.ProviderType, SenderName: pr.SenderName, SenderIBAN: pr.SenderIBAN,
			RecipientIBAN: pr.RecipientIBAN, ReferenceNumber: pr.ReferenceNumber, MCC: pr.MCC, OrderID: pr.OrderID,
			TerminalID: pr.TerminalID, RefundedAmount: pr.RefundedAmount, PaymentMethod: nullStr(pr.PaymentMethod),
			ApprovalCode: pr.ApprovalCode, RequestedRefundAmount: pr.RequestedRefundAmount,
			FirstRefundedAt: pr.FirstRefundedAt, LastRefundedAt: pr.LastRefundedAt, Note: pr.Note,
		}
	}
	return r
}
