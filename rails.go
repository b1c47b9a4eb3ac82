package payd

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The rails are the boundary where money really moves: the networks that
// deliver an RTP to the payer's bank, carry a payer's credit for a QR or an
// RTP, authorize a card, and return money for a refund. payd talks to them
// through this port, in both directions:
//
//   - inbound, a rail tells payd what happened (a credit arrived, an RTP was
//     accepted or rejected, a refund settled) by calling the use cases of a
//     Ledger. Every adapter calls the same use cases, so "a payer paid this
//     QR" has one code path whether the payer is the sandbox's simulator or
//     a bank's pacs.008;
//   - outbound, payd asks a rail to act (send an RTP, cancel it, return
//     money) through RailsOrders. An order is written to an outbox in the
//     transaction of the change that causes it and handed to the adapter's
//     Deliver until the network has taken it, as callbacks are.
//
// The rules of each reaction (what a credit must satisfy, the payment it
// records, its commission, the callback it causes) are the Apply functions
// below; a Ledger implementation loads, calls them and persists.

// Credit is money a payer's bank sent for a QR (or its extension) or an RTP.
type Credit struct {
	// Network is the name of the network that carried the credit (a
	// registered network's, internal/network): its payment records it, and
	// the payment's refunds go back through it.
	Network   string
	TargetID  string // the qrId, extensionId or rtpId the credit names
	Amount    *Money // nil: exactly what the target asks (the sandbox's RTP payer)
	Currency  string
	PayerName string
	PayerIBAN string
	Reference string    // the network's reference of the credit; "" in the sandbox
	At        time.Time // when the payer's bank accepted it; zero: when payd applies it
	// Routed: the network delivered the money to an account, CreditorIBAN
	// ("" when the message named none), and the credit may pay only a
	// target of the merchant that owns that account. The sandbox's payers
	// pay a target directly and leave it false.
	Routed       bool
	CreditorIBAN string
	// ByRemittance: the target was found in the payer's free text (the
	// network's reference said "not provided"), so it is looked for only
	// among the objects of the account's merchant.
	ByRemittance bool
}

// CardResult is an acquirer's answer to a card authorization.
type CardResult struct {
	Network      string // the acquirer's registered name: its payment, refunds and reversals go to it
	Approved     bool
	Mask         string // first 6 and last 4 digits; never the full number
	Holder       string
	ApprovalCode string // set when approved
	// From an acquirer that took the card on its own page (CardGateway):
	// its payment's id (the session), the RRN it gave, and what it charged.
	Reference string
	RRN       string
	Amount    *Money
	Currency  string
}

// Hosted reports whether the result came from an acquirer's own page.
func (r CardResult) Hosted() bool { return r.Reference != "" }

// Ledger is the inbound side of the port: the use cases a rail calls. Each
// call is one transaction. merchantID "" means the caller does not know the
// merchant (a bank names only the target); the target's owner is used.
type Ledger interface {
	// Credit records a payer's credit for whatever its target is: an RTP
	// (as CreditRTP) or a QR or extension (as CreditQR). A target payd does
	// not know is ErrNotFound.
	Credit(ctx context.Context, c Credit, now time.Time) (*Payment, error)
	// CreditQR records a payer's payment of a QR: checks in the contract's
	// order (existence, payability, amount), then the payment, the QR's
	// transition, its callback, and the completion of its checkout.
	CreditQR(ctx context.Context, merchantID string, c Credit, now time.Time) (*QR, *Payment, error)
	// CreditRTP records the payer's acceptance of an RTP with its payment.
	CreditRTP(ctx context.Context, merchantID string, c Credit, now time.Time) (*RTP, *Payment, error)
	// RejectRTP records the payer's rejection of an RTP.
	RejectRTP(ctx context.Context, merchantID, rtpID string, now time.Time) (*RTP, error)
	// CardPaid records an acquirer's answer for a checkout paying by card.
	// A hosted result (an acquirer's own page) applies once: its session
	// closes with it, and a repeat is ErrDuplicate.
	CardPaid(ctx context.Context, checkoutID string, res CardResult, now time.Time) (*Checkout, *Payment, error)
	// CloseCardSession closes an acquirer's payment that ended with no
	// charge to record (SessionTimedOut, SessionReturned) or that payd
	// stopped asking about (SessionAbandoned).
	CloseCardSession(ctx context.Context, sessionID string, outcome CardSessionOutcome, now time.Time) error
	// RefundTaken records that the network took a refund's return of funds
	// (Created → Requested).
	RefundTaken(ctx context.Context, refundID string, now time.Time) error
	// SettleRefund gives a refund its final status: Accepted, Rejected or
	// Manual (ApplyRefundOutcome).
	SettleRefund(ctx context.Context, refundID string, outcome RefundStatus, now time.Time) (*Refund, error)
	// SettleReturn is a network's news of a refund's return: as
	// SettleRefund, but only once the network has taken the return
	// (Requested); before, it changes nothing (ErrReturnNotTaken).
	SettleReturn(ctx context.Context, refundID string, outcome RefundStatus, now time.Time) (*Refund, error)
}

