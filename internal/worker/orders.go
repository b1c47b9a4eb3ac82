package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/panjf2000/ants/v2"

	"payd"
	"payd/internal/sqlstore"
)

// OrderSchedule is the redelivery schedule of rails orders: after failed
// attempt n the next waits the n-th delay, then the last one for ever. An
// order is never given up: money must reach the network.
var OrderSchedule = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second}

// OrderLoops is how many orders passes of one instance run at once, each
// claiming its own orders: a pass waits for its slowest delivery, and
// while it does the other claims what was written since.
const OrderLoops = 2

// OrderParallel is how many deliveries one orders pass runs at once.
const OrderParallel = 32

// Orders hands the rails outbox to the rails adapter: it claims due orders
// with a lease (as Delivery claims callbacks), delivers them, and records
// the outcomes. An order the network took is applied (a refund's return
// taken makes it Requested) in the transaction that marks it delivered.
//
// The orders of one object (an RTP and its cancel, a refund) go one after
// another in the order they were written, a cancel never overtaking its
// RTP; the orders of different objects go in parallel, Parallel at a
// time. The plain ones the network took are marked delivered in one
// statement: a claimed pass's at its end, a handed loop's gathered over
// its passes (MarkBatch, MarkWait).
type Orders struct {
	Store    *sqlstore.Store
	Rails    payd.Rails
	Clock    payd.Clock
	Log      *slog.Logger
	Owner    string
	Lease    time.Duration // default 30 s
	Batch    int           // default 256
	Parallel int           // deliveries at once, default OrderParallel

	once sync.Once
	away away // the networks found unavailable (away.go)
}

func (o *Orders) defaults() { o.once.Do(o.setDefaults) }

func (o *Orders) setDefaults() {
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.Batch == 0 {
		o.Batch = 256
	}
	if o.Parallel == 0 {
		o.Parallel = OrderParallel
	}
	o.away.log = o.Log
}

// RunOnce claims the due orders and delivers them; it returns how many it
// attempted (those it held for a network that is away are not counted, so
// that a pass that held its whole claim does not run again at once). While
// every network it has delivered to is away with no probe due, it claims
// nothing.
func (o *Orders) RunOnce(ctx context.Context) (int, error) {
	o.defaults()
	if o.away.resting(o.Clock.Now()) {
		return 0, nil
	}
	orders, err := o.Store.ClaimOrders(ctx, o.Owner, o.Clock.Now(), o.Lease, o.Batch)
	if err != nil || len(orders) == 0 {
		return len(orders), err
	}
	taken, attempted, err := o.deliver(ctx, orders)
	return attempted, errors.Join(err, o.mark(ctx, taken))
}

// MarkBatch and MarkWait: the plain orders a handed loop's passes deliver
// are marked delivered together, once MarkBatch of them are waiting or
// the first has waited MarkWait. Each mark is a statement and a commit
// whose cost is mostly its own, not its rows' (BENCHMARKS.md): with marks
// of about 13 orders, one a pass, PostgreSQL took 418 µs of CPU an RTP
// created, and 377 µs with marks of up to 96. An order delivered and not
// yet marked stays leased to this instance: if it dies meanwhile, the
// order goes again once its lease runs out, the same message (the
// connector deduplicates on its MsgId).
const (
	MarkBatch = 96
	MarkWait  = 20 * time.Millisecond
)

