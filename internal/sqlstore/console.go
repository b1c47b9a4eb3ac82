package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"payd"
)

// StateCount is how many of a merchant's objects of one kind are in one
// stored status.
type StateCount struct {
	Object, Status string
	N              int
}

// StateCounts counts the merchant's RTPs, QRs, checkouts, refunds and
// callbacks by stored status (the expiry loop keeps it current within
// seconds), and its payments by whether they are refunded.
func (s *Store) StateCounts(ctx context.Context, merchantID string, now time.Time) ([]StateCount, error) {
	var out []StateCount
	n := ms(now)
	// Deadlines apply as of now, as every read applies them (rtpStatusExpr,
	// qrStatusExpr, checkoutStatusExpr): counts read right after the test
	// clock moved, before the expiry loop writes, are already current.
	for _, q := range []struct {
		object, sql string
		args        []any
	}{
		{payd.ObjectRTP, "SELECT " + rtpStatusExpr + " AS st, COUNT(*) FROM rtps WHERE merchant_id = ? GROUP BY st ORDER BY st", []any{n, merchantID}},
		{payd.ObjectQR, "SELECT " + qrStatusExpr + " AS st, COUNT(*)" + qrFrom + " WHERE q.merchant_id = ? GROUP BY st ORDER BY st",
			[]any{s.qrInactivity().Milliseconds(), n, n, merchantID}},
		{payd.ObjectCheckout, "SELECT " + checkoutStatusExpr + " AS st, COUNT(*) FROM checkouts c WHERE c.merchant_id = ? GROUP BY st ORDER BY st",
			[]any{n, n, merchantID}},
		{payd.ObjectPayment, `SELECT CASE WHEN failed = 1 THEN 'Failed' WHEN refunded = amount THEN 'Refunded'
			WHEN refunded > 0 THEN 'PartiallyRefunded' ELSE 'Executed' END AS st, COUNT(*) FROM payments WHERE merchant_id = ? GROUP BY st ORDER BY st`,
			[]any{merchantID}},
		{payd.ObjectRefund, "SELECT status, COUNT(*) FROM refunds WHERE merchant_id = ? GROUP BY status ORDER BY status", []any{merchantID}},
		{"callback", "SELECT state, COUNT(*) FROM callbacks WHERE merchant_id = ? GROUP BY state ORDER BY state", []any{merchantID}},
	} {
		rows, err := s.query(ctx, q.sql, q.args...)
		if err != nil {
			return nil, fmt.Errorf("count %s: %w", q.object, err)
		}
		got, err := scanAll(rows, func(sc scanner) (StateCount, error) {
			c := StateCount{Object: q.object}
			return c, sc.Scan(&c.Status, &c.N)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// RefundFilter selects a merchant's refunds, newest first.
type RefundFilter struct {
	MerchantID, PaymentID, Status string
	CreatedFrom, CreatedTo        time.Time // zero: unbounded
	Oldest                        bool      // oldest first
	Count, Offset                 int
}

// Refunds lists the refunds matching f and counts all matches.
func (s *Store) Refunds(ctx context.Context, f RefundFilter) ([]*payd.Refund, int, error) {
	where, args := " WHERE merchant_id = ?", []any{f.MerchantID}
	if f.PaymentID != "" {
		where, args = where+" AND payment_id = ?", append(args, f.PaymentID)
	}
	if f.Status != "" {
		where, args = where+" AND status = ?", append(args, f.Status)
	}
	if !f.CreatedFrom.IsZero() {
		where, args = where+" AND created_at >= ?", append(args, ms(f.CreatedFrom))
	}
	if !f.CreatedTo.IsZero() {
		where, args = where+" AND created_at <= ?", append(args, ms(f.CreatedTo))
	}
	total, err := s.count(ctx, "SELECT COUNT(*) FROM refunds"+where, args)
	if err != nil {
		return nil, 0, fmt.Errorf("count refunds: %w", err)
	}
	order := " ORDER BY created_at DESC, id"
	if f.Oldest {
		order = " ORDER BY created_at, id"
	}
	rows, err := s.query(ctx, "SELECT "+refundCols+" FROM refunds"+where+order+s.limit(f.Count, f.Offset), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("refunds: %w", err)
	}
	rs, err := scanAll(rows, scanRefund)
	return rs, total, err
}

// RevokeToken ends an access token (the console's sign out).
func (s *Store) RevokeToken(ctx context.Context, token string) error {
	err := s.write1(ctx, "DELETE FROM tokens WHERE hash = ?", payd.HashSecret(token))
	if err == nil {
		s.forgetMerchant("") // rare: a sign out
	}
	return err
}

// FailedCallbacksSince counts the merchant's callbacks created since t
// that failed (the console's overview).
func (s *Store) FailedCallbacksSince(ctx context.Context, merchantID string, t time.Time) (int, error) {
	return s.count(ctx, "SELECT COUNT(*) FROM callbacks WHERE merchant_id = ? AND state = 'failed' AND created_at >= ?", []any{merchantID, ms(t)})
}

// ObjectAmount is an object's amount as the console's timelines name it.
type ObjectAmount struct {
	Amount   payd.Money
	Currency string
}

// ObjectAmounts are the amounts of the objects of changes that have one
// (RTPs, checkouts, payments, refunds, QRs with a fixed amount), by id.
func (s *Store) ObjectAmounts(ctx context.Context, merchantID string, changes []*payd.Change) (map[string]ObjectAmount, error) {
	out := map[string]ObjectAmount{}
	byTable := map[string][]any{}
	table := map[string]string{payd.ObjectRTP: "rtps", payd.ObjectCheckout: "checkouts", payd.ObjectPayment: "payments",
		payd.ObjectRefund: "refunds", payd.ObjectQR: "qrs"}
	for _, ch := range changes {
		if t := table[ch.Object]; t != "" {
			byTable[t] = append(byTable[t], ch.ObjectID)
		}
	}
	for t, ids := range byTable {
		rows, err := s.query(ctx, "SELECT id, amount, currency FROM "+t+" WHERE merchant_id = ? AND amount IS NOT NULL AND id IN ("+
			strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+")", append([]any{merchantID}, ids...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, ccy string
			var amount int64
			if err := rows.Scan(&id, &amount, &ccy); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = ObjectAmount{Amount: payd.Money(amount), Currency: ccy}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
