package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"payd"
)

// The rails outbox (orders to the network) and inbox (messages from it).

// SetRailsOrders makes the store write rails orders with the changes that
// cause them (for rails that deliver RTPs and refunds over a network).
func (s *Store) SetRailsOrders(on bool) { s.orders = on }

const orderCols = `id, kind, merchant_id, object_id, data, attempts, next_attempt_at, created_at, delivered_at, last_error`

func scanOrder(sc scanner) (*payd.RailsOrder, error) {
	var o payd.RailsOrder
	var kind, data string
	var next, created int64
	var delivered sql.NullInt64
	var lastErr sql.NullString
	if err := sc.Scan(&o.ID, &kind, &o.MerchantID, &o.ObjectID, &data, &o.Attempts, &next, &created, &delivered, &lastErr); err != nil {
		return nil, notFound(err)
	}
	o.Kind = payd.OrderKind(kind)
	if err := json.Unmarshal([]byte(data), &o.Data); err != nil {
		return nil, fmt.Errorf("rails order %s: %w", o.ID, err)
	}
	o.NextAttemptAt, o.CreatedAt, o.DeliveredAt, o.LastError = payd.UnixMilli(next), payd.UnixMilli(created), fromNullMS(delivered), lastErr.String
	return &o, nil
}

// insertOrder writes an order to the rails outbox, inside the transaction
// of the change that causes it.
func (t *tx) insertOrder(ctx context.Context, o *payd.RailsOrder) error {
	data, err := json.Marshal(o.Data)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO rails_orders (id, kind, merchant_id, object_id, data, state, attempts, next_attempt_at, created_at)
		VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)`, o.ID, string(o.Kind), o.MerchantID, o.ObjectID, string(data),
		ms(o.NextAttemptAt), ms(o.CreatedAt))
	if err != nil {
		return fmt.Errorf("queue rails order: %w", err)
	}
	return nil
}

// ClaimOrders leases up to limit due rails orders to owner until
// now+lease, oldest first, as ClaimCallbacks does.
func (s *Store) ClaimOrders(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*payd.RailsOrder, error) {
	var out []*payd.RailsOrder
	err := s.inTx(ctx, func(t *tx) error {
		rows, err := t.query(ctx, `UPDATE rails_orders SET lease_owner = ?, lease_until = ?
			WHERE id IN (SELECT id FROM rails_orders WHERE state = 'pending' AND next_attempt_at <= ?
				AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at, created_at`+rowLimit(limit)+s.skipLocked()+`)
			RETURNING `+orderCols, owner, ms(now.Add(lease)), ms(now), ms(now))
		if err != nil {
			return fmt.Errorf("claim rails orders: %w", err)
		}
		out, err = scanAll(rows, scanOrder)
		return err
	})
	if err != nil {
		return nil, err // a claim that did not commit leased nothing
	}
	return out, nil
}

// OrderDelivered records that the network took an order sent under owner's
// lease, and applies what that means: a refund's return taken makes the
// refund Requested. It returns payd.ErrConflict when the lease was lost.
func (s *Store) OrderDelivered(ctx context.Context, o *payd.RailsOrder, owner string, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, `UPDATE rails_orders SET state = 'delivered', attempts = attempts + 1, delivered_at = ?,
			last_error = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
			ms(now), o.ID, owner)
		if err != nil {
			return fmt.Errorf("order delivered: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		if o.Kind == payd.OrderRefund {
			return t.refundTaken(ctx, o.ObjectID, now)
		}
		return nil
	})
}

// OrderFailed records a failed attempt and when to try again.
func (s *Store) OrderFailed(ctx context.Context, o *payd.RailsOrder, owner, reason string, next time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, `UPDATE rails_orders SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?,
			lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
			ms(next), reason, o.ID, owner)
		if err != nil {
			return fmt.Errorf("order failed: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		return nil
	})
}

// PendingOrders counts rails orders not yet taken by the network, and the
// age of the oldest at now.
func (s *Store) PendingOrders(ctx context.Context, now time.Time) (n int, oldest time.Duration, err error) {
	var first sql.NullInt64
	err = s.queryRow(ctx, "SELECT COUNT(*), MIN(created_at) FROM rails_orders WHERE state = 'pending'").Scan(&n, &first)
	if first.Valid {
		oldest = now.Sub(payd.UnixMilli(first.Int64))
	}
	return n, oldest, err
}

// ErrDuplicate is returned by a use case run under WithInbound when its
// message was already recorded: it was applied (or refused) before.
var ErrDuplicate = errors.New("inbound message already recorded")

type inboundKey struct{}

type inbound struct {
	msgID, kind, outcome string
	now                  time.Time
	used                 bool
}

// WithInbound marks ctx so that the next use case run with it first
// records the inbound message msgID in its own transaction, with the
// outcome the use case's success means. The message and its effect then
// commit together, and a repeat of the message fails with ErrDuplicate
// without applying anything: exactly once, across instances and restarts.
func WithInbound(ctx context.Context, msgID, kind, outcome string, now time.Time) context.Context {
	return context.WithValue(ctx, inboundKey{}, &inbound{msgID: msgID, kind: kind, outcome: outcome, now: now})
}

func (t *tx) recordInbound(ctx context.Context, in *inbound) error {
	res, err := t.exec(ctx, "INSERT INTO rails_inbox (msg_id, kind, outcome, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (msg_id) DO NOTHING",
		in.msgID, in.kind, in.outcome, ms(in.now))
	if err != nil {
		return fmt.Errorf("record inbound: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrDuplicate
	}
	return nil
}

// RecordInbound records an inbound message that applied nothing (a
// refusal, a status without effect), so that a repeat gets the same
// answer. It reports false when the message was already recorded.
func (s *Store) RecordInbound(ctx context.Context, msgID, kind, outcome string, now time.Time) (bool, error) {
	err := s.inTx(ctx, func(t *tx) error {
		return t.recordInbound(ctx, &inbound{msgID: msgID, kind: kind, outcome: outcome, now: now})
	})
	if errors.Is(err, ErrDuplicate) {
		return false, nil
	}
	return err == nil, err
}

// InboundOutcome is the recorded answer to an inbound message, if any.
func (s *Store) InboundOutcome(ctx context.Context, msgID string) (string, bool, error) {
	var out string
	err := s.w.QueryRowContext(ctx, s.rebind("SELECT outcome FROM rails_inbox WHERE msg_id = ?"), msgID).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return out, err == nil, err
}
