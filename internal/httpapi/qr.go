package httpapi

import (
	"errors"

	"payd"
	"payd/internal/sqlstore"
)

// terms reads the payable terms of a QR, hybrid extension or extension request.
func terms(o *object) payd.ExtensionInput {
	t := payd.ExtensionInput{
		Amounts:     payd.Amounts{Amount: o.money("amount"), Min: o.money("amountMin"), Max: o.money("amountMax")},
		Description: o.str("description"), OrderID: o.str("orderId"),
		CallbackURL: o.str("callbackUrl"), RedirectURL: o.str("redirectUrl"),
	}
	t.ExpiresAt, t.ExpiresRaw = o.time("expiresAt")
	return t
}

// handleQRCreate is POST /v2/instant/qr (Static or Dynamic).
func (s *Server) handleQRCreate(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	typ := o.str("type")
	if typ == string(payd.QRStatic) {
		delete(o.fields, "expiresAt") // a Static QR has no expiry; one sent is ignored
	}
	in := payd.QRInput{Type: typ, AmountType: o.str("amountType"), Currency: o.str("currency"),
		TerminalID: o.str("terminalId"), Ext: terms(o)}
	if err := o.err(in.ValidateQR(c.now, s.urls())); err != nil {
		return err
	}
	q, _ := payd.NewQR(in, c.m.ID, c.now)
	if err := s.store.CreateQR(c.r.Context(), q, nil); err != nil {
		return err
	}
	res := qrCreated{QRID: q.ID, OrderID: q.OrderID, Type: string(q.Type), URL: s.qrURL(q)}
	if q.Type == payd.QRDynamic {
		res.ExpiresAt = wireTime(q.ExpiresAt)
	}
	return c.respond(res)
}

// qrURL is a QR's url (payd.QRURL): the national link in production.
func (s *Server) qrURL(q *payd.QR) string {
	return payd.QRURL(s.cfg.PublicURL, s.store.QRRegistry(), q)
}

// handleQRHybridCreate is POST /v2/instant/qr/hybrid.
func (s *Server) handleQRHybridCreate(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	in := payd.QRInput{AmountType: o.str("amountType"), Currency: o.str("currency"), TerminalID: o.str("terminalId")}
	var extErrs payd.Errors
	if raw, ok := o.raw("extension"); ok {
		eo, err := parseObject(c.a, raw, true)
		if err != nil {
			o.typeError("extension", "an object")
		} else {
			in.HasExt, in.Ext = true, terms(eo)
			extErrs = eo.errs
		}
	}
	err = in.ValidateHybrid(c.now, s.urls())
	o.errs = append(o.errs, extErrs...)
	if err := o.err(err); err != nil {
		return err
	}
	q, ext := payd.NewQR(in, c.m.ID, c.now)
	if err := s.store.CreateQR(c.r.Context(), q, ext); err != nil {
		return err
	}
	res := hybridCreated{QRID: q.ID, URL: s.qrURL(q)}
	if ext != nil {
		res.ExtensionID = ext.ID
	}
	return c.respond(res)
}

// handleQRGet is GET /v2/instant/qr/{qrId}.
func (s *Server) handleQRGet(c *call) error {
	id, err := c.pathID("qrId")
	if err != nil {
		return err
	}
	q, err := s.store.QR(c.r.Context(), c.m.ID, id, c.now)
	if err != nil {
		return c.notFound(err, id)
	}
	return c.respond(s.qrRecord(q))
}

// qrError maps store errors of a QR transition.
func (s *Server) qrError(c *call, err error, id string) error {
	if errors.Is(err, payd.ErrConflict) {
		return payd.E(payd.CodeQRState)
	}
	return c.notFound(err, id)
}

// handleQRCancel is POST /v2/instant/qr/{qrId}/cancel.
func (s *Server) handleQRCancel(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	id, err := c.pathID("qrId")
	if err != nil {
		return err
	}
	if err := o.err(checkReason(o.str("reason"), true)); err != nil {
		return err
	}
	q, err := s.store.CancelQR(c.r.Context(), c.m.ID, id, o.str("reason"), c.now)
	if err != nil {
		return s.qrError(c, err, id)
	}
	return c.respond(statusResult{QRID: q.ID, Status: string(q.Status)})
}