// RunHanded delivers the orders this instance's writes hand it
// (Store.HandOrders), already leased to it, until ctx ends; then it marks
// what it delivered and gives up the leases of those still queued, for
// the claims to take.
func (o *Orders) RunHanded(ctx context.Context) {
	o.defaults()
	var taken []*payd.RailsOrder // delivered, to mark
	var since time.Time          // when the first of them was delivered
	report := func(err error) {
		if sqlstore.Unavailable(err) {
			o.Log.Warn("handed rails orders: database unavailable", "err", err)
		} else if err != nil {
			o.Log.Error("handed rails orders", "err", err)
		}
	}
	flush := func() {
		report(o.mark(ctx, taken))
		taken = nil
	}
	for {
		wait, cancel := ctx, context.CancelFunc(func() {})
		if len(taken) > 0 {
			wait, cancel = context.WithDeadline(ctx, since.Add(MarkWait))
		}
		handed := o.Store.HandedOrders(wait, o.Batch)
		cancel()
		if handed == nil && ctx.Err() == nil {
			flush() // MarkWait passed with nothing more handed
			continue
		}
		if handed == nil {
			flush()
			if err := o.Store.ReleaseHandedOrders(context.WithoutCancel(ctx)); err != nil {
				o.Log.Warn("handed work not released; its leases run out instead", "err", err)
			}
			return
		}
		orders := make([]*payd.RailsOrder, 0, len(handed))
		for _, h := range handed {
			if stale(h.LeaseUntil, o.Clock.Now(), o.Lease) {
				continue // its lease runs out before a delivery would end; a claim takes it then
			}
			orders = append(orders, h.Item)
		}
		t, _, err := o.deliver(ctx, orders)
		report(err)
		if len(taken) == 0 {
			since = time.Now()
		}
		if taken = append(taken, t...); len(taken) >= MarkBatch || time.Since(since) >= MarkWait {
			flush()
		}
	}
}

// deliverers are the goroutines deliveries run on: ants keeps each for a
// second after its last function. A goroutine started for each object's
// orders grew its stack in the middle of writing the message, every time:
// runtime.newstack was 3% of payd's CPU during production rtp-create, and
// is gone from its profile with these (BENCHMARKS.md). The callbacks'
// attempters live as long as their loop for the same reason (delivery.go).
// A panic in a delivery stops payd, as it did on a goroutine of its own,
// rather than being logged by ants and the worker going on (the order's
// lease would run out and it would be tried again, and fail again).
var deliverers, _ = ants.NewPool(-1, ants.WithExpiryDuration(time.Second),
	ants.WithPanicHandler(func(p any) { panic(fmt.Sprintf("%v\n%s", p, debug.Stack())) }))

// onWorker runs f on one of the deliverers, or on a new goroutine if the
// pool cannot take it.
func onWorker(f func()) {
	if deliverers.Submit(f) != nil {
		go f()
	}
}

// stale: work leased until until, for lease, waited more than half its
// lease for its loop (a delivery attempt lasts at most 10 s, a third of
// the default lease).
func stale(until, now time.Time, lease time.Duration) bool {
	return until.Sub(now) < lease/2
}

