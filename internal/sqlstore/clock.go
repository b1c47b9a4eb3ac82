package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"payd"
)

// The sandbox's test clock. A merchant's time is real time plus its
// offset. Everything the merchant's requests
// write is dated in its time, and the background loops give each clocked
// merchant a pass of its own as of its time, so that its due work (callback
// retries, sandbox refund settlements, the test aliases' decisions,
// expiries) is done when its time says so. Its time is never behind real
// time, so the ordinary passes never do anything early.

// AdvanceClock moves merchantID's clock forward by d, refusing to take it
// more than payd.MaxClockOffset ahead of real time in all (ErrConflict).
func (s *Store) AdvanceClock(ctx context.Context, merchantID string, d time.Duration) (*payd.Merchant, error) {
	var m *payd.Merchant
	err := s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, "UPDATE merchants SET clock_offset_ms = clock_offset_ms + ? WHERE id = ? AND clock_offset_ms <= ?",
			d.Milliseconds(), merchantID, (payd.MaxClockOffset - d).Milliseconds())
		if err != nil {
			return fmt.Errorf("advance clock: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return payd.ErrConflict
		}
		if err := t.forgetSettlement(ctx, merchantID); err != nil {
			return err
		}
		m, err = t.merchant(ctx, merchantID)
		return err
	})
	if err == nil {
		s.forgetMerchant(merchantID)
		s.queued() // retries and settlements may be due now
	}
	return m, err
}

// ResetClock puts merchantID's clock back on real time. What was written
// keeps its dates (an RTP created a day ahead still expires a day ahead),
// but the work payd had scheduled in the merchant's time (callback
// retries, refund settlements, the test aliases' decisions) moves back by
// the offset, to when it would have been due on real time: a refund taken
// up a day ahead settles now, not in a day.
func (s *Store) ResetClock(ctx context.Context, merchantID string, real time.Time) (*payd.Merchant, error) {
	var m *payd.Merchant
	err := s.inTx(ctx, func(t *tx) error {
		cur, err := t.merchant(ctx, merchantID)
		if err != nil {
			return err
		}
		if err := t.forgetSettlement(ctx, merchantID); err != nil {
			return err
		}
		if off := cur.ClockOffset.Milliseconds(); off != 0 {
			for _, q := range []string{
				"UPDATE refunds SET process_at = process_at - ? WHERE merchant_id = ? AND status IN ('Created','Requested') AND process_at > ?",
				"UPDATE callbacks SET next_attempt_at = next_attempt_at - ? WHERE merchant_id = ? AND state = 'pending' AND next_attempt_at > ?",
				"UPDATE rtps SET auto_at = auto_at - ? WHERE merchant_id = ? AND auto_action IS NOT NULL AND auto_at > ?",
			} {
				if _, err := t.exec(ctx, q, off, merchantID, ms(real)); err != nil {
					return fmt.Errorf("reset clock: %w", err)
				}
			}
		}
		if _, err := t.exec(ctx, "UPDATE merchants SET clock_offset_ms = 0 WHERE id = ?", merchantID); err != nil {
			return fmt.Errorf("reset clock: %w", err)
		}
		m, err = t.merchant(ctx, merchantID)
		return err
	})
	if err == nil {
		s.forgetMerchant(merchantID)
		s.queued()
	}
	return m, err
}

// ClockedMerchants lists the merchants whose time is not real time (the
// background loops give them passes of their own).
func (s *Store) ClockedMerchants(ctx context.Context) ([]*payd.Merchant, error) {
	rows, err := s.query(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.clock_offset_ms <> 0")
	if err != nil {
		return nil, err
	}
	return scanAll(rows, s.scanMerchant)
}

// ExpireForMerchant writes the due expiries of one merchant as of its own
// time (the test clock): open RTPs past their deadline, checkouts
// abandoned or expired, and QRs (and extensions) whose status as of now
// differs from the stored one. It returns how many objects it moved.
func (s *Store) ExpireForMerchant(ctx context.Context, merchantID string, now time.Time, limit int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		for _, from := range rtpExpiring {
			k, err := t.transitions(ctx, payd.ObjectRTP, from, "Expired", `UPDATE rtps SET status = 'Expired', updated_at = expires_at, auto_action = NULL
				WHERE merchant_id = ? AND `+expiryDue+` RETURNING id, merchant_id, updated_at`, merchantID, from, ms(now))
			if err != nil {
				return fmt.Errorf("expire for merchant: %w", err)
			}
			n += k
		}
		for _, st := range checkoutDeadlines {
			k, err := t.transitions(ctx, payd.ObjectCheckout, st[0], st[1], `UPDATE checkouts SET status = ?, updated_at = expires_at
				WHERE merchant_id = ? AND `+expiryDue+` RETURNING id, merchant_id, updated_at`, st[1], merchantID, st[0], ms(now))
			if err != nil {
				return fmt.Errorf("expire for merchant: %w", err)
			}
			n += k
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	inact := s.qrInactivity().Milliseconds()
	rows, err := s.query(ctx, "SELECT q.id"+qrFrom+" WHERE q.merchant_id = ? AND ("+qrStatusExpr+") <> q.status LIMIT ?",
		merchantID, inact, ms(now), ms(now), limit)
	if err != nil {
		return n, fmt.Errorf("due qrs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return n, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		// Observing under the row lock and saving writes the transition.
		_, err := s.updateQR(ctx, merchantID, id, now, func(*tx, *payd.QR) error { return nil })
		if errors.Is(err, payd.ErrConflict) {
			continue // changed meanwhile; the next pass looks again
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// merchantScope is an optional "AND merchant_id = ?" with its argument
// after args.
func merchantScope(merchantID []string, args ...any) (string, []any) {
	if len(merchantID) == 0 || merchantID[0] == "" {
		return "", args
	}
	return " AND merchant_id = ?", append(args, merchantID[0])
}
