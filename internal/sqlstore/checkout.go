package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"payd"
)

// storedOrder is the JSON form of an order in checkouts.order_json.
type storedOrder struct {
	ID               string       `json:"id,omitempty"`
	Description      string       `json:"description,omitempty"`
	Date             int64        `json:"date,omitempty"`
	Amount           *int64       `json:"amount,omitempty"`
	Currency         string       `json:"currency,omitempty"`
	DeliveryAmount   *int64       `json:"deliveryAmount,omitempty"`
	DeliveryCurrency string       `json:"deliveryCurrency,omitempty"`
	Items            []storedItem `json:"items"`
}

type storedItem struct {
	ExternalID   string `json:"externalId,omitempty"`
	Title        string `json:"title,omitempty"`
	Amount       *int64 `json:"amount,omitempty"`
	Currency     string `json:"currency,omitempty"`
	Quantity     *int64 `json:"quantity,omitempty"`
	DisplayOrder *int   `json:"displayOrder,omitempty"`
}

func i64(m *payd.Money) *int64 {
	if m == nil {
		return nil
	}
	v := int64(*m)
	return &v
}

func money(v *int64) *payd.Money {
	if v == nil {
		return nil
	}
	m := payd.Money(*v)
	return &m
}

func encodeOrder(o *payd.Order) (any, error) {
	if o == nil {
		return nil, nil
	}
	so := storedOrder{ID: o.ID, Description: o.Description, Amount: i64(o.Amount), Currency: o.Currency,
		DeliveryAmount: i64(o.DeliveryAmount), DeliveryCurrency: o.DeliveryCurrency, Items: []storedItem{}}
	if !o.Date.IsZero() {
		so.Date = o.Date.UnixMilli()
	}
	for _, it := range o.Items {
		si := storedItem{ExternalID: it.ExternalID, Title: it.Title, Amount: i64(it.Amount), Currency: it.Currency, DisplayOrder: it.DisplayOrder}
		if it.Quantity != nil {
			q := int64(*it.Quantity)
			si.Quantity = &q
		}
		so.Items = append(so.Items, si)
	}
	b, err := json.Marshal(so)
	return string(b), err
}

func decodeOrder(s sql.NullString) (*payd.Order, error) {
	if !s.Valid {
		return nil, nil
	}
	var so storedOrder
	if err := json.Unmarshal([]byte(s.String), &so); err != nil {
		return nil, fmt.Errorf("decode order: %w", err)
	}
	o := &payd.Order{ID: so.ID, Description: so.Description, Amount: money(so.Amount), Currency: so.Currency,
		DeliveryAmount: money(so.DeliveryAmount), DeliveryCurrency: so.DeliveryCurrency, Items: []payd.OrderItem{}}
	if so.Date != 0 {
		o.Date = payd.UnixMilli(so.Date)
	}
	for _, si := range so.Items {
		it := payd.OrderItem{ExternalID: si.ExternalID, Title: si.Title, Amount: money(si.Amount), Currency: si.Currency, DisplayOrder: si.DisplayOrder}
		if si.Quantity != nil {
			q := payd.Quantity(*si.Quantity)
			it.Quantity = &q
		}
		o.Items = append(o.Items, it)
	}
	return o, nil
}

const checkoutCols = `c.id, c.merchant_id, c.status, c.amount, c.currency, c.callback_url, c.success_url, c.fail_url, c.language,
	c.order_json, c.has_payer, c.payer_name, c.payer_email, c.payer_phone, c.payer_ip, c.payer_user_agent, c.method, c.qr_id,
	c.payment_id, c.created_at, c.updated_at, c.expires_at, c.completed_at, c.failed_at, c.cancelled_at`

