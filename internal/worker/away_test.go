package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// awayRails is a connector that is down (unavailable) or up, counting the
// POSTs it gets and the attempts each order had before it was taken.
type awayRails struct {
	mu    sync.Mutex
	down  bool
	posts int
	tried map[string]bool  // the objects whose orders were POSTed while it was down
	got   map[string][]int // object id → the order's earlier attempts, at each taking
}

func (r *awayRails) Deliver(_ context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if r.down {
		r.tried[o.ObjectID] = true
		return payd.Taken{}, fmt.Errorf("connector answered 503 (%w)", payd.ErrRailsUnavailable)
	}
	r.got[o.ObjectID] = append(r.got[o.ObjectID], o.Attempts)
	return payd.Taken{}, nil
}

func (r *awayRails) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

func (r *awayRails) set(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

// TestOrdersWaitWhileTheConnectorIsAway: once a delivery finds the
// connector unavailable, the other orders are not attempted (no attempt
// counted), new RTPs' orders are written to wait instead of being handed,
// and one order at a time probes the connector on the schedule. When it is
// back every order is taken, each once.
func TestOrdersWaitWhileTheConnectorIsAway(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRailsOrders(true)
		now := storetest.Epoch
		clock := payd.NewFakeClock(now)
		m := ordersShop(t, s, now)
		rails := &awayRails{down: true, tried: map[string]bool{}, got: map[string][]int{}}
		o := &Orders{Store: s, Rails: rails, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "t", Parallel: 8}
		var ids []string
		for range 40 {
			ids = append(ids, newRTP(t, s, m, now).ID)
		}

		// The first pass: the deliveries already started may fail, the
		// rest wait unattempted.
		n, err := o.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first := rails.count()
		if first < 1 || first > 8 || n != first {
			t.Fatalf("the pass attempted %d (the connector got %d POSTs), want 1 to 8, one a POST", n, first)
		}
		if n, err := o.RunOnce(ctx); n != 0 || err != nil || rails.count() != first {
			t.Fatalf("another pass before the next probe is due: %d attempted, %d POSTs (%v), want none", n, rails.count()-first, err)
		}
		if pending, _, err := s.PendingOrders(ctx, clock.Now()); err != nil || pending != 40 {
			t.Fatalf("%d orders pending (%v), want all 40", pending, err)
		}

		// RTPs created while it is away: their orders wait, not handed.
		s.HandOrders("t", 30*time.Second, clock)
		s.HoldOrders(o.Holding)
		for range 10 {
			ids = append(ids, newRTP(t, s, m, now).ID)
		}
		if st := s.HandedOrderStats(); st.Handed != 0 || st.Full != 0 {
			t.Errorf("orders handed while the connector is away: %+v", st)
		}

		// At the schedule's first delay (1 s) one order probes it.
		clock.Advance(time.Second)
		if n, err := o.RunOnce(ctx); n != 1 || err != nil || rails.count() != first+1 {
			t.Fatalf("the probe's pass: %d attempted, %d POSTs (%v), want one", n, rails.count()-first, err)
		}
		if n, err := o.RunOnce(ctx); n != 0 || err != nil || rails.count() != first+1 {
			t.Fatalf("a pass after a failed probe: %d attempted, %d POSTs (%v), want none", n, rails.count()-first-1, err)
		}

		// Back: after the next delay (2 s) the probe is taken and the
		// others follow, in the same pass or the next.
		rails.set(false)
		clock.Advance(2 * time.Second)
		for pass := 0; pass < 5; pass++ {
			if _, err := o.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if pending, _, err := s.PendingOrders(ctx, clock.Now()); err != nil || pending != 0 {
			t.Fatalf("%d orders pending once the connector is back (%v)", pending, err)
		}
		neverTried := 0
		for _, id := range ids {
			got := rails.got[id]
			if len(got) != 1 {
				t.Errorf("RTP %s: taken %d times, want once", id, len(got))
				continue
			}
			if got[0] == 0 {
				neverTried++
			}
		}
		// Only the orders POSTed while it was away count attempts.
		if want := len(ids) - len(rails.tried); neverTried != want {
			t.Errorf("%d orders taken at their first attempt, want %d (all but the %d POSTed while it was away)", neverTried, want, len(rails.tried))
		}
		if posts := rails.count(); posts != first+1+len(ids) {
			t.Errorf("the connector got %d POSTs, want %d", posts, first+1+len(ids))
		}
	})
}
