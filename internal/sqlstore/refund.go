package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"payd"
)

const refundCols = `id, merchant_id, payment_id, amount, currency, reason, callback_url, status, full_refund,
	created_at, updated_at, executed_at, process_at`

func scanRefund(sc scanner) (*payd.Refund, error) {
	var r payd.Refund
	var cb sql.NullString
	var status string
	var full int
	var created, updated, process int64
	var executed sql.NullInt64
	if err := sc.Scan(&r.ID, &r.MerchantID, &r.PaymentID, &r.Amount, &r.Currency, &r.Reason, &cb, &status, &full,
		&created, &updated, &executed, &process); err != nil {
		return nil, notFound(err)
	}
	r.CallbackURL, r.Status, r.Full = cb.String, payd.RefundStatus(status), full == 1
	r.CreatedAt, r.UpdatedAt, r.ExecutedAt, r.ProcessAt = payd.UnixMilli(created), payd.UnixMilli(updated), fromNullMS(executed), payd.UnixMilli(process)
	return &r, nil
}

// CreateRefund applies the refund rules to one of the merchant's payments
// and stores the refund, reserving its amount. Refund creation is
// serialized per payment (row lock on PostgreSQL, the single writer on
// SQLite), and the reservation is also guarded in SQL, so concurrent
// refunds can never sum past the payment's amount.
func (s *Store) CreateRefund(ctx context.Context, merchantID, payID string, in payd.RefundInput, now time.Time, delay time.Duration) (*payd.Refund, error) {
	var rf *payd.Refund
	err := s.inTx(ctx, func(t *tx) error {
		p, err := scanPayment(t.queryRow(ctx, "SELECT "+paymentCols+paymentFrom+" WHERE p.id = ? AND p.merchant_id = ?"+
			s.d.forUpdateOf("p"), payID, merchantID))
		if err != nil {
			return err
		}
		if rf, err = payd.NewRefund(p, in, now, delay); err != nil {
			return err
		}
		res, err := t.exec(ctx, `UPDATE payments SET requested_refund = requested_refund + ?
			WHERE id = ? AND failed = 0 AND requested_refund + ? <= amount`, rf.Amount, p.ID, rf.Amount)
		if err != nil {
			return fmt.Errorf("reserve refund: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		full := 0
		if rf.Full {
			full = 1
		}
		_, err = t.exec(ctx, "INSERT INTO refunds ("+refundCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			rf.ID, rf.MerchantID, rf.PaymentID, rf.Amount, rf.Currency, rf.Reason, nullStr(rf.CallbackURL),
			string(rf.Status), full, ms(rf.CreatedAt), ms(rf.UpdatedAt), nil, ms(rf.ProcessAt))
		if err != nil {
			return fmt.Errorf("insert refund: %w", err)
		}
		if s.rails == "" {
			return nil
		}
		m, err := t.merchant(ctx, merchantID)
		if err != nil {
			return err
		}
		return t.insertOrder(ctx, payd.RefundOrder(m, rf, p, now))
	})
	if err != nil {
		return nil, err
	}
	s.queued()
	return rf, nil
}

// Refund reads one of the merchant's refunds.
func (s *Store) Refund(ctx context.Context, merchantID, id string) (*payd.Refund, error) {
	return scanRefund(s.queryRow(ctx, "SELECT "+refundCols+" FROM refunds WHERE id = ? AND merchant_id = ?", id, merchantID))
}

// PendingRefunds counts refunds the processor has not settled.
func (s *Store) PendingRefunds(ctx context.Context) (int, error) {
	return s.count(ctx, "SELECT COUNT(*) FROM refunds WHERE status IN ('Created','Requested')", nil)
}