func scanCheckout(sc scanner) (*payd.Checkout, error) {
	var c payd.Checkout
	var status string
	var cb, succ, fail, order, pname, pemail, pphone, pip, pua, method, qr, pay sql.NullString
	var hasPayer int
	var created, updated, expires int64
	var completed, failed, cancelled sql.NullInt64
	if err := sc.Scan(&c.ID, &c.MerchantID, &status, &c.Amount, &c.Currency, &cb, &succ, &fail, &c.Language, &order,
		&hasPayer, &pname, &pemail, &pphone, &pip, &pua, &method, &qr, &pay, &created, &updated, &expires,
		&completed, &failed, &cancelled); err != nil {
		return nil, notFound(err)
	}
	c.Status = payd.CheckoutStatus(status)
	c.CallbackURL, c.SuccessURL, c.FailURL = cb.String, succ.String, fail.String
	var err error
	if c.Order, err = decodeOrder(order); err != nil {
		return nil, err
	}
	if hasPayer == 1 {
		c.Payer = &payd.Payer{Name: pname.String, Email: pemail.String, Phone: pphone.String, IP: pip.String, UserAgent: pua.String}
	}
	c.Method, c.QRID, c.PaymentID = method.String, qr.String, pay.String
	c.CreatedAt, c.UpdatedAt, c.ExpiresAt = payd.UnixMilli(created), payd.UnixMilli(updated), payd.UnixMilli(expires)
	c.CompletedAt, c.FailedAt, c.CancelledAt = fromNullMS(completed), fromNullMS(failed), fromNullMS(cancelled)
	return &c, nil
}

