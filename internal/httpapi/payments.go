package httpapi

import (
	"errors"
	"strings"

	"payd"
	"payd/internal/sqlstore"
)

// handleRefund is POST /v2/payments/{payId}/refund, for every kind of payment.
func (s *Server) handleRefund(c *call) error { return s.refund(c, false) }

// handleRTPRefund is POST /v2/rtp/{payId}/refund: a full refund of an RTP payment.
func (s *Server) handleRTPRefund(c *call) error { return s.refund(c, true) }

func (s *Server) refund(c *call, rtpOnly bool) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	id, err := c.pathID("payId")
	if err != nil {
		return err
	}
	in := payd.RefundInput{Reason: o.str("reason"), Amount: o.money("amount"), CallbackURL: o.str("callbackUrl"), RTPOnly: rtpOnly}
	if err := o.err(in.Validate(s.urls())); err != nil {
		return err
	}
	rf, err := s.store.CreateRefund(c.r.Context(), c.m.ID, id, in, c.now, s.cfg.RefundDelay)
	if errors.Is(err, payd.ErrNotFound) {
		return payd.E(payd.CodePaymentNotFound, "payId", id)
	}
	if err != nil {
		return err
	}
	return c.respond(refundCreated{RefundID: rf.ID, Status: string(rf.Status)})
}

// handlePaymentGet is GET /v2/payments/{id}.
func (s *Server) handlePaymentGet(c *call) error {
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	p, err := s.store.Payment(c.r.Context(), c.m.ID, id)
	if err != nil {
		return c.notFound(err, id)
	}
	return c.respond(paymentRecordOf(p))
}

var paymentSortFields = []string{"executedAt", "amount", "status", "orderId", "currency", "type", "providerType", "referenceNumber", "terminalId"}

// handlePaymentList is GET /v2/payments.
func (s *Server) handlePaymentList(c *call) error {
	q := newQuery(c)
	f := sqlstore.PaymentFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(0, pagingParam)
	f.SortBy, f.Desc = q.sorting(paymentSortFields, "executedAt", func(p string) *payd.Error {
		return payd.E(payd.CodeQRSorting, "parameter", p)
	})
	f.ID, f.IntentID = q.id("paymentId"), q.id("paymentIntentId")
	f.TerminalID, f.OrderID = q.text("terminalId", payd.MaxTerminalID), q.text("orderId", payd.MaxOrderID)
	f.AmountFrom, f.AmountTo = q.money("amountFrom"), q.money("amountTo")
	f.Currency = q.str("currency")
	f.ExecutedFrom, f.ExecutedTo = q.time("executedAtFrom"), q.time("executedAtTo")
	f.RecipientIBAN, f.ReferenceNumber = q.text("recipientIban", payd.MaxIBAN), q.str("referenceNumber")
	f.SenderIBAN, f.SenderName = q.text("senderIban", payd.MaxIBAN), q.text("senderName", payd.MaxPayerName)
	f.MCC = q.str("mcc")
	if note := q.str("note"); note != "" {
		f.Kind = "none" // no payment has a note
	}
	f.Type = enumUpper(q, "type", "MIA", "MMC")
	f.ProviderType = enumUpper(q, "providerType", "QR", "RTP", "MMC")
	if st := q.str("status"); st != "" {
		v := canonical(st, payd.PaymentExecuted, payd.PaymentRefunded, payd.PaymentPartiallyRefunded, payd.PaymentFailed)
		if v == "" {
			q.bad("status", "must be Executed, PartiallyRefunded, Refunded or Failed")
		}
		f.Statuses = []string{v}
	}
	if err := q.err(); err != nil {
		return err
	}
	page := func(offset, count int, counted bool) ([]paymentRecord, int, error) {
		f.Offset, f.Count, f.Uncounted = offset, count, !counted
		ps, total, err := s.store.Payments(c.r.Context(), f)
		if err != nil {
			return nil, 0, err
		}
		items := make([]paymentRecord, len(ps))
		for i, p := range ps {
			items[i] = paymentRecordOf(p)
		}
		return items, total, nil
	}
	if f.Count == 0 {
		return streamAll(c, f.Offset, page)
	}
	items, total, err := page(f.Offset, f.Count, true)
	if err != nil {
		return err
	}
	return c.respond(countedList[paymentRecord]{Items: items, Count: len(items), TotalCount: total})
}

// canonical returns the value among vals that v names case-insensitively.
func canonical(v string, vals ...string) string {
	for _, x := range vals {
		if strings.EqualFold(v, x) {
			return x
		}
	}
	return ""
}

func enumUpper(q *query, name string, vals ...string) string {
	s := q.str(name)
	if s == "" {
		return ""
	}
	v := canonical(s, vals...)
	if v == "" {
		q.bad(name, "must be one of "+strings.Join(vals, ", "))
	}
	return v
}

// handleRefundGet is GET /v2/payments/refunds/{id}.
func (s *Server) handleRefundGet(c *call) error {
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	rf, err := s.store.Refund(c.r.Context(), c.m.ID, id)
	if err != nil {
		return c.notFound(err, id)
	}
	return c.respond(refundRecordOf(rf))
}
