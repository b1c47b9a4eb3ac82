package httpapi

import (
	"encoding/json"
	"errors"

	"payd"
)

// handleRTPCreate is POST /v2/rtp.
func (s *Server) handleRTPCreate(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	in := payd.RTPInput{
		Alias: o.str("alias"), Amount: o.money("amount"), Currency: o.str("currency"),
		Description: o.str("description"), OrderID: o.str("orderId"), TerminalID: o.str("terminalId"),
		CallbackURL: o.str("callbackUrl"), RedirectURL: o.str("redirectUrl"),
	}
	in.ExpiresAt, in.ExpiresRaw = o.time("expiresAt")
	if err := o.err(in.Validate(c.now, s.urls())); err != nil {
		return err
	}
	r, err := payd.NewRTP(in, c.m.ID, c.now)
	if err != nil {
		return err
	}
	if s.payer != nil {
		if err := s.payer.NewRTP(r, c.now); err != nil {
			return err
		}
	}
	if err := s.store.CreateRTP(c.r.Context(), c.m, r); err != nil {
		return err
	}
	return c.respond(rtpCreated{RTPID: r.ID, OrderID: r.OrderID, ExpiresAt: wireTime(r.ExpiresAt)})
}

// handleRTPGet is GET /v2/rtp/{id}.
func (s *Server) handleRTPGet(c *call) error {
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	r, err := s.store.RTP(c.r.Context(), c.m.ID, id, c.now)
	if err != nil {
		return c.notFound(err, id)
	}
	return c.respond(s.rtpRecord(r))
}

// handleRTPCancel is POST /v2/rtp/{id}/cancel.
func (s *Server) handleRTPCancel(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	reason := o.str("reason")
	var errs payd.Errors
	if reason == "" {
		errs = append(errs, payd.Invalid("reason", "is required"))
	} else if payd.TextLen(reason) > payd.MaxReason {
		errs = append(errs, payd.Invalid("reason", "must be at most 500 characters"))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	r, err := s.store.CancelRTP(c.r.Context(), c.m.ID, id, reason, c.now)
	if err != nil {
		return s.rtpError(c, err, id)
	}
	return c.respond(statusResult{RTPID: r.ID, Status: r.Status.OperationStatus()})
}

// rtpError maps store errors of an RTP transition: not found, or a lost
// race, which reports the status that won.
func (s *Server) rtpError(c *call, err error, id string) error {
	if errors.Is(err, payd.ErrConflict) {
		if r, rerr := s.store.RTP(c.r.Context(), c.m.ID, id, c.now); rerr == nil {
			return payd.E(payd.CodeRTPState, "status", string(r.Status))
		}
	}
	return c.notFound(err, id)
}

// handleRTPTestAccept is POST /v2/rtp/{id}/test-accept (sandbox).
func (s *Server) handleRTPTestAccept(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	amount, currency := o.money("amount"), o.str("currency")
	var errs payd.Errors
	if amount == nil && !o.errs.Has("amount") {
		errs = append(errs, payd.Invalid("amount", "is required"))
	}
	if currency != "MDL" {
		errs = append(errs, payd.E(payd.CodeRTPCurrency, "value", currency))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	r, p, err := s.payer.AcceptRTP(c.r.Context(), c.m.ID, id, amount, c.now)
	if err != nil {
		return s.rtpError(c, err, id)
	}
	return c.respond(acceptResult(payd.RTPAcceptedFields(r, p), c.m.SignatureKey))
}

// acceptResult is a simulation result: the signed fields and their
// signature, as the seed's sample body has them (rtpStatus, not a second
// status key), so a client that signs the result's fields gets the
// signature it carries.
func acceptResult(fs payd.Fields, key string) json.RawMessage {
	out := append(append(make(payd.Fields, 0, len(fs)+1), fs...), payd.Str("signature", fs.Sign(key)))
	return out.AppendJSON(nil, true)
}

// handleRTPTestReject is POST /v2/rtp/{id}/test-reject (sandbox).
func (s *Server) handleRTPTestReject(c *call) error {
	if err := c.noBody(); err != nil {
		return err
	}
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	r, err := s.payer.RejectRTP(c.r.Context(), c.m.ID, id, c.now)
	if err != nil {
		return s.rtpError(c, err, id)
	}
	return c.respond(acceptResult(payd.RTPRejectedFields(r), c.m.SignatureKey))
}

var rtpSortFields = []string{"orderId", "type", "amount", "status", "createdAt", "expiresAt"}

// handleRTPList is GET /v2/rtp.
func (s *Server) handleRTPList(c *call) error {
	q := newQuery(c)
	f := payd.RTPFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(defaultPage, pagingParam)
	sortBad := func(p string) *payd.Error { return payd.E(payd.CodeRTPSorting, "parameter", p) }
	f.SortBy, f.Desc = q.sorting(rtpSortFields, "createdAt", sortBad)
	f.RTPID = q.id("rtpId")
	f.OrderID = q.text("orderId", payd.MaxOrderID)
	f.Amount = q.money("amount")
	f.Description = q.text("description", payd.MaxDescription)
	f.TerminalID = q.text("terminalId", payd.MaxTerminalID)
	f.CreatedFrom, f.CreatedTo = q.time("createdAtFrom"), q.time("createdAtTo")
	f.ExpiresFrom, f.ExpiresTo = q.time("expiresAtFrom"), q.time("expiresAtTo")
	if st := q.str("status"); st != "" {
		var ok bool
		if f.Statuses, ok = payd.ParseRTPStatusFilter(st); !ok {
			q.errs = append(q.errs, payd.E(payd.CodeRTPStatusFilter, "value", st))
		}
	}
	if err := q.err(); err != nil {
		return err
	}
	rs, total, err := s.store.RTPs(c.r.Context(), f, c.now)
	if err != nil {
		return err
	}
	items := make([]rtpRecord, len(rs))
	for i, r := range rs {
		items[i] = s.rtpRecord(r)
	}
	return c.respond(rtpList{TotalCount: total, Items: items})
}
