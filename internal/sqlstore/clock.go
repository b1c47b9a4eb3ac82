package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"payd"
)

// The sandbox's test clock. A merchant's time is real time plus its
// offset (never less than its floor). Everything the merchant's requests
// write is dated in its time, and the background loops give each clocked
// merchant a pass of its own as of its time, so that its due work (callback
// retries, sandbox refund settlements, the test aliases' decisions,
// expiries) is done when its time says so. Its time is never behind real
// time, so the ordinary passes never do anything early.

// AdvanceClock moves merchantID's clock forward by d.
func (s *Store) AdvanceClock(ctx context.Context, merchantID string, d time.Duration) (*payd.Merchant, error) {
	var m *payd.Merchant
	err := s.inTx(ctx, func(t *tx) error {
		if _, err := t.exec(ctx, "UPDATE merchants SET clock_offset_ms = clock_offset_ms + ? WHERE id = ?", d.Milliseconds(), merchantID); err != nil {
			return fmt.Errorf("advance clock: %w", err)
		}
		var err error
		m, err = t.merchant(ctx, merchantID)
		return err
	})
	if err == nil {
		s.forgetMerchant(merchantID)
		s.queued() // retries and settlements may be due now
	}
	return m, err
}

// ResetClock puts merchantID's clock back on real time. Time does not go
// backwards for what was written: until real time catches up, the
// merchant's time stays at the moment of the reset.
func (s *Store) ResetClock(ctx context.Context, merchantID string, real time.Time) (*payd.Merchant, error) {
	var m *payd.Merchant
	err := s.inTx(ctx, func(t *tx) error {
		cur, err := t.merchant(ctx, merchantID)
		if err != nil {
			return err
		}
		floor := cur.Now(real)
		if !floor.After(real) {
			floor = cur.ClockFloor // nothing ahead of real time to protect
		}
		if _, err := t.exec(ctx, "UPDATE merchants SET clock_offset_ms = 0, clock_floor_ms = ? WHERE id = ?", nullMSZero(floor), merchantID); err != nil {
			return fmt.Errorf("reset clock: %w", err)
		}
		m, err = t.merchant(ctx, merchantID)
		return err
	})
	if err == nil {
		s.forgetMerchant(merchantID)
	}
	return m, err
}

func nullMSZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// ClockedMerchants lists the merchants whose time is not real time (the
// background loops give them passes of their own).
func (s *Store) ClockedMerchants(ctx context.Context) ([]*payd.Merchant, error) {
	rows, err := s.query(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.clock_offset_ms <> 0 OR m.clock_floor_ms <> 0")
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
		for _, from := range []string{"Created", "Active"} {
			k, err := t.transitions(ctx, payd.ObjectRTP, from, "Expired", `UPDATE rtps SET status = 'Expired', updated_at = expires_at, auto_action = NULL
				WHERE merchant_id = ? AND status = ? AND expires_at <= ? RETURNING id, merchant_id, updated_at`, merchantID, from, ms(now))
			if err != nil {
				return fmt.Errorf("expire for merchant: %w", err)
			}
			n += k
		}
		for _, st := range checkoutDeadlines {
			k, err := t.transitions(ctx, payd.ObjectCheckout, st[0], st[1], `UPDATE checkouts SET status = ?, updated_at = expires_at
				WHERE merchant_id = ? AND status = ? AND expires_at <= ? RETURNING id, merchant_id, updated_at`, st[1], merchantID, st[0], ms(now))
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
