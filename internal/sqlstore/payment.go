package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"
)

const paymentCols = `p.id, p.merchant_id, p.kind, p.rtp_id, p.qr_id, p.extension_id, p.checkout_id,
	p.reference_number, p.amount, p.commission, p.currency, p.description, p.order_id, p.terminal_id,
	p.sender_name, p.sender_iban, p.card_mask, p.approval_code, p.network, p.network_ref, p.failed, p.requested_refund, p.refunded,
	p.first_refunded_at, p.last_refunded_at, p.executed_at, m.iban, m.mcc`

const paymentFrom = ` FROM payments p JOIN merchants m ON m.id = p.merchant_id`

func scanPayment(sc scanner) (*payd.Payment, error) {
	var p payd.Payment
	var kind string
	var rtp, qr, ext, co, desc, order, term, sname, siban, mask, appr, nref, iban sql.NullString
	var failed int
	var first, last sql.NullInt64
	var executed int64
	err := sc.Scan(&p.ID, &p.MerchantID, &kind, &rtp, &qr, &ext, &co, &p.ReferenceNumber, &p.Amount, &p.Commission,
		&p.Currency, &desc, &order, &term, &sname, &siban, &mask, &appr, &p.Network, &nref, &failed, &p.RequestedRefund, &p.Refunded,
		&first, &last, &executed, &iban, &p.MCC)
	if err != nil {
		return nil, notFound(err)
	}
	p.Kind = payd.PaymentKind(kind)
	p.RTPID, p.QRID, p.ExtensionID, p.CheckoutID = rtp.String, qr.String, ext.String, co.String
	p.Description, p.OrderID, p.TerminalID = desc.String, order.String, term.String
	p.SenderName, p.SenderIBAN, p.CardMask, p.ApprovalCode, p.NetworkRef = sname.String, siban.String, mask.String, appr.String, nref.String
	p.Failed = failed == 1
	p.FirstRefundedAt, p.LastRefundedAt = fromNullMS(first), fromNullMS(last)
	p.ExecutedAt, p.RecipientIBAN = payd.UnixMilli(executed), iban.String
	return &p, nil
}

// nextSequence draws the next service-wide payment sequence number, which
// becomes the referenceId (MIA…) or a card RRN. Numbers are drawn refBlock
// at a time and handed out from memory: on PostgreSQL from its sequence (a
// round trip less per payment), on SQLite from the counters row (its
// update was 2.8% of payd's CPU in rtp-flow, inside the one writer).
// Numbers stay unique across instances (or processes on one SQLite file),
// are handed out lowest first within one (on PostgreSQL two blocks drawn
// at once may interleave), and interleave between instances; a stopped
// instance leaves the rest of its block unused, and so does a transaction
// that rolls back after taking a number.
func (t *tx) nextSequence(ctx context.Context) (int64, error) {
	return t.s.refs.next(ctx, t)
}

const refBlock = 64

// refs are sequence numbers drawn ahead, lowest first.
type refs struct {
	mu   sync.Mutex
	free []int64
}

func (r *refs) next(ctx context.Context, t *tx) (int64, error) {
	r.mu.Lock()
	if len(r.free) > 0 {
		v := r.free[0]
		r.free = r.free[1:]
		r.mu.Unlock()
		return v, nil
	}
	r.mu.Unlock()
	drawn, err := t.s.d.drawRefs(ctx, t)
	if err != nil || len(drawn) == 0 {
		return 0, fmt.Errorf("next reference: %w (%d drawn)", err, len(drawn))
	}
	slices.Sort(drawn)
	r.mu.Lock()
	r.free = append(r.free, drawn[1:]...)
	slices.Sort(r.free) // PostgreSQL: another transaction may have drawn a block meanwhile
	r.mu.Unlock()
	return drawn[0], nil
}

// forget drops the numbers in memory (SQLite: a rollback undid the draw of
// their block, so the counters row no longer holds it). Forgetting numbers
// that did stay drawn only leaves them unused.
func (r *refs) forget() {
	r.mu.Lock()
	r.free = nil
	r.mu.Unlock()
}

