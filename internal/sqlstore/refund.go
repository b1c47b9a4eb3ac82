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
			s.forUpdateOf("p"), payID, merchantID))
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
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.queued()
	return rf, nil
}

func (s *Store) forUpdateOf(table string) string {
	if s.engine == Postgres {
		return " FOR UPDATE OF " + table
	}
	return ""
}

// Refund reads one of the merchant's refunds.
func (s *Store) Refund(ctx context.Context, merchantID, id string) (*payd.Refund, error) {
	return scanRefund(s.queryRow(ctx, "SELECT "+refundCols+" FROM refunds WHERE id = ? AND merchant_id = ?", id, merchantID))
}

// ProcessRefunds is the sandbox refund processor's step: it takes up every
// Created refund (→ Requested) and settles up to limit Requested refunds
// whose time has come, each in its own transaction. It returns how many it
// settled.
func (s *Store) ProcessRefunds(ctx context.Context, now time.Time, limit int) (int, error) {
	err := s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "UPDATE refunds SET status = 'Requested', updated_at = ? WHERE status = 'Created'", ms(now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("request refunds: %w", err)
	}
	rows, err := s.query(ctx, "SELECT id FROM refunds WHERE status = 'Requested' AND process_at <= ? ORDER BY process_at LIMIT ?", ms(now), limit)
	if err != nil {
		return 0, fmt.Errorf("due refunds: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	settled, queued := 0, false
	for _, id := range ids {
		q, err := s.settleRefund(ctx, id, now)
		if err == payd.ErrConflict {
			continue // another instance settled it
		}
		if err != nil {
			return settled, err
		}
		settled++
		queued = queued || q
	}
	if queued {
		s.queued()
	}
	return settled, nil
}

// settleRefund gives one Requested refund its outcome and applies it to the
// payment, the RTP and the outbox.
func (s *Store) settleRefund(ctx context.Context, id string, now time.Time) (queued bool, err error) {
	err = s.inTx(ctx, func(t *tx) error {
		rf, err := scanRefund(t.queryRow(ctx, "SELECT "+refundCols+" FROM refunds WHERE id = ?"+s.forUpdate(), id))
		if err != nil {
			return err
		}
		if rf.Status != payd.RefundRequested {
			return payd.ErrConflict
		}
		outcome := rf.Outcome()
		var executed any
		if outcome == payd.RefundAccepted {
			executed = ms(now)
			rf.ExecutedAt = now
		}
		res, err := t.exec(ctx, "UPDATE refunds SET status = ?, updated_at = ?, executed_at = ? WHERE id = ? AND status = 'Requested'",
			string(outcome), ms(now), executed, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		switch outcome {
		case payd.RefundRejected:
			_, err = t.exec(ctx, "UPDATE payments SET requested_refund = requested_refund - ? WHERE id = ?", rf.Amount, rf.PaymentID)
			return err
		case payd.RefundManual:
			return nil
		}
		_, err = t.exec(ctx, `UPDATE payments SET refunded = refunded + ?,
			first_refunded_at = COALESCE(first_refunded_at, ?), last_refunded_at = ? WHERE id = ?`,
			rf.Amount, ms(now), ms(now), rf.PaymentID)
		if err != nil {
			return fmt.Errorf("apply refund: %w", err)
		}
		var kind string
		var rtpID, paymentCallback sql.NullString
		if err := t.queryRow(ctx, "SELECT kind, rtp_id, callback_url FROM payments WHERE id = ?", rf.PaymentID).Scan(&kind, &rtpID, &paymentCallback); err != nil {
			return err
		}
		if rtpID.Valid {
			if _, err := t.exec(ctx, "UPDATE rtps SET status = 'Refunded', updated_at = ? WHERE id = ? AND status = 'Accepted'", ms(now), rtpID.String); err != nil {
				return err
			}
		}
		url := rf.CallbackURL
		if url == "" {
			url = paymentCallback.String
		}
		if url == "" {
			return nil
		}
		p, err := scanPayment(t.queryRow(ctx, "SELECT "+paymentCols+paymentFrom+" WHERE p.id = ?", rf.PaymentID))
		if err != nil {
			return err
		}
		m, err := scanMerchant(t.queryRow(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.id = ?", rf.MerchantID))
		if err != nil {
			return err
		}
		body := payd.RefundAcceptedFields(rf, p).Body(m.SignatureKey)
		queued = true
		return t.insertCallback(ctx, payd.NewCallback(payd.EventRefundAccepted, m, rf.ID, url, body, now))
	})
	return queued, err
}

// PendingRefunds counts refunds the processor has not settled.
func (s *Store) PendingRefunds(ctx context.Context) (int, error) {
	return s.count(ctx, "SELECT COUNT(*) FROM refunds WHERE status IN ('Created','Requested')", nil)
}