// Message is a rail's inbound message as payd records it: the network's
// message id (what it deduplicates on), its kind (pacs.008, pain.014 …),
// the outcome its use case's success means, and when it arrived.
type Message struct {
	ID, Kind, Outcome string
	At                time.Time
}

// Inbox is the port through which a rail applies each of its messages
// exactly once. Once gives the Ledger whose next use case records msg in
// its own transaction: the message and its effect commit together, and a
// message recorded before makes the use case fail with ErrDuplicate and
// apply nothing. A message that applies nothing (a refusal by the rules)
// is recorded with Record, so that a repeat gets the same answer.
type Inbox interface {
	Once(msg Message) Ledger
	Record(ctx context.Context, msg Message) (recorded bool, err error)
	// Recorded is the message as recorded (its outcome and arrival), if it was.
	Recorded(ctx context.Context, msgID string) (Message, bool, error)
}

// ErrDuplicate is the error of a use case run for a message already
// recorded (Inbox.Once): it was applied, or refused, before.
var ErrDuplicate = errors.New("inbound message already recorded")

// ErrReturnNotTaken is a network's status about a refund's return that the
// network has not taken yet (the refund is still Created: its pacs.004 was
// never acknowledged). Nothing is applied.
var ErrReturnNotTaken = errors.New("the refund's return has not been taken by the network")

// CardAcquirer authorizes card payments. The sandbox's test cards are one;
// a production acquirer is another adapter implementing it. A deployment
// without one does not offer cards.
type CardAcquirer interface {
	Authorize(ctx context.Context, checkout *Checkout, card Card) (CardResult, error)
}

// Rails is the outbound side of the port: an adapter that hands orders to
// a network. Deliver returns nil once the network has taken the order; any
// error means "try again later" (the outbox redelivers the same order).
type Rails interface {
	Deliver(ctx context.Context, o *RailsOrder) (Taken, error)
}

// ErrRailsUnavailable is what a Rails adapter's error wraps when the
// network could not take any order just now: its connector did not answer,
// or said it is unavailable (5xx, 408, 429). An order the connector
// answered about (4xx) failed on its own. While a network is unavailable
// the outbox asks it with one order at a time and holds the rest,
// unattempted, until that one is taken (worker.Orders).
var ErrRailsUnavailable = errors.New("the network's connector is unavailable")

// ErrOrderRefused is what a Rails adapter's error wraps when the network
// refused an order for good and nothing of payd's settles it (a card
// reversal the acquirer will not make): the order is kept as failed, with
// the network's answer, for a person, and never sent again.
var ErrOrderRefused = errors.New("the network refused the order")

// RailsRouter is a Rails that hands orders to more than one network:
// Route names the network an order goes to, so that one network being
// unavailable holds only its own orders.
type RailsRouter interface {
	Route(o *RailsOrder) string
}