// undoDraw forgets the block t drew, when t (or, in a shared transaction,
// its current use case) rolls back.
func (t *tx) undoDraw() {
	if t.drewRefs {
		t.drewRefs = false
		t.s.refs.forget()
	}
}

// insertPayment stores a new payment, recorded at now; ReferenceNumber is
// drawn here when empty.
func (t *tx) insertPayment(ctx context.Context, p *payd.Payment, callbackURL string, now time.Time) error {
	if p.ReferenceNumber == "" {
		seq, err := t.nextSequence(ctx)
		if err != nil {
			return err
		}
		if p.Kind == payd.PaymentCard {
			s := "000000000000" + strconv.FormatInt(seq, 10)
			p.ReferenceNumber = s[len(s)-12:]
		} else {
			p.ReferenceNumber = payd.ReferenceID(seq)
		}
	}
	failed := 0
	if p.Failed {
		failed = 1
	}
	err := t.write(ctx, -1, nil, `INSERT INTO payments (id, merchant_id, kind, rtp_id, qr_id, extension_id, checkout_id,
		reference_number, amount, commission, currency, description, order_id, terminal_id, sender_name, sender_iban,
		card_mask, approval_code, network, network_ref, failed, executed_at, callback_url)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.MerchantID, string(p.Kind), nullStr(p.RTPID), nullStr(p.QRID), nullStr(p.ExtensionID), nullStr(p.CheckoutID),
		p.ReferenceNumber, p.Amount, p.Commission, p.Currency, nullStr(p.Description), nullStr(p.OrderID), nullStr(p.TerminalID),
		nullStr(p.SenderName), nullStr(p.SenderIBAN), nullStr(p.CardMask), nullStr(p.ApprovalCode), p.Network, nullStr(p.NetworkRef), failed,
		ms(p.ExecutedAt), nullStr(callbackURL))
	if err != nil {
		return fmt.Errorf("insert payment: %w", err)
	}
	return t.settlementChanged(ctx, p.MerchantID, p.ExecutedAt, now)
}

// Payment reads one of the merchant's payments.
func (s *Store) Payment(ctx context.Context, merchantID, id string) (*payd.Payment, error) {
	return scanPayment(s.queryRow(ctx, "SELECT "+paymentCols+paymentFrom+" WHERE p.id = ? AND p.merchant_id = ?", id, merchantID))
}

// PaymentFilter selects payments for the payments-area and QR-area lists.
type PaymentFilter struct {
	MerchantID      string
	Kind            payd.PaymentKind // "" for every kind
	ID              string
	IntentID        string
	QRID            string
	ExtensionID     string
	OrderID         string
	TerminalID      string
	ReferenceNumber string
	SenderIBAN      string
	SenderName      string // substring
	Description     string // substring
	RecipientIBAN   string
	MCC             string
	Type            string
	ProviderType    string
	Currency        string
	Statuses        []string // payments-area statuses
	QRStatus        string   // QR-area status: Executed (not fully refunded) or Refunded
	AmountFrom      *payd.Money
	AmountTo        *payd.Money
	ExecutedFrom    *time.Time
	ExecutedTo      *time.Time
	SortBy          string // orderId amount status executedAt currency type providerType referenceNumber terminalId
	Desc            bool
	Count           int // 0: no limit
	Offset          int
	Uncounted       bool // the caller needs no total (the next page of a stream)
}

var paymentSort = map[string]string{
	"orderId": "p.order_id", "amount": "p.amount", "executedAt": "p.executed_at", "currency": "p.currency",
	"referenceNumber": "p.reference_number", "terminalId": "p.terminal_id",
	"status":       "CASE WHEN p.failed = 1 THEN 'Failed' WHEN p.refunded = p.amount THEN 'Refunded' WHEN p.refunded > 0 THEN 'PartiallyRefunded' ELSE 'Executed' END",
	"qrStatus":     "CASE WHEN p.refunded = p.amount THEN 'Refunded' ELSE 'Executed' END",
	"type":         "CASE p.kind WHEN 'card' THEN 'MMC' ELSE 'MIA' END",
	"providerType": "CASE p.kind WHEN 'qr' THEN 'QR' WHEN 'rtp' THEN 'RTP' ELSE 'MMC' END",
}

// Payments lists payments matching f and counts all matches.
func (s *Store) Payments(ctx context.Context, f PaymentFilter) ([]*payd.Payment, int, error) {
	var w where
	w.add("p.merchant_id = ?", f.MerchantID)
	w.opt("p.kind = ?", string(f.Kind))
	w.opt("p.id = ?", f.ID)
	if f.IntentID != "" {
		w.add("(p.checkout_id = ? OR (p.checkout_id IS NULL AND (p.qr_id = ? OR p.rtp_id = ?)))", f.IntentID, f.IntentID, f.IntentID)
	}
	w.opt("p.qr_id = ?", f.QRID)
	w.opt("p.extension_id = ?", f.ExtensionID)
	w.opt("p.order_id = ?", f.OrderID)
	w.opt("p.terminal_id = ?", f.TerminalID)
	w.opt("p.reference_number = ?", f.ReferenceNumber)
	w.opt("p.sender_iban = ?", f.SenderIBAN)
	w.opt("m.iban = ?", f.RecipientIBAN)
	w.opt("m.mcc = ?", f.MCC)
	w.opt("p.currency = ?", f.Currency)
	w.like(s.d, "p.sender_name", f.SenderName)
	w.like(s.d, "p.description", f.Description)
	switch f.Type {
	case "":
	case "MMC":
		w.add("p.kind = 'card'")
	case "MIA":
		w.add("p.kind <> 'card'")
	default:
		w.add("1 = 0")
	}
	if f.ProviderType != "" {
		kinds := map[string]string{"QR": "qr", "RTP": "rtp", "MMC": "card"}
		w.add("p.kind = ?", kinds[f.ProviderType])
	}
	if len(f.Statuses) > 0 {
		var ors []string
		for _, st := range f.Statuses {
			switch st {
			case payd.PaymentFailed:
				ors = append(ors, "p.failed = 1")
			case payd.PaymentRefunded:
				ors = append(ors, "(p.failed = 0 AND p.refunded = p.amount)")
			case payd.PaymentPartiallyRefunded:
				ors = append(ors, "(p.failed = 0 AND p.refunded > 0 AND p.refunded < p.amount)")
			case payd.PaymentExecuted:
				ors = append(ors, "(p.failed = 0 AND p.refunded = 0)")
			}
		}
		w.add("(" + strings.Join(ors, " OR ") + ")")
	}
	switch f.QRStatus {
	case payd.PaymentRefunded:
		w.add("p.refunded = p.amount")
	case payd.PaymentExecuted:
		w.add("p.refunded < p.amount")
	}
	if f.AmountFrom != nil {
		w.add("p.amount >= ?", int64(*f.AmountFrom))
	}
	if f.AmountTo != nil {
		w.add("p.amount <= ?", int64(*f.AmountTo))
	}
	w.timeRange("p.executed_at", f.ExecutedFrom, f.ExecutedTo)
	sortCol := paymentSort[f.SortBy]
	if sortCol == "" {
		sortCol = "p.executed_at"
	}
	nullable := f.SortBy == "orderId" || f.SortBy == "terminalId"
	order := orderBy(sortCol, nullable, f.Desc, "p.executed_at", "p.id")
	total := -1
	if !f.Uncounted {
		var err error
		if total, err = s.count(ctx, "SELECT COUNT(*)"+paymentFrom+w.sql(), w.args); err != nil {
			return nil, 0, fmt.Errorf("count payments: %w", err)
		}
	}
	q := "SELECT " + paymentCols + paymentFrom + w.sql() + order + s.limit(f.Count, f.Offset)
	rows, err := s.query(ctx, q, w.args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list payments: %w", err)
	}
	out, err := scanAll(rows, scanPayment)
	return out, total, err
}
