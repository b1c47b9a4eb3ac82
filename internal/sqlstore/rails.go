package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"payd"
)

// The rails outbox (orders to the network) and inbox (messages from it).

// SetRails makes the store write outbound orders with the changes that
// cause them, for a deployment whose rails (the registered network named
// network) deliver RTPs and refunds: RTPs, their cancels and QR
// registrations go to that network, a refund to its payment's network. ""
// writes none (the sandbox's network settles in-process).
func (s *Store) SetRails(network string) { s.rails = network }

const orderCols = `id, kind, network, merchant_id, object_id, data, attempts, next_attempt_at, created_at, delivered_at, last_error`

func scanOrder(sc scanner) (*payd.RailsOrder, error) {
	var o payd.RailsOrder
	var kind, data string
	var next, created int64
	var delivered sql.NullInt64
	var lastErr sql.NullString
	if err := sc.Scan(&o.ID, &kind, &o.Network, &o.MerchantID, &o.ObjectID, &data, &o.Attempts, &next, &created, &delivered, &lastErr); err != nil {
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
	t.s.route(o)
	owner, until := leaseArgs(t.s.orderLease(o)) // NULL unless handed over (handover.go)
	_, err = t.exec(ctx, `INSERT INTO rails_orders (id, kind, network, merchant_id, object_id, data, state, attempts, next_attempt_at, created_at,
		lease_owner, lease_until) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)`, o.ID, string(o.Kind), o.Network, o.MerchantID, o.ObjectID, string(data),
		ms(o.NextAttemptAt), ms(o.CreatedAt), owner, until)
	if err != nil {
		return fmt.Errorf("queue rails order: %w", err)
	}
	return nil
}

// route gives an order that names no network the deployment's rails: the
// orders the rails carry (RTPs, QR registrations) and the refund of a
// payment recorded before payments named their network, which came in over
// the rails. A card order without one (a payment recorded before) is left
// to go by its kind to the card acquirer (worker.Orders).
func (s *Store) route(o *payd.RailsOrder) {
	if o.Network == "" && !o.Kind.CardKind() {
		o.Network = s.rails
	}
}

// ClaimOrders leases up to limit due rails orders to owner until
// now+lease, oldest first, as ClaimCallbacks does, and returns them in the
// order they were written. An order is claimed only when no earlier order
// of its object is pending (a cancel never overtakes its RTP, on any
// instance, whatever the clocks say).
func (s *Store) ClaimOrders(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*payd.RailsOrder, error) {
	type seqOrder struct {
		o   *payd.RailsOrder
		seq int64
	}
	var out []seqOrder
	seq := s.d.orderSeq()
	err := s.inTx(ctx, func(t *tx) error {
		out = out[:0]
		if err := t.walkInOrder(ctx); err != nil {
			return fmt.Errorf("claim rails orders: %w", err)
		}
		rows, err := t.query(ctx, `UPDATE rails_orders SET lease_owner = ?, lease_until = ?
			WHERE id IN (`+s.dueOrdersQ(limit)+`)
			RETURNING `+orderCols+`, `+seq, owner, ms(now.Add(lease)), ms(now), ms(now))
		if err != nil {
			return fmt.Errorf("claim rails orders: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var n int64
			o, err := scanOrder(scanFunc(func(dest ...any) error { return rows.Scan(append(dest, &n)...) }))
			if err != nil {
				return err
			}
			out = append(out, seqOrder{o, n})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err // a claim that did not commit leased nothing
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	orders := make([]*payd.RailsOrder, len(out))
	for i, x := range out {
		orders[i] = x.o
	}
	return orders, nil
}

// dueOrdersQ selects the ids of up to limit due orders (arguments: now,
// now) whose object has no earlier order pending, in the order of their due
// time and then writing. The index rails_orders_due holds the pending
// orders in that same order, so the claim reads from its start and stops
// after limit rows.
//
// PostgreSQL's planner picks that plan only while it knows how many
// orders there are, and a claim may run on a plan made when it did not:
// statistics older than a backlog that built up within autovacuum's minute
// make the table look small, and small tables are cheaper to sort than to
// walk in order; and a claim is a prepared statement, whose generic plan,
// once chosen, is kept. A generic plan made while the table was empty (a
// fresh database's first claims) looked for an earlier order of the same
// object by reading the whole object index for every candidate: 1,600
// buffers a candidate, 0.4 s a claim on an idle machine at 20,000 pending
// orders, up to 17 s under load, while the pain.013s fell tens of seconds
// behind their RTPs (BENCHMARKS.md). Each claim therefore plans itself
// afresh, with sorting off (walkInOrder), which leaves the walk the only
// plan.
func (s *Store) dueOrdersQ(limit int) string {
	seq := s.d.orderSeq()
	return `SELECT o.id FROM rails_orders o WHERE o.state = 'pending' AND o.next_attempt_at <= ?
				AND (o.lease_until IS NULL OR o.lease_until <= ?)
				AND NOT EXISTS (SELECT 1 FROM rails_orders e WHERE e.object_id = o.object_id AND e.state = 'pending' AND e.` + seq + ` < o.` + seq + `)
				ORDER BY o.next_attempt_at, o.` + seq + rowLimit(limit) + s.d.skipLocked()
}

// claimPlanPG: this transaction's claims are planned at each execution, for
// the table as it is now, and never sort (dueOrdersQ).
const claimPlanPG = "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_sort', 'off', true)"

// walkInOrder makes the claims of this transaction walk their due index
// in order on PostgreSQL, whatever its statistics and cached plans say
// (dueOrdersQ).
func (t *tx) walkInOrder(ctx context.Context) error {
	q := t.s.d.claimPlan()
	if q == "" {
		return nil
	}
	_, err := t.exec(ctx, q)
	return err
}

// OrderDelivered records that the network took an order sent under owner's
// lease, and applies what that means: a refund's return taken makes the
// refund Requested. It returns payd.ErrConflict when the lease was lost.
func (s *Store) OrderDelivered(ctx context.Context, o *payd.RailsOrder, taken payd.Taken, owner string, now time.Time) error {
	var cb *payd.Callback // a refund's, settled at once
	err := s.inTx(ctx, func(t *tx) error {
		cb = nil
		res, err := t.exec(ctx, `UPDATE rails_orders SET state = 'delivered', attempts = attempts + 1, delivered_at = ?,
			last_error = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
			ms(now), o.ID, owner)
		if err != nil {
			return fmt.Errorf("order delivered: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		if !o.Kind.RefundKind() {
			return nil
		}
		if err := t.refundTaken(ctx, o.ObjectID, now); err != nil {
			return err
		}
		if taken.Refund == "" {
			return nil
		}
		// The network answered the refund at once (a card acquirer).
		_, cb, err = t.settleRefund(ctx, o.ObjectID, taken.Refund, now, payd.ApplyReturnOutcome)
		return err
	})
	if err == nil {
		s.handCallbacksOf(ctx, cb) // to this instance's delivery, or to the claims (handover.go)
	}
	return err
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

// OrderRefused keeps an order the network refused for good as failed,
// with its answer, never to be sent again (payd.ErrOrderRefused).
func (s *Store) OrderRefused(ctx context.Context, o *payd.RailsOrder, owner, reason string, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, `UPDATE rails_orders SET state = 'failed', attempts = attempts + 1, last_error = ?, delivered_at = ?,
			lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
			reason, ms(now), o.ID, owner)
		if err != nil {
			return fmt.Errorf("order refused: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		return nil
	})
}

// FailedOrders counts the rails orders the network refused for good.
func (s *Store) FailedOrders(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM rails_orders WHERE state = 'failed'").Scan(&n)
	return n, err
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

// The inbox (payd.Inbox): every inbound message is recorded by its message
// id in the transaction of the use case it causes (once), or on its own
// when it applies nothing (Record).

var _ payd.Inbox = (*Store)(nil)

// Once is the Ledger whose use cases record msg, each in its own
// transaction (payd.Inbox): the message is the transaction's argument.
func (s *Store) Once(msg payd.Message) payd.Ledger { return ledger{s: s, msg: &msg} }

// recordInbound records an inbound message in the transaction that applies
// it; one already recorded ends the transaction with payd.ErrDuplicate. On
// PostgreSQL the record is a queued write (postgres/writes.go), sent with the
// transaction's first statement instead of in a round trip of its own.
func (t *tx) recordInbound(ctx context.Context, m payd.Message) error {
	err := t.write(ctx, 1, payd.ErrDuplicate, "INSERT INTO rails_inbox (msg_id, kind, outcome, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (msg_id) DO NOTHING",
		m.ID, m.Kind, m.Outcome, ms(m.At))
	if err != nil && !errors.Is(err, payd.ErrDuplicate) {
		return fmt.Errorf("record inbound: %w", err)
	}
	return err
}

// Record records an inbound message that applied nothing (a refusal, a
// status without effect), so that a repeat gets the same answer. It
// reports false when the message was already recorded.
func (s *Store) Record(ctx context.Context, m payd.Message) (bool, error) {
	err := s.inTx(ctx, func(t *tx) error { return t.recordInbound(ctx, m) })
	if errors.Is(err, payd.ErrDuplicate) {
		return false, nil
	}
	return err == nil, err
}

// Recorded is an inbound message as recorded, if it was.
func (s *Store) Recorded(ctx context.Context, msgID string) (payd.Message, bool, error) {
	m := payd.Message{ID: msgID}
	var at int64
	err := s.w.QueryRowContext(ctx, s.d.rebind("SELECT kind, outcome, received_at FROM rails_inbox WHERE msg_id = ?"), msgID).Scan(&m.Kind, &m.Outcome, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	m.At = payd.UnixMilli(at)
	return m, err == nil, err
}

// OrdersDelivered marks orders that need nothing more than their delivery
// (an RTP's pain.013, its camt.055) delivered, in one statement whatever
// their number (idsIn) run as a use case of its own (exec1: on PostgreSQL
// one round trip in autocommit), and returns how many were still leased to
// owner.
func (s *Store) OrdersDelivered(ctx context.Context, orders []*payd.RailsOrder, owner string, now time.Time) (int, error) {
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	in, list, err := s.d.idsIn(ids)
	if err != nil {
		return 0, err
	}
	res, err := s.exec1(ctx, markDelivered+in, ms(now), owner, list)
	if err != nil {
		return 0, fmt.Errorf("orders delivered: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// markDelivered marks owner's pending orders delivered at a time
// (arguments: now, owner), those whose id the caller's condition names.
// "state <> 'delivered'" is "state = 'pending'" (the table's CHECK allows
// no other) in a form that no partial index of pending orders matches:
// written as "= 'pending'", PostgreSQL's generic plan ANDed the id lookups
// with a read of rails_orders_due whole, every pending order, and a
// backlog makes those many (the connector away: 20,344 after 5 s, each
// mark and release reading them all). TestOrderUpdatesReadTheirRows.
const markDelivered = `UPDATE rails_orders SET state = 'delivered', attempts = attempts + 1, delivered_at = ?,
	last_error = NULL, lease_owner = NULL, lease_until = NULL WHERE lease_owner = ? AND state <> 'delivered' AND id`

// releaseOrders gives up owner's lease of pending orders, due again at a
// time unless they were due later (arguments: next, next, owner), those
// whose id the caller's condition names (see markDelivered).
const releaseOrders = `UPDATE rails_orders SET lease_owner = NULL, lease_until = NULL,
	next_attempt_at = CASE WHEN next_attempt_at < ? THEN ? ELSE next_attempt_at END
	WHERE lease_owner = ? AND state <> 'delivered' AND id`

// ReleaseOrders gives up owner's lease of orders it did not attempt (an
// earlier order of their object failed, or their network is unavailable),
// in one statement: they are due again at next (or later, if they were
// already), so that none overtakes an earlier order of its object (the
// claim takes the earliest written first among orders due together).
func (s *Store) ReleaseOrders(ctx context.Context, orders []*payd.RailsOrder, owner string, next time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	in, list, err := s.d.idsIn(ids)
	if err != nil {
		return err
	}
	if _, err := s.exec1(ctx, releaseOrders+in, ms(next), ms(next), owner, list); err != nil {
		return fmt.Errorf("release orders: %w", err)
	}
	return nil
}