// Networks hands each order to the network it names (RailsOrder.Network):
// the deployment's networks that take orders, by their registered names.
// An order that names none was written before orders named their network,
// and goes by its kind: a card order to Cards, any other to Rails.
type Networks struct {
	ByName       map[string]Rails
	Rails, Cards string
}

var _ RailsRouter = (*Networks)(nil)

// ErrNoNetwork is the error of an order whose network the deployment does
// not run: it stays in the outbox, retried, until one does (or a person
// settles it).
var ErrNoNetwork = errors.New("no such network in this deployment")

// Route names the network o goes to.
func (n *Networks) Route(o *RailsOrder) string {
	switch {
	case o.Network != "":
		return o.Network
	case o.Kind.CardKind():
		return n.Cards
	}
	return n.Rails
}

// Deliver hands o to its network.
func (n *Networks) Deliver(ctx context.Context, o *RailsOrder) (Taken, error) {
	name := n.Route(o)
	r, ok := n.ByName[name]
	if !ok {
		return Taken{}, fmt.Errorf("order %s to network %q: %w", o.ID, name, ErrNoNetwork)
	}
	return r.Deliver(ctx, o)
}

// OrderKind is what an outbound order asks of the network.
type OrderKind string

const (
	OrderSendRTP     OrderKind = "rtp.send"      // deliver an RTP to the payer's bank by alias
	OrderCancelRTP   OrderKind = "rtp.cancel"    // withdraw a delivered RTP
	OrderRefund      OrderKind = "refund.return" // return a refund's amount to the payer
	OrderCardRefund  OrderKind = "card.refund"   // refund a card payment through its acquirer
	OrderCardReverse OrderKind = "card.reverse"  // give back a card charge no checkout took
	// OrderRegisterQR (qrregistry.go): the QR registry learns a code's terms.
)

// RefundKind reports whether an order carries a refund (its ObjectID is
// the refundId): the network's taking it, or its answer, settles it.
func (k OrderKind) RefundKind() bool { return k == OrderRefund || k == OrderCardRefund }

// CardKind reports whether an order goes to a card acquirer.
func (k OrderKind) CardKind() bool { return k == OrderCardRefund || k == OrderCardReverse }

// Taken is what a network said when it took an order. Most orders settle
// later (a refund's return is answered by a pacs.002); an acquirer answers
// a refund at once, and Refund is then its outcome.
type Taken struct {
	Refund RefundStatus // "" when the order settles later
}

// RailsOrder is one outbound message, fixed when written so that every
// delivery attempt sends the same content. Its ID is the message id the
// network sees (and deduplicates on).
type RailsOrder struct {
	ID   string
	Kind OrderKind
	// Network is the registered network the order goes to. A refund goes
	// where its payment came from, a card reversal to the acquirer that
	// charged; the store gives the rest (RTPs, QR registrations) the
	// deployment's rails. Orders written before networks were recorded
	// have none and go by their kind (worker.Orders).
	Network    string
	MerchantID string
	ObjectID   string // the rtpId, refundId or qrId
	CreatedAt  time.Time
	Data       OrderData
	// Delivery state, kept by the outbox.
	Attempts      int
	NextAttemptAt time.Time
	DeliveredAt   time.Time
	LastError     string
}