func checkReason(reason string, required bool) error {
	switch {
	case reason == "" && required:
		return payd.Invalid("reason", "is required")
	case payd.TextLen(reason) > payd.MaxReason:
		return payd.Invalid("reason", "must be at most 500 characters")
	}
	return nil
}

// handleExtensionCreate is POST /v2/instant/qr/{qrId}/extension.
func (s *Server) handleExtensionCreate(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	id, err := c.pathID("qrId")
	if err != nil {
		return err
	}
	in := terms(o)
	if err := o.err(in.ValidateFields(c.now, s.urls())); err != nil {
		return err
	}
	ext, err := s.store.CreateExtension(c.r.Context(), c.m.ID, id, in, c.now)
	if err != nil {
		return s.qrError(c, err, id)
	}
	return c.respond(extensionRef{ExtensionID: ext.ID})
}

// handleExtensionCancel is POST /v2/instant/qr/{qrId}/extension/cancel.
func (s *Server) handleExtensionCancel(c *call) error {
	o, err := c.object(false)
	if err != nil {
		return err
	}
	id, err := c.pathID("qrId")
	if err != nil {
		return err
	}
	if err := o.err(checkReason(o.str("reason"), false)); err != nil {
		return err
	}
	extID, err := s.store.CancelExtension(c.r.Context(), c.m.ID, id, c.now)
	if err != nil {
		return s.qrError(c, err, id)
	}
	return c.respond(extensionRef{ExtensionID: extID})
}

var qrSortFields = []string{"orderId", "type", "amountType", "status", "createdAt", "expiresAt"}

func qrSortErr(p string) *payd.Error { return payd.E(payd.CodeQRSorting, "parameter", p) }

// handleQRList is GET /v2/instant/qr.
func (s *Server) handleQRList(c *call) error {
	q := newQuery(c)
	f := sqlstore.QRFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(defaultPage, pagingParam)
	f.SortBy, f.Desc = q.sorting(qrSortFields, "createdAt", qrSortErr)
	f.QRID, f.ExtensionID = q.id("qrId"), q.id("extensionId")
	f.OrderID, f.Description = q.text("orderId", payd.MaxOrderID), q.text("description", payd.MaxDescription)
	f.TerminalID = q.text("terminalId", payd.MaxTerminalID)
	if v := q.str("type"); v != "" {
		if f.Type = canonical(v, "Static", "Dynamic", "Hybrid"); f.Type == "" {
			q.errs = append(q.errs, payd.E(payd.CodeQRType, "value", v))
		}
	}
	if v := q.str("amountType"); v != "" {
		if f.AmountType = canonical(v, "Fixed", "Controlled", "Free"); f.AmountType == "" {
			q.bad("amountType", "must be Fixed, Controlled or Free")
		}
	}
	if v := q.str("status"); v != "" {
		st, ok := payd.ParseQRStatus(v)
		if !ok {
			q.errs = append(q.errs, payd.E(payd.CodeQRStatus, "value", v))
		}
		f.Status = string(st)
	}
	f.AmountFrom, f.AmountTo = q.money("amountFrom"), q.money("amountTo")
	f.CreatedFrom, f.CreatedTo = q.time("createdAtFrom"), q.time("createdAtTo")
	f.ExpiresFrom, f.ExpiresTo = q.time("expiresAtFrom"), q.time("expiresAtTo")
	if err := q.err(); err != nil {
		return err
	}
	qs, total, err := s.store.QRs(c.r.Context(), f, c.now)
	if err != nil {
		return err
	}
	items := make([]qrRecord, len(qs))
	for i, qr := range qs {
		items[i] = s.qrRecord(qr)
	}
	return c.respond(listResult[qrRecord]{TotalCount: total, Items: items})
}

var extSortFields = []string{"createdAt", "expiresAt", "status", "orderId", "amount"}

