package sqlstore

import (
	"context"
	"sync/atomic"
	"time"

	"payd"
)

// Handing new work to this instance's own loops in memory.
//
// A callback or rails order that is due at once is written leased to this
// instance, as a claim would lease it, and after its commit it is handed
// straight to the instance's delivery loop instead of being found there by
// a claim: the claim's UPDATE of every row (and, for orders, the decoding
// of each one's JSON) is skipped, and so is the wait for the loop to wake
// and claim. The database keeps the lease, so other instances leave the
// row alone exactly as they leave a claimed one, and nothing is lost when
// the instance dies before delivering: the lease runs out and any instance
// claims the row (RELIABILITY.md, the outbox).
//
// The hand is never blocking: when the loop's queue is full, the row's
// lease is given up at once so that a claim takes it. A row whose commit
// failed, or whose outcome is unknown, is never handed; if it did commit,
// its lease runs out and a claim takes it.

// HandedCap is how many handed rows wait for their loop at most.
const HandedCap = 4096

// Handed is work written leased to this instance and handed to its loop.
type Handed[T any] struct {
	Item       T
	LeaseUntil time.Time // the lease written with it
}

// hand is one kind of handed work: the lease it is written with and the
// queue its loop reads.
type hand[T any] struct {
	owner string
	lease time.Duration
	clock payd.Clock
	ch    chan Handed[T]
	// handed and full count what give queued and what it could not (the
	// queue full: the lease given up, left to the claims).
	handed, full atomic.Int64
}

func newHand[T any](owner string, lease time.Duration, clock payd.Clock, capacity int) *hand[T] {
	return &hand[T]{owner: owner, lease: lease, clock: clock, ch: make(chan Handed[T], capacity)}
}

// until is the lease of work created at created: from then, or from now
// if created is later (a merchant on the sandbox's test clock dates its
// work ahead of real time, and a lease is real time). Work is written
// after it is created, so for all other work the lease written and the
// one handed are the same.
func (h *hand[T]) until(created time.Time) time.Time {
	if now := h.clock.Now(); now.Before(created) {
		created = now
	}
	return created.Add(h.lease)
}

// give queues v, leased until until; false when the queue is full.
func (h *hand[T]) give(v T, until time.Time) bool {
	select {
	case h.ch <- Handed[T]{v, until}:
		h.handed.Add(1)
		return true
	default:
		h.full.Add(1)
		return false
	}
}

// HandStats is what one kind of handed work did since the start: how much
// waits in its queue now, how much was handed, and how much found the
// queue full and was left to the claims.
type HandStats struct {
	Queued, Handed, Full int64
}

func (h *hand[T]) stats() HandStats {
	if h == nil {
		return HandStats{}
	}
	return HandStats{Queued: int64(len(h.ch)), Handed: h.handed.Load(), Full: h.full.Load()}
}

// HandedOrderStats is HandStats of the orders handed (zero when they are
// not).
func (s *Store) HandedOrderStats() HandStats { return s.handOrders.stats() }

// HandedCallbackStats is HandStats of the callbacks handed.
func (s *Store) HandedCallbackStats() HandStats { return s.handCallbacks.stats() }

// take waits for handed work and returns it with whatever else is queued,
// up to max; nil when ctx ends.
func (h *hand[T]) take(ctx context.Context, max int) []Handed[T] {
	if ctx.Err() != nil {
		return nil // stopping: what is queued stays for release, not a last attempt
	}
	var out []Handed[T]
	select {
	case v := <-h.ch:
		out = append(out, v)
	case <-ctx.Done():
		return nil
	}
	for len(out) < max {
		select {
		case v := <-h.ch:
			out = append(out, v)
		default:
			return out
		}
	}
	return out
}