// OrderData is the content of an order; which fields are set depends on the kind.
type OrderData struct {
	CreditorName string    `json:"creditorName,omitempty"`
	CreditorIBAN string    `json:"creditorIban,omitempty"`
	Alias        string    `json:"alias,omitempty"`
	Amount       Money     `json:"amount,omitempty"`
	Currency     string    `json:"currency,omitempty"`
	Description  string    `json:"description,omitempty"`
	ExpiresAt    time.Time `json:"expiresAt,omitzero"`
	Reason       string    `json:"reason,omitempty"`
	// A refund's original credit: the payment, its target and the network's reference.
	PaymentID     string    `json:"paymentId,omitempty"`
	OriginalID    string    `json:"originalId,omitempty"` // the rtpId or qrId the credit named
	OriginalRef   string    `json:"originalRef,omitempty"`
	OriginalAt    time.Time `json:"originalAt,omitzero"`
	OriginalTotal Money     `json:"originalTotal,omitempty"`
	DebtorName    string    `json:"debtorName,omitempty"` // who gets the money back
	DebtorIBAN    string    `json:"debtorIban,omitempty"`
	// A QR registration's record (OrderRegisterQR).
	QR *QRRegistration `json:"qr,omitempty"`
}

func newOrder(kind OrderKind, merchantID, objectID string, now time.Time, d OrderData) *RailsOrder {
	return &RailsOrder{ID: NewID(now), Kind: kind, MerchantID: merchantID, ObjectID: objectID, CreatedAt: now,
		NextAttemptAt: now, Data: d}
}

// SendRTPOrder is the order that delivers a new RTP to the payer's bank.
func SendRTPOrder(m *Merchant, r *RTP, now time.Time) *RailsOrder {
	return newOrder(OrderSendRTP, m.ID, r.ID, now, OrderData{
		CreditorName: m.Name, CreditorIBAN: m.IBAN, Alias: r.Alias, Amount: r.Amount, Currency: r.Currency,
		Description: r.Description, ExpiresAt: r.ExpiresAt,
	})
}

// CancelRTPOrder withdraws an RTP the merchant cancelled.
func CancelRTPOrder(m *Merchant, r *RTP, now time.Time) *RailsOrder {
	return newOrder(OrderCancelRTP, m.ID, r.ID, now, OrderData{
		CreditorName: m.Name, CreditorIBAN: m.IBAN, Alias: r.Alias, Amount: r.Amount, Currency: r.Currency,
		Reason: r.CancelReason,
	})
}

// RefundOrder returns a refund's amount to the payer of the original
// payment: a card payment through its acquirer, a credit through the
// payer's bank.
func RefundOrder(m *Merchant, rf *Refund, p *Payment, now time.Time) *RailsOrder {
	o := refundOrder(m, rf, p, now)
	o.Network = p.Network
	return o
}

func refundOrder(m *Merchant, rf *Refund, p *Payment, now time.Time) *RailsOrder {
	if p.Kind == PaymentCard {
		return newOrder(OrderCardRefund, m.ID, rf.ID, now, OrderData{
			Amount: rf.Amount, Currency: rf.Currency, Reason: rf.Reason, PaymentID: p.ID, OriginalID: p.CheckoutID,
			OriginalRef: p.NetworkRef, OriginalAt: p.ExecutedAt, OriginalTotal: p.Amount,
		})
	}
	target := p.RTPID
	if target == "" {
		target = p.QRID
	}
	return newOrder(OrderRefund, m.ID, rf.ID, now, OrderData{
		CreditorName: m.Name, CreditorIBAN: m.IBAN, Amount: rf.Amount, Currency: rf.Currency, Reason: rf.Reason,
		PaymentID: p.ID, OriginalID: target, OriginalRef: p.NetworkRef, OriginalAt: p.ExecutedAt,
		OriginalTotal: p.Amount, DebtorName: p.SenderName, DebtorIBAN: p.SenderIBAN,
	})
}

// Why a rail's credit was refused; adapters map these to their network's
// reason codes.
const (
	RefusedUnknown   = "unknown"   // no such QR, extension or RTP (among the account's merchant's, when found by remittance)
	RefusedAccount   = "account"   // the money reached an account that is not the target's merchant's, or none
	RefusedPaid      = "paid"      // the target was paid already (a Dynamic QR, an RTP)
	RefusedCancelled = "cancelled" // the target was cancelled (an RTP, a QR, a replaced or cancelled extension)
	RefusedClosed    = "closed"    // the target cannot be paid in its state otherwise (rejected, inactive, a finished checkout)
	RefusedAmount    = "amount"    // the amount breaks the target's amount rule
	RefusedExpired   = "expired"   // the target's deadline has passed
	RefusedCurrency  = "currency"  // not the target's currency
	RefusedMerchant  = "merchant"  // the merchant is not active
)

