package httpapi

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"payd"
	"payd/internal/sqlstore"
)

// checkoutInput decodes a registration with the checkout area's codes:
// wrong types and bad formats are 42005, naming the field by its path.
func checkoutInput(o *object) payd.CheckoutInput {
	in := payd.CheckoutInput{
		Amount: o.money("amount"), Currency: o.str("currency"), Language: o.str("language"),
		CallbackURL: o.str("callbackUrl"), SuccessURL: o.str("successUrl"), FailURL: o.str("failUrl"),
	}
	if raw, ok := o.raw("orderInfo"); ok {
		if oo := o.sub("orderInfo", raw); oo != nil {
			ord := &payd.Order{ID: oo.str("id"), Description: oo.str("description"), Amount: oo.money("orderAmount"),
				Currency: oo.str("orderCurrency"), DeliveryAmount: oo.money("deliveryAmount"), DeliveryCurrency: oo.str("deliveryCurrency"),
				Items: []payd.OrderItem{}}
			if t, _ := oo.time("date"); t != nil {
				ord.Date = *t
			}
			if raw, ok := oo.raw("items"); ok {
				var items []json.RawMessage
				if json.Unmarshal(raw, &items) != nil {
					oo.typeError("items", "an array")
				}
				for i, it := range items {
					io := oo.sub("items["+strconv.Itoa(i)+"]", it)
					if io == nil {
						continue
					}
					item := payd.OrderItem{ExternalID: io.str("externalId"), Title: io.str("title"), Amount: io.money("amount"),
						Currency: io.str("currency"), Quantity: io.quantity("quantity"), DisplayOrder: io.integer("displayOrder")}
					ord.Items = append(ord.Items, item)
				}
			}
			in.Order = ord
		}
	}
	if raw, ok := o.raw("payerInfo"); ok {
		if po := o.sub("payerInfo", raw); po != nil {
			in.Payer = &payd.Payer{Name: po.str("name"), Email: po.str("email"), Phone: po.str("phone"), IP: po.str("ip"), UserAgent: po.str("userAgent")}
		}
	}
	return in
}

// handleCheckoutCreate is POST /v2/checkouts.
func (s *Server) handleCheckoutCreate(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	in := checkoutInput(o)
	if err := o.err(in.Validate(s.cfg.Currencies, s.urls())); err != nil {
		return err
	}
	co := payd.NewCheckout(in, c.m.ID, s.cfg.CheckoutLife, c.now)
	if err := s.store.CreateCheckout(c.r.Context(), co); err != nil {
		return err
	}
	return c.respond(checkoutCreated{CheckoutID: co.ID, CheckoutURL: s.checkoutURL(co.ID)})
}

func (s *Server) checkoutURL(id string) string { return s.cfg.PublicURL + "/checkout/" + id }

// handleCheckoutGet is GET /v2/checkouts/{id}.
func (s *Server) handleCheckoutGet(c *call) error {
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	co, err := s.store.Checkout(c.r.Context(), c.m.ID, id, c.now)
	if err != nil {
		return c.notFound(err, id)
	}
	recs, err := s.checkoutRecords(c, []*payd.Checkout{co})
	if err != nil {
		return err
	}
	return c.respond(recs[0])
}

func (s *Server) checkoutRecords(c *call, cos []*payd.Checkout) ([]checkoutRecord, error) {
	var ids []string
	for _, co := range cos {
		if co.PaymentID != "" {
			ids = append(ids, co.PaymentID)
		}
	}
	pays, err := s.store.PaymentsByID(c.r.Context(), c.m.ID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]checkoutRecord, len(cos))
	for i, co := range cos {
		out[i] = checkoutRecordOf(co, s.checkoutURL(co.ID), pays[co.PaymentID])
	}
	return out, nil
}

// handleCheckoutCancel is POST /v2/checkouts/{id}/cancel.
func (s *Server) handleCheckoutCancel(c *call) error {
	if err := c.noBody(); err != nil {
		return err
	}
	id, err := c.pathID("id")
	if err != nil {
		return err
	}
	co, err := s.store.CancelCheckout(c.r.Context(), c.m.ID, id, c.now)
	if errors.Is(err, payd.ErrConflict) {
		if cur, rerr := s.store.Checkout(c.r.Context(), c.m.ID, id, c.now); rerr == nil {
			return payd.E(payd.CodeCheckoutState, "status", string(cur.Status))
		}
	}
	if err != nil {
		return c.notFound(err, id)
	}
	return c.respond(checkoutCancelled{CheckoutID: co.ID, Status: string(co.Status)})
}

var checkoutSortFields = []string{"createdAt", "amount", "status", "expiresAt", "failedAt", "cancelledAt", "completedAt"}

// handleCheckoutList is GET /v2/checkouts.
func (s *Server) handleCheckoutList(c *call) error {
	q := newQuery(c)
	paging := func(p string) *payd.Error { return payd.E(payd.CodeCheckoutPaging, "parameter", p) }
	f := sqlstore.CheckoutFilter{MerchantID: c.m.ID}
	f.Count, f.Offset = q.paging(0, paging)
	f.SortBy, f.Desc = q.sorting(checkoutSortFields, "createdAt", paging)
	f.ID, f.OrderID = q.id("id"), q.text("orderId", 100)
	if v := q.str("status"); v != "" {
		for _, st := range payd.CheckoutStatuses {
			if strings.EqualFold(v, string(st)) {
				f.Status = string(st)
			}
		}
		if f.Status == "" {
			q.bad("status", "must be a checkout status")
		}
	}
	f.MinAmount, f.MaxAmount = q.money("minAmount"), q.money("maxAmount")
	f.Currency, f.Language = q.str("currency"), q.str("language")
	f.PayerName, f.PayerEmail = q.text("payerName", payd.MaxPayerName), q.text("payerEmail", 254)
	f.PayerPhone, f.PayerIP = q.str("payerPhone"), q.str("payerIp")
	f.CreatedFrom, f.CreatedTo = q.time("createdAtFrom"), q.time("createdAtTo")
	f.ExpiresFrom, f.ExpiresTo = q.time("expiresAtFrom"), q.time("expiresAtTo")
	f.CancelledFrom, f.CancelledTo = q.time("cancelledAtFrom"), q.time("cancelledAtTo")
	f.FailedFrom, f.FailedTo = q.time("failedAtFrom"), q.time("failedAtTo")
	f.CompletedFrom, f.CompletedTo = q.time("completedAtFrom"), q.time("completedAtTo")
	if err := q.err(); err != nil {
		return err
	}
	page := func(offset, count int, counted bool) ([]checkoutRecord, int, error) {
		f.Offset, f.Count, f.Uncounted = offset, count, !counted
		cos, total, err := s.store.Checkouts(c.r.Context(), f, c.now)
		if err != nil {
			return nil, 0, err
		}
		items, err := s.checkoutRecords(c, cos)
		return items, total, err
	}
	if f.Count == 0 {
		return streamAll(c, f.Offset, page)
	}
	items, total, err := page(f.Offset, f.Count, true)
	if err != nil {
		return err
	}
	return c.respond(countedList[checkoutRecord]{Items: items, Count: len(items), TotalCount: total})
}
