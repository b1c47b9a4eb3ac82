package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// OrderSchedule is the redelivery schedule of rails orders: after failed
// attempt n the next waits the n-th delay, then the last one for ever. An
// order is never given up: money must reach the network.
var OrderSchedule = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second}

// Orders hands the rails outbox to the rails adapter: it claims due orders
// with a lease (as Delivery claims callbacks), delivers each, and records
// the outcome. An order the network took is applied (a refund's return
// taken makes it Requested) in the transaction that marks it delivered.
type Orders struct {
	Store *sqlstore.Store
	Rails payd.Rails
	Clock payd.Clock
	Log   *slog.Logger
	Owner string
	Lease time.Duration // default 30 s
	Batch int           // default 32
}

// RunOnce claims the due orders and delivers them, one after another in
// the order they were written (a cancel never overtakes its RTP).
func (o *Orders) RunOnce(ctx context.Context) (int, error) {
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.Batch == 0 {
		o.Batch = 32
	}
	orders, err := o.Store.ClaimOrders(ctx, o.Owner, o.Clock.Now(), o.Lease, o.Batch)
	if err != nil {
		return 0, err
	}
	for _, ord := range orders {
		taken, err := o.Rails.Deliver(ctx, ord)
		now := o.Clock.Now()
		rctx := context.WithoutCancel(ctx)
		if err == nil {
			err = o.Store.OrderDelivered(rctx, ord, taken, o.Owner, now)
		} else {
			o.Log.Info("rails order not taken", "order_id", ord.ID, "kind", ord.Kind, "attempt", ord.Attempts+1, "err", err)
			err = o.Store.OrderFailed(rctx, ord, o.Owner, err.Error(), now.Add(orderDelay(ord.Attempts+1)))
		}
		if errors.Is(err, payd.ErrConflict) {
			o.Log.Warn("rails order lease lost before the attempt was recorded", "order_id", ord.ID)
		} else if err != nil {
			return len(orders), err
		}
	}
	return len(orders), nil
}

// orderDelay is the wait after failed attempt n (1, 2, …).
func orderDelay(n int) time.Duration {
	if n > len(OrderSchedule) {
		n = len(OrderSchedule)
	}
	return OrderSchedule[n-1]
}