// Refused is a credit refused by the rules of its target. It wraps the
// contract's error (what the sandbox's endpoints answer) and says why in
// the terms a rail answers with.
type Refused struct {
	Reason string
	Err    error
}

func (r *Refused) Error() string { return "credit refused (" + r.Reason + "): " + r.Err.Error() }

// Unwrap gives the contract's error.
func (r *Refused) Unwrap() error { return r.Err }

func refuse(reason string, err error) error { return &Refused{Reason: reason, Err: err} }

// Refusal says why a credit was refused, for a rail's answer; err is the
// error a Ledger use case returned.
func Refusal(err error) string {
	var r *Refused
	switch {
	case errors.As(err, &r):
		return r.Reason
	case errors.Is(err, ErrNotFound), IsCode(err, CodeQRNotFound), IsCode(err, CodeRTPNotFound):
		return RefusedUnknown
	case IsCode(err, CodeInvalidParameter):
		return RefusedAmount
	}
	return RefusedClosed
}

// checkAccount is the routing rule of a network's credit: the money must
// have reached the account of the merchant that owns the target. A
// reference read from the payer's free text is matched among that
// merchant's objects only, so a target of another merchant is unknown.
func checkAccount(m *Merchant, c Credit, notFound error) error {
	if !c.Routed {
		return nil
	}
	if m.IBAN != "" && c.CreditorIBAN != "" && NormalizeIBAN(c.CreditorIBAN) == NormalizeIBAN(m.IBAN) {
		return nil
	}
	if c.ByRemittance {
		return refuse(RefusedUnknown, notFound)
	}
	return refuse(RefusedAccount, notFound)
}

// creditTime is when a credit counts as executed.
func creditTime(c Credit, now time.Time) time.Time {
	if c.At.IsZero() || c.At.After(now) {
		return now
	}
	return c.At
}

// ApplyRTPCredit decides what a credit for an RTP does: the RTP (loaded
// with its status, and owned by m) becomes Accepted, and the returned
// payment and callback (nil without a callbackUrl) are to be stored with it.
func ApplyRTPCredit(m *Merchant, r *RTP, c Credit, now time.Time) (*Payment, *Callback, error) {
	if err := checkAccount(m, c, E(CodeRTPNotFound, "rtpId", r.ID)); err != nil {
		return nil, nil, err
	}
	if !m.Active {
		return nil, nil, refuse(RefusedMerchant, E(CodeRTPMerchantInactive))
	}
	if c.Currency != "" && c.Currency != r.Currency {
		return nil, nil, refuse(RefusedCurrency, E(CodeRTPCurrency, "value", c.Currency))
	}
	payID := NewID(now)
	if err := r.Accept(now, payID); err != nil {
		switch r.Status {
		case RTPExpired:
			return nil, nil, refuse(RefusedExpired, err)
		case RTPAccepted, RTPRefunded:
			return nil, nil, refuse(RefusedPaid, err)
		case RTPCancelled:
			return nil, nil, refuse(RefusedCancelled, err)
		}
		return nil, nil, refuse(RefusedClosed, err)
	}
	if c.Amount != nil && *c.Amount != r.Amount {
		return nil, nil, refuse(RefusedAmount, Invalid("amount", "must equal the RTP amount "+r.Amount.String()))
	}
	p := &Payment{
		ID: payID, MerchantID: m.ID, Kind: PaymentRTP, RTPID: r.ID,
		Amount: r.Amount, Commission: Commission(r.Amount, m.CommissionBP), Currency: r.Currency,
		Description: r.Description, OrderID: r.OrderID, TerminalID: r.TerminalID,
		SenderName: c.PayerName, SenderIBAN: c.PayerIBAN, Network: c.Network, NetworkRef: c.Reference, ExecutedAt: creditTime(c, now),
		RecipientIBAN: m.IBAN, MCC: m.MCC,
	}
	if r.CallbackURL == "" {
		return p, nil, nil
	}
	return p, NewCallback(EventRTPAccepted, m, p.ID, r.CallbackURL, RTPAcceptedFields(r, p).Body(m.SignatureKey), now).About(r.ID), nil
}

