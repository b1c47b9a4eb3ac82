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
		s.SetRails("iso20022")
		now := storetest.Epoch
		clock := payd.NewFakeClock(now)
		m := ordersShop(t, s, now)
		rails := &awayRails{down: true, tried: map[string]bool{}, got: map[string][]int{}}
		o := &Orders{Store: s, Rails: rails, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "t", Parallel: 8}
		var ids []string
		for range 40 {
			ids = append(ids, newRTP(t, s, m, now).ID)
		}

		// The first pass: awayAfter deliveries fail, and those already
		// started with them; the rest wait unattempted.
		n, err := o.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first := rails.count()
		if first < awayAfter || first > awayAfter+o.Parallel-1 || n != first {
			t.Fatalf("the pass attempted %d (the connector got %d POSTs), want %d to %d, one a POST", n, first, awayAfter, awayAfter+o.Parallel-1)
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

// TestAwayStates: how one network's state moves with its attempts'
// outcomes, apart from another's.
func TestAwayStates(t *testing.T) {
	a := &away{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	t0 := storetest.Epoch
	unavailable := fmt.Errorf("connector answered 503 (%w)", payd.ErrRailsUnavailable)
	mustAttempt := func(at time.Time, probe bool) {
		t.Helper()
		if got := a.admit("rails", at); !got.attempt || got.probe != probe {
			t.Fatalf("at %v: %+v, want an attempt (probe %v)", at.Sub(t0), got, probe)
		}
	}
	mustHold := func(at, until time.Time) {
		t.Helper()
		if got := a.admit("rails", at); got.attempt || got.wait != nil || !got.until.Equal(until) {
			t.Fatalf("at %v: %+v, want held until %v", at.Sub(t0), got, until.Sub(t0))
		}
	}
	// A 503 now and then, the connector taking the orders between: never away.
	for range 3 {
		mustAttempt(t0, false)
		a.outcome("rails", false, false, unavailable, t0)
		a.outcome("rails", false, false, unavailable, t0)
		a.outcome("rails", false, false, nil, t0)
	}
	// awayAfter in a row: away until the schedule's first delay.
	for range awayAfter {
		mustAttempt(t0, false)
		a.outcome("rails", false, false, unavailable, t0)
	}
	mustHold(t0.Add(500*time.Millisecond), t0.Add(time.Second))
	if got := a.admit("cards", t0); !got.attempt || got.probe {
		t.Fatalf("another network held with this one: %+v", got)
	}
	if !a.isAway("rails") || a.isAway("cards") {
		t.Errorf("away: rails %v, cards %v; want rails only", a.isAway("rails"), a.isAway("cards"))
	}
	if a.resting(t0) { // cards is not away: the claims still run
		t.Errorf("resting while another network is not away")
	}
	mustAttempt(t0.Add(time.Second), true)
	if got := a.admit("rails", t0.Add(time.Second)); got.wait == nil {
		t.Fatalf("a second order during the probe: %+v, want it to wait for the probe", got)
	}
	a.outcome("rails", true, false, unavailable, t0.Add(time.Second))
	mustHold(t0.Add(time.Second), t0.Add(3*time.Second)) // the schedule's second delay
	if until, away := a.holding("rails", t0.Add(2*time.Second)); !away || !until.Equal(t0.Add(3*time.Second)) {
		t.Errorf("holding: %v %v, want until 3 s", until.Sub(t0), away)
	}
	// A probe cut short by a stop says nothing: the next one is due at once.
	mustAttempt(t0.Add(3*time.Second), true)
	a.outcome("rails", true, true, context.Canceled, t0.Add(3*time.Second))
	mustAttempt(t0.Add(3*time.Second), true)
	// An answer about the order alone (a 4xx) is the connector there.
	a.outcome("rails", true, false, fmt.Errorf("connector answered 400"), t0.Add(3*time.Second))
	mustAttempt(t0.Add(3*time.Second), false)
	if _, away := a.holding("rails", t0.Add(3*time.Second)); away || a.isAway("rails") {
		t.Errorf("holding, or away, after the connector answered")
	}
	// Its only network away: the claims rest until a probe is due.
	b := &away{log: a.log}
	for range awayAfter {
		b.admit("rails", t0)
		b.outcome("rails", false, false, unavailable, t0)
	}
	if !b.resting(t0) || b.resting(t0.Add(time.Second)) {
		t.Errorf("resting at 0 s: %v (want true), at 1 s: %v (want false)", b.resting(t0), b.resting(t0.Add(time.Second)))
	}
}