// left is what is still queued, taken without waiting (at shutdown).
func (h *hand[T]) left() []Handed[T] {
	var out []Handed[T]
	for {
		select {
		case v := <-h.ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// HandOrders makes the store write each new RTP's pain.013 leased to owner
// for lease and hand it, once committed, to HandedOrders. Orders of any
// other kind, and an RTP's later orders, are claimed as before: an RTP's
// first order has no earlier one of its object to wait for.
func (s *Store) HandOrders(owner string, lease time.Duration, clock payd.Clock) {
	s.handOrders = newHand[*payd.RailsOrder](owner, lease, clock, HandedCap)
}

// HoldOrders makes the store ask hold, as it writes an RTP's pain.013,
// whether the order's network is away (worker.Orders.Holding): if so the
// order is written due when hold says and without a lease, so it is not
// handed, and a claim takes it once the network is back or due a probe.
// While the connector is away a new RTP then costs no more than its
// insert.
func (s *Store) HoldOrders(hold func(*payd.RailsOrder) (until time.Time, away bool)) {
	s.holdOrders = hold
}

// held applies HoldOrders to a new order (it is due later, so not leased:
// orderLease).
func (s *Store) held(o *payd.RailsOrder) {
	if s.holdOrders == nil {
		return
	}
	if until, away := s.holdOrders(o); away {
		o.NextAttemptAt = later(until, o.CreatedAt.Add(time.Millisecond))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// HandOrdersUpTo is HandOrders with a queue of capacity orders.
func (s *Store) HandOrdersUpTo(owner string, lease time.Duration, clock payd.Clock, capacity int) {
	s.handOrders = newHand[*payd.RailsOrder](owner, lease, clock, capacity)
}

// HandedOrders waits for orders handed by this store's writes (HandOrders)
// and returns up to max of them; nil when ctx ends.
func (s *Store) HandedOrders(ctx context.Context, max int) []Handed[*payd.RailsOrder] {
	return s.handOrders.take(ctx, max)
}

// HandCallbacks makes the store write each callback due at once leased to
// owner for lease and hand it, once committed, to HandedCallbacks.
func (s *Store) HandCallbacks(owner string, lease time.Duration, clock payd.Clock) {
	s.handCallbacks = newHand[*payd.Callback](owner, lease, clock, HandedCap)
}

// HandedCallbacks waits for callbacks handed by this store's writes
// (HandCallbacks) and returns up to max of them; nil when ctx ends.
func (s *Store) HandedCallbacks(ctx context.Context, max int) []Handed[*payd.Callback] {
	return s.handCallbacks.take(ctx, max)
}

// ReleaseHandedOrders gives up the leases of the orders still queued for
// this instance's loop, so that claims take them at once (a server
// stopping).
func (s *Store) ReleaseHandedOrders(ctx context.Context) error {
	return releaseLeft(ctx, s.handOrders, func(o *payd.RailsOrder) string { return o.ID }, s.releaseOrderLeases)
}

// ReleaseHandedCallbacks is ReleaseHandedOrders for callbacks.
func (s *Store) ReleaseHandedCallbacks(ctx context.Context) error {
	return releaseLeft(ctx, s.handCallbacks, func(c *payd.Callback) string { return c.ID }, s.ReleaseCallbacks)
}

// releaseLeft releases what is still queued in h, in one statement.
func releaseLeft[T any](ctx context.Context, h *hand[T], id func(T) string, release func(ctx context.Context, owner string, ids ...string) error) error {
	if h == nil {
		return nil
	}
	left := h.left()
	ids := make([]string, len(left))
	for i, v := range left {
		ids[i] = id(v.Item)
	}
	return release(ctx, h.owner, ids...)
}

// leaseOf is the lease written with work created at created that h hands:
// this instance's; none (ok false) when h is nil (nothing of its kind is
// handed).
func (h *hand[T]) leaseOf(created time.Time) (owner string, until int64, ok bool) {
	if h == nil {
		return "", 0, false
	}
	return h.owner, ms(h.until(created)), true
}

// leaseArgs is a lease as an INSERT's lease_owner and lease_until: NULL
// when there is none.
func leaseArgs(owner string, until int64, ok bool) (any, any) {
	if !ok {
		return nil, nil
	}
	return owner, until
}

// orderLease is the lease an order is written with: this instance's, for
// an RTP's pain.013 when orders are handed; none (ok false) otherwise.
func (s *Store) orderLease(o *payd.RailsOrder) (owner string, until int64, ok bool) {
	if o.Kind != payd.OrderSendRTP || o.NextAttemptAt.After(o.CreatedAt) {
		return "", 0, false
	}
	return s.handOrders.leaseOf(o.CreatedAt)
}

// handOrder hands a committed order written with orderLease's lease to
// this instance's loop; when the queue is full it gives the lease up.
func (s *Store) handOrder(ctx context.Context, o *payd.RailsOrder) {
	if _, _, ok := s.orderLease(o); !ok {
		s.queuedOrders()
		return
	}
	h := s.handOrders
	if h.give(o, h.until(o.CreatedAt)) {
		return
	}
	if s.releaseOrderLeases(context.WithoutCancel(ctx), h.owner, o.ID) == nil {
		s.queuedOrders()
	}
}

// releaseOrderLeases gives up owner's lease of the pending orders ids, in
// one statement, so that claims take them at once.
func (s *Store) releaseOrderLeases(ctx context.Context, owner string, ids ...string) error {
	return s.releaseLeases(ctx, releaseOrderLeases, owner, ids)
}

// callbackLease is the lease a callback is written with: this instance's,
// for one due at once when callbacks are handed; none (ok false) otherwise.
func (s *Store) callbackLease(c *payd.Callback) (owner string, until int64, ok bool) {
	if c.NextAttemptAt.After(c.CreatedAt) {
		return "", 0, false
	}
	return s.handCallbacks.leaseOf(c.CreatedAt)
}

// handCallbacksOf hands committed callbacks written with callbackLease's
// lease to this instance's loop (those without one wake the claims);
// when the queue is full it gives the leases up, together.
func (s *Store) handCallbacksOf(ctx context.Context, cbs ...*payd.Callback) {
	wake := false
	var full []string // leased, but the queue had no room
	for _, c := range cbs {
		if c == nil {
			continue
		}
		if _, _, leased := s.callbackLease(c); !leased {
			wake = true
		} else if h := s.handCallbacks; !h.give(c, h.until(c.CreatedAt)) {
			full = append(full, c.ID)
		}
	}
	if len(full) > 0 && s.ReleaseCallbacks(context.WithoutCancel(ctx), s.handCallbacks.owner, full...) == nil {
		wake = true // else their leases run out instead
	}
	if wake {
		s.queuedCallbacks()
	}
}

// ReleaseCallbacks gives up owner's lease of the pending callbacks ids, in
// one statement, so that claims take them at once (an instance stopping
// with callbacks it had not attempted). A lease another instance holds is
// left as it is.
func (s *Store) ReleaseCallbacks(ctx context.Context, owner string, ids ...string) error {
	return s.releaseLeases(ctx, releaseCallbackLeases, owner, ids)
}

// The lease releases of ReleaseCallbacks and releaseOrderLeases (arguments:
// owner, then the ids as idsIn takes them). They find their rows by id and
// name no state: a row still leased is pending (what marks an order
// delivered, or records a callback's final attempt, clears its lease), and
// a condition on state would let PostgreSQL read every pending row through
// its partial indexes too (TestOrderUpdatesReadTheirRows).
const (
	releaseCallbackLeases = `UPDATE callbacks SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ? AND id`
	releaseOrderLeases    = `UPDATE rails_orders SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ? AND id`
)

func (s *Store) releaseLeases(ctx context.Context, release, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in, list, err := s.d.idsIn(ids)
	if err != nil {
		return err
	}
	return s.write1(ctx, release+in, owner, list)
}