// CreateCheckout stores a new checkout.
func (s *Store) CreateCheckout(ctx context.Context, c *payd.Checkout) error {
	order, err := encodeOrder(c.Order)
	if err != nil {
		return err
	}
	var p payd.Payer
	hasPayer := 0
	if c.Payer != nil {
		p, hasPayer = *c.Payer, 1
	}
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, `INSERT INTO checkouts (id, merchant_id, status, amount, currency, callback_url, success_url, fail_url,
			language, order_json, order_id, has_payer, payer_name, payer_email, payer_phone, payer_ip, payer_user_agent,
			created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.MerchantID, string(c.Status), c.Amount, c.Currency, nullStr(c.CallbackURL), nullStr(c.SuccessURL),
			nullStr(c.FailURL), c.Language, order, nullStr(c.OrderID()), hasPayer, nullStr(p.Name), nullStr(p.Email),
			nullStr(p.Phone), nullStr(p.IP), nullStr(p.UserAgent), ms(c.CreatedAt), ms(c.UpdatedAt), ms(c.ExpiresAt))
		if err != nil {
			return fmt.Errorf("create checkout: %w", err)
		}
		return nil
	})
}

// Checkout reads one of the merchant's checkouts as of now; merchantID ""
// reads any merchant's (the hosted page).
func (s *Store) Checkout(ctx context.Context, merchantID, id string, now time.Time) (*payd.Checkout, error) {
	q := "SELECT " + checkoutCols + " FROM checkouts c WHERE c.id = ?"
	args := []any{id}
	if merchantID != "" {
		q += " AND c.merchant_id = ?"
		args = append(args, merchantID)
	}
	c, err := scanCheckout(s.queryRow(ctx, q, args...))
	if err != nil {
		return nil, err
	}
	c.Observe(now)
	return c, nil
}

func (t *tx) lockCheckout(ctx context.Context, id string) (*payd.Checkout, error) {
	return scanCheckout(t.queryRow(ctx, "SELECT "+checkoutCols+" FROM checkouts c WHERE c.id = ?"+t.s.d.forUpdate(), id))
}

func (t *tx) saveCheckout(ctx context.Context, c *payd.Checkout, from payd.CheckoutStatus) error {
	res, err := t.exec(ctx, `UPDATE checkouts SET status = ?, method = ?, qr_id = ?, payment_id = ?, updated_at = ?,
		completed_at = ?, failed_at = ?, cancelled_at = ? WHERE id = ? AND status = ?`,
		string(c.Status), nullStr(c.Method), nullStr(c.QRID), nullStr(c.PaymentID), ms(c.UpdatedAt),
		nullMS(c.CompletedAt), nullMS(c.FailedAt), nullMS(c.CancelledAt), c.ID, string(from))
	if err != nil {
		return fmt.Errorf("save checkout %s: %w", c.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payd.ErrConflict
	}
	return t.event(ctx, c.MerchantID, payd.ObjectCheckout, c.ID, string(from), string(c.Status), c.UpdatedAt)
}

// updateCheckout runs a transition on a checkout (of merchantID, or any
// when "") under its row lock, and saves it.
func (s *Store) updateCheckout(ctx context.Context, merchantID, id string, f func(t *tx, c *payd.Checkout) error) (*payd.Checkout, error) {
	var c *payd.Checkout
	err := s.inTx(ctx, func(t *tx) error {
		var err error
		c, err = t.transitionCheckout(ctx, merchantID, id, f)
		return err
	})
	return c, err
}

// transitionCheckout locks a checkout (of merchantID, or any when ""),
// runs f on it and saves it.
func (t *tx) transitionCheckout(ctx context.Context, merchantID, id string, f func(t *tx, c *payd.Checkout) error) (*payd.Checkout, error) {
	c, err := t.lockCheckout(ctx, id)
	if err != nil {
		return nil, err
	}
	if merchantID != "" && c.MerchantID != merchantID {
		return nil, payd.ErrNotFound
	}
	from := c.Status
	if err := f(t, c); err != nil {
		return nil, err
	}
	return c, t.saveCheckout(ctx, c, from)
}

// updateCheckoutAndQR is updateCheckout for a transition that may change
// the checkout's QR too (a card payment, a cancel). Locks are taken in one
// order everywhere, a QR before its checkout, as a payer's credit of the
// QR takes them (Credit): the checkout's QR is found and locked first. A
// QR the checkout gained between that read and the checkout's lock (a
// payer choosing MiaQr at that moment) is locked after; should a credit of
// that brand-new QR meet it, PostgreSQL ends one of the two as a deadlock,
// which is Unavailable: nothing is applied and its sender tries again.
func (s *Store) updateCheckoutAndQR(ctx context.Context, merchantID, id string, f func(t *tx, c *payd.Checkout) error) (*payd.Checkout, error) {
	var c *payd.Checkout
	err := s.inTx(ctx, func(t *tx) error {
		var err error
		c, err = t.transitionCheckoutAndQR(ctx, merchantID, id, f)
		return err
	})
	return c, err
}

// transitionCheckoutAndQR is updateCheckoutAndQR in the transaction t.
func (t *tx) transitionCheckoutAndQR(ctx context.Context, merchantID, id string, f func(t *tx, c *payd.Checkout) error) (*payd.Checkout, error) {
	var qrID sql.NullString
	switch err := t.queryRow(ctx, "SELECT qr_id FROM checkouts WHERE id = ?", id).Scan(&qrID); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, payd.ErrNotFound
	case err != nil:
		return nil, err
	}
	if qrID.Valid {
		var one int
		if err := t.queryRow(ctx, "SELECT 1 FROM qrs WHERE id = ?"+t.s.d.forUpdate(), qrID.String).Scan(&one); err != nil {
			return nil, fmt.Errorf("lock checkout qr: %w", err)
		}
	}
	return t.transitionCheckout(ctx, merchantID, id, f)
}

// OpenCheckout records that the payer opened the page.
func (s *Store) OpenCheckout(ctx context.Context, id string, now time.Time) (*payd.Checkout, error) {
	c, err := s.Checkout(ctx, "", id, now)
	if err != nil || c.Status != payd.CheckoutWaiting {
		return c, err
	}
	c, err = s.updateCheckout(ctx, "", id, func(t *tx, c *payd.Checkout) error {
		c.Open(now)
		return nil
	})
	return c, err
}

// cancelCheckoutQR cancels the checkout's QR if it is still Active.
func (t *tx) cancelCheckoutQR(ctx context.Context, c *payd.Checkout, now time.Time) error {
	if c.QRID == "" {
		return nil
	}
	res, err := t.exec(ctx, "UPDATE qrs SET status = 'Cancelled', updated_at = ? WHERE id = ? AND status = 'Active'", ms(now), c.QRID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil
	}
	if err := t.event(ctx, c.MerchantID, payd.ObjectQR, c.QRID, string(payd.QRActive), string(payd.QRCancelled), now); err != nil {
		return err
	}
	return t.registerMoved(ctx, []string{c.QRID}, false, now) // the registry learns it cannot be paid
}

// CancelCheckout is the merchant's cancel; the checkout's QR is cancelled too.
func (s *Store) CancelCheckout(ctx context.Context, merchantID, id string, now time.Time) (*payd.Checkout, error) {
	c, err := s.updateCheckoutAndQR(ctx, merchantID, id, func(t *tx, c *payd.Checkout) error {
		if err := c.Cancel(now); err != nil {
			return err
		}
		return t.cancelCheckoutQR(ctx, c, now)
	})
	return c, err
}

// SelectCheckoutMethod records the payer's method; the first MiaQr
// selection creates the checkout's QR in the same transaction.
// cards says whether a card acquirer is configured that takes the
// checkout.
func (s *Store) SelectCheckoutMethod(ctx context.Context, id, method string, cards func(*payd.Checkout) bool, pageURL string, now time.Time) (*payd.Checkout, error) {
	c, err := s.updateCheckout(ctx, "", id, func(t *tx, c *payd.Checkout) error {
		m, err := t.merchant(ctx, c.MerchantID)
		if err != nil {
			return err
		}
		c.Open(now)
		needQR, err := c.SelectMethod(now, method, cards(c), m.Active)
		if err != nil || !needQR {
			return err
		}
		q := c.QR(pageURL, now)
		c.QRID = q.ID
		return t.insertQR(ctx, q, nil)
	})
	return c, err
}

// checkoutStatusExpr is a checkout's status as of now (args: now, now).
const checkoutStatusExpr = `CASE WHEN c.status = 'WaitingForInit' AND c.expires_at <= ? THEN 'Abandoned'
	WHEN c.status IN ('Initialized','PaymentMethodSelected') AND c.expires_at <= ? THEN 'Expired' ELSE c.status END`

// CheckoutFilter selects checkouts for the list.
type CheckoutFilter struct {
	MerchantID                 string
	ID, OrderID, Status        string
	MinAmount, MaxAmount       *payd.Money
	Currency, Language         string
	PayerName, PayerEmail      string
	PayerPhone, PayerIP        string
	CreatedFrom, CreatedTo     *time.Time
	ExpiresFrom, ExpiresTo     *time.Time
	CancelledFrom, CancelledTo *time.Time
	FailedFrom, FailedTo       *time.Time
	CompletedFrom, CompletedTo *time.Time
	SortBy                     string // createdAt amount status expiresAt failedAt cancelledAt completedAt
	Desc                       bool
	Count, Offset              int
	Uncounted                  bool // the caller needs no total (the next page of a stream)
}

var checkoutSortCols = map[string]string{
	"createdAt": "c.created_at", "amount": "c.amount", "expiresAt": "c.expires_at",
	"failedAt": "c.failed_at", "cancelledAt": "c.cancelled_at", "completedAt": "c.completed_at",
}

// Checkouts lists the merchant's checkouts matching f as of now.
func (s *Store) Checkouts(ctx context.Context, f CheckoutFilter, now time.Time) ([]*payd.Checkout, int, error) {
	var w where
	w.add("c.merchant_id = ?", f.MerchantID)
	w.opt("c.id = ?", f.ID)
	w.opt("c.order_id = ?", f.OrderID)
	if f.Status != "" {
		w.add("("+checkoutStatusExpr+") = ?", ms(now), ms(now), f.Status)
	}
	if f.MinAmount != nil {
		w.add("c.amount >= ?", int64(*f.MinAmount))
	}
	if f.MaxAmount != nil {
		w.add("c.amount <= ?", int64(*f.MaxAmount))
	}
	w.opt("c.currency = ?", f.Currency)
	w.opt("c.language = ?", strings.ToLower(f.Language))
	w.like(s.d, "c.payer_name", f.PayerName)
	if f.PayerEmail != "" {
		w.add("LOWER(c.payer_email) = ?", strings.ToLower(f.PayerEmail))
	}
	w.opt("c.payer_phone = ?", f.PayerPhone)
	w.opt("c.payer_ip = ?", f.PayerIP)
	w.timeRange("c.created_at", f.CreatedFrom, f.CreatedTo)
	w.timeRange("c.expires_at", f.ExpiresFrom, f.ExpiresTo)
	w.timeRange("c.cancelled_at", f.CancelledFrom, f.CancelledTo)
	w.timeRange("c.failed_at", f.FailedFrom, f.FailedTo)
	w.timeRange("c.completed_at", f.CompletedFrom, f.CompletedTo)
	total := -1
	if !f.Uncounted {
		var err error
		if total, err = s.count(ctx, "SELECT COUNT(*) FROM checkouts c"+w.sql(), w.args); err != nil {
			return nil, 0, fmt.Errorf("count checkouts: %w", err)
		}
	}
	args := w.args
	var order string
	if f.SortBy == "status" {
		order = orderBy("("+checkoutStatusExpr+")", false, f.Desc, "c.created_at", "c.id")
		args = append(append([]any{}, args...), ms(now), ms(now))
	} else {
		col := checkoutSortCols[f.SortBy]
		if col == "" {
			col = "c.created_at"
		}
		nullable := strings.HasSuffix(col, "ed_at") && col != "c.created_at"
		order = orderBy(col, nullable, f.Desc, "c.created_at", "c.id")
	}
	rows, err := s.query(ctx, "SELECT "+checkoutCols+" FROM checkouts c"+w.sql()+order+s.limit(f.Count, f.Offset), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list checkouts: %w", err)
	}
	out, err := scanAll(rows, scanCheckout)
	for _, c := range out {
		c.Observe(now)
	}
	return out, total, err
}

// PaymentsByID reads the merchant's payments with the given ids.
func (s *Store) PaymentsByID(ctx context.Context, merchantID string, ids []string) (map[string]*payd.Payment, error) {
	out := map[string]*payd.Payment{}
	if len(ids) == 0 {
		return out, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := []any{merchantID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.query(ctx, "SELECT "+paymentCols+paymentFrom+" WHERE p.merchant_id = ? AND p.id IN ("+marks+")", args...)
	if err != nil {
		return nil, err
	}
	ps, err := scanAll(rows, scanPayment)
	for _, p := range ps {
		out[p.ID] = p
	}
	return out, err
}

// checkoutDeadlines are the moves a checkout makes at its deadline: from, to.
var checkoutDeadlines = [][2]string{{"WaitingForInit", "Abandoned"}, {"Initialized", "Expired"}, {"PaymentMethodSelected", "Expired"}}

// dueCheckouts selects up to a number of checkouts of a status whose
// deadline has passed, spelling the open statuses as the partial index of
// them by deadline does (checkouts_due), so that both engines read it (see
// dueRTPs).
const dueCheckouts = `SELECT id FROM checkouts WHERE status IN ('WaitingForInit','Initialized','PaymentMethodSelected')
	AND ` + expiryDue + ` LIMIT ?`

// ExpireCheckouts writes Abandoned and Expired on checkouts past their
// deadline, dated at it.
func (s *Store) ExpireCheckouts(ctx context.Context, now time.Time, limit int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		for _, st := range checkoutDeadlines {
			k, err := t.transitions(ctx, payd.ObjectCheckout, st[0], st[1], `UPDATE checkouts SET status = ?, updated_at = expires_at
				WHERE id IN (`+dueCheckouts+`) AND status = ? RETURNING id, merchant_id, updated_at`, st[1], st[0], ms(now), limit, st[0])
			if err != nil {
				return fmt.Errorf("expire checkouts: %w", err)
			}
			n += k
		}
		return nil
	})
	return n, err
}