// ApplyRTPRejection decides the payer's rejection of an RTP (loaded, owned
// by m): only an Active RTP of an active merchant can be rejected.
func ApplyRTPRejection(m *Merchant, r *RTP, now time.Time) error {
	if !m.Active {
		return E(CodeRTPMerchantInactive)
	}
	return r.Reject(now)
}

// ApplyQRCredit decides what a credit for a QR does, in the contract's
// order of checks (payability, then the amount rule): the QR (loaded,
// observed, owned by m) records the payment, returned to store with it;
// its callback is QRCreditCallback once the payment has its reference
// number. A checkout's QR also completes its checkout (CompleteCheckoutByQR).
func ApplyQRCredit(m *Merchant, q *QR, c Credit, now time.Time) (*Payment, error) {
	if err := checkAccount(m, c, E(CodeQRNotFound, "qrId", q.ID)); err != nil {
		return nil, err
	}
	if !m.Active {
		return nil, refuse(RefusedMerchant, E(CodeQRState))
	}
	if c.Currency != "" && c.Currency != q.Currency {
		return nil, refuse(RefusedCurrency, E(CodeQRCurrency, "value", c.Currency))
	}
	if !q.Payable() {
		switch {
		case q.Status == QRExpired || (q.Type == QRHybrid && q.ExtStatus == ExtExpired):
			return nil, refuse(RefusedExpired, E(CodeQRState))
		case q.Status == QRPaid:
			return nil, refuse(RefusedPaid, E(CodeQRState))
		case q.Status == QRCancelled || (q.Type == QRHybrid && q.ExtStatus == ExtCancelled):
			return nil, refuse(RefusedCancelled, E(CodeQRState))
		}
		return nil, refuse(RefusedClosed, E(CodeQRState))
	}
	if c.Amount == nil {
		return nil, refuse(RefusedAmount, Invalid("amount", "is required"))
	}
	if err := q.CheckPayment(*c.Amount); err != nil {
		return nil, refuse(RefusedAmount, err)
	}
	p := &Payment{
		ID: NewID(now), MerchantID: m.ID, Kind: PaymentQR, QRID: q.ID, CheckoutID: q.CheckoutID,
		Amount: *c.Amount, Commission: Commission(*c.Amount, m.CommissionBP), Currency: q.Currency,
		Description: q.Description, OrderID: q.OrderID, TerminalID: q.TerminalID,
		SenderName: c.PayerName, SenderIBAN: c.PayerIBAN, Network: c.Network, NetworkRef: c.Reference, ExecutedAt: creditTime(c, now),
		RecipientIBAN: m.IBAN, MCC: m.MCC,
	}
	if q.Type == QRHybrid {
		p.ExtensionID = q.ExtensionID
	}
	q.Pay(now)
	return p, nil
}

// QRCreditCallback is the qr.payment.executed callback of a QR payment;
// it needs the payment's reference number, which the store draws.
func QRCreditCallback(m *Merchant, q *QR, p *Payment, now time.Time) *Callback {
	if q.CallbackURL == "" {
		return nil
	}
	return NewCallback(EventQRPayment, m, p.ID, q.CallbackURL, QRPaymentFields(q, p).Body(m.SignatureKey), now).About(q.ID, p.ExtensionID)
}