// handleExtensionList is GET /v2/instant/qr/extension.
func (s *Server) handleExtensionList(c *call) error {
	q := newQuery(c)
	f := sqlstore.ExtensionFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(defaultPage, pagingParam)
	f.SortBy, f.Desc = q.sorting(extSortFields, "createdAt", qrSortErr)
	f.QRID, f.ExtensionID, f.OrderID = q.id("qrId"), q.id("extensionId"), q.text("orderId", payd.MaxOrderID)
	if v := q.str("status"); v != "" {
		st, ok := payd.ParseExtensionStatus(v)
		if !ok {
			q.errs = append(q.errs, payd.E(payd.CodeQRStatus, "value", v))
		}
		f.Status = string(st)
	}
	f.CreatedFrom, f.CreatedTo = q.time("createdAtFrom"), q.time("createdAtTo")
	f.ExpiresFrom, f.ExpiresTo = q.time("expiresAtFrom"), q.time("expiresAtTo")
	if err := q.err(); err != nil {
		return err
	}
	xs, total, err := s.store.Extensions(c.r.Context(), f, c.now)
	if err != nil {
		return err
	}
	items := make([]extensionRecord, len(xs))
	for i, x := range xs {
		items[i] = extensionRecordOf(x)
	}
	return c.respond(listResult[extensionRecord]{TotalCount: total, Items: items})
}

// handleTestPay is POST /v2/instant/test-pay (sandbox).
func (s *Server) handleTestPay(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	in := payInput(o)
	if err := o.err(in.Validate()); err != nil {
		return err
	}
	q, p, err := s.payer.PayQR(c.r.Context(), c.m.ID, in, c.now)
	if err != nil {
		return s.qrError(c, err, in.QRID)
	}
	return c.respond(testPayResult{
		QRID: q.ID, QRStatus: string(q.Status), OrderID: p.OrderID, PayID: p.ID, Amount: p.Amount, Commission: p.Commission,
		Currency: p.Currency, PayerName: p.SenderName, PayerIBAN: p.SenderIBAN, ExecutedAt: wireTime(p.ExecutedAt),
		SignatureKey: c.m.SignatureKey,
	})
}

func payInput(o *object) payd.PayInput {
	in := payd.PayInput{Amount: o.money("amount"), IBAN: o.str("iban"), Currency: o.str("currency"), PayerName: o.str("payerName")}
	if raw := o.str("qrId"); raw != "" {
		if id, ok := payd.ParseID(raw); ok {
			in.QRID = id
		}
	}
	return in
}

// handleQRPaymentGet is GET /v2/instant/payments/{payId}.
func (s *Server) handleQRPaymentGet(c *call) error {
	id, err := c.pathID("payId")
	if err != nil {
		return err
	}
	p, err := s.store.Payment(c.r.Context(), c.m.ID, id)
	if err != nil || p.Kind != payd.PaymentQR {
		return payd.E(payd.CodePaymentNotFound, "payId", id)
	}
	return c.respond(qrPaymentOf(p))
}

var qrPaymentSortFields = []string{"orderId", "amount", "status", "executedAt"}

// handleQRPaymentList is GET /v2/instant/payments.
func (s *Server) handleQRPaymentList(c *call) error {
	q := newQuery(c)
	f := sqlstore.PaymentFilter{MerchantID: c.m.ID, Kind: payd.PaymentQR}
	f.Count, f.Offset = q.paging(defaultPage, pagingParam)
	f.SortBy, f.Desc = q.sorting(qrPaymentSortFields, "executedAt", qrSortErr)
	if f.SortBy == "status" {
		f.SortBy = "qrStatus"
	}
	f.ID, f.QRID, f.ExtensionID = q.id("payId"), q.id("qrId"), q.id("extensionId")
	f.ReferenceNumber, f.OrderID = q.text("referenceId", payd.MaxReferenceID), q.text("orderId", payd.MaxOrderID)
	f.AmountFrom, f.AmountTo = q.money("amountFrom"), q.money("amountTo")
	f.Description, f.SenderName = q.text("description", payd.MaxDescription), q.text("payerName", payd.MaxPayerName)
	f.SenderIBAN, f.TerminalID = q.text("payerIban", payd.MaxIBAN), q.text("terminalId", payd.MaxTerminalID)
	f.ExecutedFrom, f.ExecutedTo = q.time("executedAtFrom"), q.time("executedAtTo")
	if v := q.str("status"); v != "" {
		if f.QRStatus = canonical(v, payd.PaymentExecuted, payd.PaymentRefunded); f.QRStatus == "" {
			q.bad("status", "must be Executed or Refunded")
		}
	}
	if err := q.err(); err != nil {
		return err
	}
	ps, total, err := s.store.Payments(c.r.Context(), f)
	if err != nil {
		return err
	}
	items := make([]qrPayment, len(ps))
	for i, p := range ps {
		items[i] = qrPaymentOf(p)
	}
	return c.respond(listResult[qrPayment]{TotalCount: total, Items: items})
}