// deliver delivers claimed or handed orders, each object's in the order
// given, and records the outcomes but one: it returns the plain orders the
// network took, for the caller to mark delivered (mark), and how many
// orders it attempted. The orders of a network that is away are not
// attempted (away.go): they are released together, due when it is.
func (o *Orders) deliver(ctx context.Context, orders []*payd.RailsOrder) ([]*payd.RailsOrder, int, error) {
	if len(orders) == 0 {
		return nil, 0, nil
	}
	// The orders of each object, in the order they were claimed (written).
	var objects [][]*payd.RailsOrder
	at := map[string]int{}
	for _, ord := range orders {
		i, ok := at[ord.ObjectID]
		if !ok {
			i = len(objects)
			at[ord.ObjectID] = i
			objects = append(objects, nil)
		}
		objects[i] = append(objects[i], ord)
	}
	var mu sync.Mutex
	var taken []*payd.RailsOrder // plain orders the network took, to mark together
	var attempted int
	held := map[time.Time][]*payd.RailsOrder{} // not attempted, by when their network is due
	var firstErr error
	keep := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	rctx := context.WithoutCancel(ctx)
	slots := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for _, objs := range objects {
		wg.Add(1)
		slots <- struct{}{}
		onWorker(func() {
			defer func() { <-slots; wg.Done() }()
			for i, ord := range objs {
				route := o.route(ord)
				a := o.away.admit(route, o.Clock.Now())
				for a.wait != nil {
					<-a.wait // a probe's attempt ends within its timeout
					a = o.away.admit(route, o.Clock.Now())
				}
				if !a.attempt {
					mu.Lock()
					held[a.until] = append(held[a.until], objs[i:]...)
					mu.Unlock()
					return
				}
				t, err := o.Rails.Deliver(ctx, ord)
				now := o.Clock.Now()
				o.away.outcome(route, a.probe, ctx.Err() != nil, err, now)
				mu.Lock()
				attempted++
				mu.Unlock()
				if errors.Is(err, payd.ErrOrderRefused) {
					// Refused for good: kept as failed for a person
					// (payd_rails_orders_failed), never sent again. The
					// object's later orders go on.
					o.Log.Error("rails order refused by the network; it needs a person", "order_id", ord.ID, "kind", ord.Kind,
						"object_id", ord.ObjectID, "err", err)
					if err := o.Store.OrderRefused(rctx, ord, o.Owner, err.Error(), now); err != nil && !errors.Is(err, payd.ErrConflict) {
						keep(err)
					}
					continue
				}
				if err != nil {
					o.Log.Info("rails order not taken", "order_id", ord.ID, "kind", ord.Kind, "attempt", ord.Attempts+1, "err", err)
					next := now.Add(orderDelay(ord.Attempts + 1))
					if err := o.Store.OrderFailed(rctx, ord, o.Owner, err.Error(), next); err != nil && !errors.Is(err, payd.ErrConflict) {
						keep(err)
					}
					// The object's later orders wait for this one.
					if err := o.Store.ReleaseOrders(rctx, objs[i+1:], o.Owner, next); err != nil {
						keep(err)
					}
					return
				}
				if ord.Kind.RefundKind() || t.Refund != "" {
					if err := o.Store.OrderDelivered(rctx, ord, t, o.Owner, now); errors.Is(err, payd.ErrConflict) {
						o.Log.Warn("rails order lease lost before the attempt was recorded", "order_id", ord.ID)
					} else if err != nil {
						keep(err)
					}
					continue
				}
				mu.Lock()
				taken = append(taken, ord)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for until, orders := range held {
		if err := o.Store.ReleaseOrders(rctx, orders, o.Owner, until); err != nil {
			keep(err)
		}
	}
	return taken, attempted, firstErr
}

// Holding says whether the network of an order written now is away, with
// no probe due, and until when: such an order is written due then, not
// handed (sqlstore's HoldOrders).
func (o *Orders) Holding(ord *payd.RailsOrder) (until time.Time, away bool) {
	return o.away.holding(o.route(ord), o.Clock.Now())
}

// Away reports whether the orders of route (a payd.RailsRouter's name, ""
// for rails that deliver to one network) are held, its network away.
func (o *Orders) Away(route string) bool { return o.away.isAway(route) }

// route is the network ord goes to (payd.RailsRouter), "" when the rails
// deliver to one.
func (o *Orders) route(ord *payd.RailsOrder) string {
	if r, ok := o.Rails.(payd.RailsRouter); ok {
		return r.Route(ord)
	}
	return ""
}

// mark marks plain orders the network took delivered, in one statement,
// also once ctx has ended (a stop during the pass): the network took them,
// and unmarked they would go again when their lease runs out.
func (o *Orders) mark(ctx context.Context, taken []*payd.RailsOrder) error {
	if len(taken) == 0 {
		return nil
	}
	n, err := o.Store.OrdersDelivered(context.WithoutCancel(ctx), taken, o.Owner, o.Clock.Now())
	if err == nil && n < len(taken) {
		o.Log.Warn("rails orders' lease lost before their delivery was recorded", "orders", len(taken)-n)
	}
	return err
}

// orderDelay is the wait after failed attempt n (1, 2, …).
func orderDelay(n int) time.Duration {
	if n > len(OrderSchedule) {
		n = len(OrderSchedule)
	}
	return OrderSchedule[n-1]
}