// CompleteCheckoutByQR completes the checkout that owns a paid QR. A
// checkout that can no longer be paid refuses the credit (409 14019).
func CompleteCheckoutByQR(c *Checkout, p *Payment, now time.Time) error {
	if err := c.Complete(now, p.ID); err != nil {
		return refuse(RefusedClosed, E(CodeQRState))
	}
	return nil
}

// ApplyCardResult decides what an acquirer's answer does to a checkout
// that pays by card: approved completes it, declined fails it. It returns
// the payment (failed when declined) to store with the checkout; its
// callback is CheckoutCallback, once the payment has its reference number.
//
// An answer from the acquirer's own page (res.Hosted) comes when the payer
// is done there, and the checkout may have moved on meanwhile (expired,
// cancelled, paid by QR) or the acquirer may have charged another amount:
// then the money it took goes back (reversal, an order to the acquirer)
// and the checkout is left as it is. A decline for such a checkout
// changes nothing.
func ApplyCardResult(m *Merchant, c *Checkout, res CardResult, now time.Time) (p *Payment, reversal *RailsOrder, err error) {
	c.Observe(now)
	payable := !c.Status.Terminal() && m.Active
	if res.Hosted() {
		// The payer chose card, went to the acquirer's page and paid there;
		// a switch back to QR since then does not undo that.
		payable = payable && c.Status == CheckoutMethodSelected
		// What the acquirer charged must be the checkout's amount: an
		// approval whose amount it did not say (or said unreadably) is not
		// taken on trust, and is given back.
		charged := res.Amount != nil && *res.Amount == c.Amount && res.Currency == c.Currency
		switch {
		case res.Approved && (!payable || !charged):
			return nil, CardReversalOrder(m, c, res, now), nil
		case !payable:
			return nil, nil, nil
		}
		c.Method = MethodCard
	} else if c.Status != CheckoutMethodSelected || c.Method != MethodCard || !m.Active {
		return nil, nil, c.stateError()
	}
	p = &Payment{
		ID: NewID(now), MerchantID: c.MerchantID, Kind: PaymentCard, CheckoutID: c.ID,
		Amount: c.Amount, Currency: c.Currency, OrderID: c.OrderID(), SenderName: res.Holder, CardMask: res.Mask,
		Failed: !res.Approved, ExecutedAt: now, RecipientIBAN: m.IBAN, MCC: m.MCC,
		ReferenceNumber: res.RRN, Network: res.Network, NetworkRef: res.Reference,
	}
	if c.Order != nil {
		p.Description = c.Order.Description
	}
	if res.Approved {
		p.ApprovalCode = res.ApprovalCode
		return p, nil, c.Complete(now, p.ID)
	}
	return p, nil, c.Fail(now, p.ID)
}

// CheckoutCallback is the checkout.completed or checkout.failed callback
// of a checkout's payment p; nil without a callbackUrl.
func CheckoutCallback(m *Merchant, c *Checkout, p *Payment, now time.Time) *Callback {
	if c.CallbackURL == "" {
		return nil
	}
	event := EventCheckoutCompleted
	if p.Failed {
		event = EventCheckoutFailed
	}
	return NewCallback(event, m, c.ID, c.CallbackURL, CheckoutCallbackFields(c, p).AppendJSON(nil, false), now).About(c.ID, p.ID, c.QRID)
}

// Settle gives a Created or Requested refund its final status at now.
// Accepted sets executedAt. It refuses a refund already settled.
func (r *Refund) Settle(outcome RefundStatus, now time.Time) error {
	if r.Status != RefundCreated && r.Status != RefundRequested {
		return ErrConflict
	}
	switch outcome {
	case RefundAccepted:
		r.ExecutedAt = now
	case RefundRejected, RefundManual:
	default:
		return ErrConflict
	}
	r.Status, r.UpdatedAt = outcome, now
	return nil
}

// Taken records that the network took the refund's return of funds:
// Created → Requested. A refund past Created is left as it is (false).
func (r *Refund) Taken(now time.Time) bool {
	if r.Status != RefundCreated {
		return false
	}
	r.Status, r.UpdatedAt = RefundRequested, now
	return true
}

// RefundSettlement is what a refund's final status does besides the
// refund itself, to store with it.
type RefundSettlement struct {
	Payment    *Payment  // the payment after it: its refund sums as they now are
	RefundsRTP bool      // the payment's RTP becomes Refunded
	Callback   *Callback // refund.accepted; nil unless accepted and a URL is set
}

// ApplyRefundOutcome decides a refund's final status (Settle) and what it
// does: a rejected refund releases its amount; an accepted one counts in
// the payment's refunded amount and dates, makes an RTP Refunded and
// causes the refund callback (to the refund's URL, else the payment's);
// Manual keeps its amount reserved. p is the payment as loaded.
func ApplyRefundOutcome(m *Merchant, r *Refund, p *Payment, paymentCallbackURL string, outcome RefundStatus, now time.Time) (*RefundSettlement, error) {
	if err := r.Settle(outcome, now); err != nil {
		return nil, err
	}
	after := *p
	st := &RefundSettlement{Payment: &after}
	switch r.Status {
	case RefundRejected:
		after.RequestedRefund -= r.Amount
	case RefundAccepted:
		after.Refunded += r.Amount
		if after.FirstRefundedAt.IsZero() {
			after.FirstRefundedAt = now
		}
		after.LastRefundedAt = now
		st.RefundsRTP = p.Kind == PaymentRTP
		st.Callback = RefundCallback(m, r, &after, paymentCallbackURL, now)
	}
	return st, nil
}

// ApplyReturnOutcome is a network's news of a refund's return: as
// ApplyRefundOutcome, but the network must have taken the return first. A
// refund still Created (its return never acknowledged, perhaps never sent)
// is left as it is: ErrReturnNotTaken. Settling it would release its
// amount while the return could still go out.
func ApplyReturnOutcome(m *Merchant, r *Refund, p *Payment, paymentCallbackURL string, outcome RefundStatus, now time.Time) (*RefundSettlement, error) {
	if r.Status == RefundCreated {
		return nil, ErrReturnNotTaken
	}
	return ApplyRefundOutcome(m, r, p, paymentCallbackURL, outcome, now)
}

// RefundCallback is the refund callback of an accepted refund, sent to the
// refund's callbackUrl or else its payment's; nil when there is none. p is
// the payment after the refund was applied.
func RefundCallback(m *Merchant, r *Refund, p *Payment, paymentCallbackURL string, now time.Time) *Callback {
	url := r.CallbackURL
	if url == "" {
		url = paymentCallbackURL
	}
	if r.Status != RefundAccepted || url == "" {
		return nil
	}
	return NewCallback(EventRefundAccepted, m, r.ID, url, RefundAcceptedFields(r, p).Body(m.SignatureKey), now).About(r.ID, p.ID, p.IntentID())
}

// The sandbox's network works from what the store says is due.

// DueRTPDecision is an RTP of a test alias whose automatic decision
// (Action: accept or reject) is due.
type DueRTPDecision struct {
	MerchantID, RTPID, Action string
}

// DueRefund is a refund whose sandbox processing time has come.
type DueRefund struct {
	ID, MerchantID, Reason string
}

// CardReversalOrder gives back what an acquirer charged for a checkout
// that could not take it (ApplyCardResult). Its object is the checkout.
func CardReversalOrder(m *Merchant, c *Checkout, res CardResult, now time.Time) *RailsOrder {
	amount, currency := c.Amount, c.Currency
	if res.Amount != nil {
		amount, currency = *res.Amount, res.Currency
	}
	o := newOrder(OrderCardReverse, m.ID, c.ID, now, OrderData{
		Amount: amount, Currency: currency, OriginalID: c.ID, OriginalRef: res.Reference, OriginalTotal: amount,
		Reason: "the checkout was " + string(c.Status) + " when the card payment completed",
	})
	o.Network = res.Network
	return o
}
