package worker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// runHanded runs a handed loop until the test ends, and waits for it.
func runHanded(t *testing.T, run func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// handedShop turns rails orders on, with an RTP's pain.013 handed to
// instance "a", and makes a merchant to send them for.
func handedShop(t *testing.T, s *sqlstore.Store) (time.Time, *payd.FakeClock, *payd.Merchant) {
	t.Helper()
	s.SetRails("iso20022")
	now := storetest.Epoch
	clock := payd.NewFakeClock(now)
	s.HandOrders("a", 30*time.Second, clock)
	return now, clock, ordersShop(t, s, now)
}

func ordersShop(t *testing.T, s *sqlstore.Store, now time.Time) *payd.Merchant {
	t.Helper()
	cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", IBAN: "MD24AG000225100013104168"}, now)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Merchant(ctx, cr.MerchantID)
	return m
}

func newRTP(t *testing.T, s *sqlstore.Store, m *payd.Merchant, now time.Time) *payd.RTP {
	t.Helper()
	amount, exp := payd.Money(100), now.Add(time.Hour)
	r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369000001", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "x"}, m.ID, now)
	if err := s.CreateRTP(ctx, m, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHandedOrders: with orders handed over, an RTP's pain.013 is written
// leased to its instance, which delivers it without a claim; no other
// instance can claim it meanwhile, and the RTP's cancel, which is not
// handed, is claimed once the pain.013 is delivered and never before it.
func TestHandedOrders(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now, clock, m := handedShop(t, s)
		var ids []string
		for range 20 {
			r := newRTP(t, s, m, now)
			if _, err := s.CancelRTP(ctx, m.ID, r.ID, "changed", now); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		// Leased to a at their write: b finds nothing to claim, neither
		// the pain.013s nor the cancels behind them.
		if got, err := s.ClaimOrders(ctx, "b", now, 30*time.Second, 100); err != nil || len(got) != 0 {
			t.Fatalf("b claimed %d orders (%v)", len(got), err)
		}
		rails := &recordingRails{got: map[string][]payd.OrderKind{}, refuseOnce: map[string]bool{}}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		a := &Orders{Store: s, Rails: rails, Clock: clock, Log: log, Owner: "a"}
		runHanded(t, a.RunHanded)
		waitFor(t, "20 pain.013s", func() bool {
			rails.mu.Lock()
			defer rails.mu.Unlock()
			n := 0
			for _, id := range ids {
				n += len(rails.got[id])
			}
			return n == 20
		})
		waitFor(t, "the pain.013s marked delivered", func() bool {
			n, _, _ := s.PendingOrders(ctx, now)
			return n == 20 // the cancels
		})
		b := &Orders{Store: s, Rails: rails, Clock: clock, Log: log, Owner: "b"}
		if n, err := b.RunOnce(ctx); err != nil || n != 20 {
			t.Fatalf("b claimed %d cancels (%v)", n, err)
		}
		rails.mu.Lock()
		defer rails.mu.Unlock()
		for _, id := range ids {
			if got := rails.got[id]; len(got) != 2 || got[0] != payd.OrderSendRTP || got[1] != payd.OrderCancelRTP {
				t.Errorf("RTP %s: orders arrived as %v", id, got)
			}
		}
		if n, _, err := s.PendingOrders(ctx, now); err != nil || n != 0 {
			t.Errorf("%d orders still pending (%v)", n, err)
		}
	})
}

// TestHandedOrdersMarkedAtStop: the pain.013s a handed loop delivered are
// marked delivered when it stops, not left pending for their leases to
// run out (which would send them again), however soon after their
// delivery the stop comes.
func TestHandedOrdersMarkedAtStop(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now, clock, m := handedShop(t, s)
		for range 5 {
			newRTP(t, s, m, now)
		}
		rails := &recordingRails{got: map[string][]payd.OrderKind{}, refuseOnce: map[string]bool{}}
		a := &Orders{Store: s, Rails: rails, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "a"}
		stop, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); a.RunHanded(stop) }()
		waitFor(t, "5 pain.013s", func() bool {
			rails.mu.Lock()
			defer rails.mu.Unlock()
			return len(rails.got) == 5
		})
		cancel()
		<-done
		if n, _, err := s.PendingOrders(ctx, now); err != nil || n != 0 {
			t.Fatalf("%d delivered orders still pending after the stop (%v)", n, err)
		}
	})
}

// TestHandedOrderOutlivesItsInstance: a pain.013 handed to an instance that
// dies before delivering it (nothing takes its queue), or whose loop took
// it too late to deliver within its lease, is claimed by another instance
// once the lease runs out, and delivered once.
func TestHandedOrderOutlivesItsInstance(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now, clock, m := handedShop(t, s)
		r := newRTP(t, s, m, now)
		rails := &recordingRails{got: map[string][]payd.OrderKind{}, refuseOnce: map[string]bool{}}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		// a's loop takes it 20 s late: it leaves it to the claims.
		clock.Advance(20 * time.Second)
		a := &Orders{Store: s, Rails: rails, Clock: clock, Log: log, Owner: "a"}
		ctxA, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); a.RunHanded(ctxA) }()
		waitFor(t, "a's loop to take the pain.013", func() bool { return s.HandedOrderStats().Queued == 0 })
		b := &Orders{Store: s, Rails: rails, Clock: clock, Log: log, Owner: "b"}
		if n, err := b.RunOnce(ctx); err != nil || n != 0 {
			t.Fatalf("b claimed %d orders within a's lease (%v)", n, err)
		}
		clock.Advance(10 * time.Second) // a's lease has run out
		if n, err := b.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("b claimed %d orders after a's lease (%v)", n, err)
		}
		cancel()
		<-done
		rails.mu.Lock()
		defer rails.mu.Unlock()
		if got := rails.got[r.ID]; len(got) != 1 {
			t.Errorf("the pain.013 was delivered %d times", len(got))
		}
	})
}

// TestHandedQueueFull: work handed to a full queue is not leased to the
// instance (a claim takes it at once), and what is still queued when the
// instance stops is released to the claims.
func TestHandedQueueFull(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		now := storetest.Epoch
		clock := payd.NewFakeClock(now)
		const capacity = 5
		s.HandOrdersUpTo("a", 30*time.Second, clock, capacity)
		m := ordersShop(t, s, now)
		for range capacity + 3 {
			newRTP(t, s, m, now)
		}
		got, err := s.ClaimOrders(ctx, "b", now, 30*time.Second, 100)
		if err != nil || len(got) != 3 {
			t.Fatalf("b claimed %d orders past the full queue, want 3 (%v)", len(got), err)
		}
		if st := s.HandedOrderStats(); st != (sqlstore.HandStats{Queued: capacity, Handed: capacity, Full: 3}) {
			t.Errorf("handed orders' stats = %+v, want %d queued and handed, 3 full", st, capacity)
		}
		if err := s.ReleaseHandedOrders(ctx); err != nil {
			t.Fatal(err)
		}
		got, err = s.ClaimOrders(ctx, "b", now, 30*time.Second, 100)
		if err != nil || len(got) != capacity {
			t.Fatalf("b claimed %d released orders, want %d (%v)", len(got), capacity, err)
		}
	})
}

// TestHandedCallbacks: a payment's callback is written leased to its
// instance and delivered by its handed loop over HTTP, with no claim; no
// other instance claims it meanwhile, and it is recorded delivered once.
func TestHandedCallbacks(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		s.HandCallbacks("a", 30*time.Second, clock)
		rc := newReceiver(t)
		_, p := acceptedRTP(t, s, clock, rc.srv.URL+"/cb")
		if got, err := s.ClaimCallbacks(ctx, "b", clock.Now(), 30*time.Second, 10); err != nil || len(got) != 0 {
			t.Fatalf("b claimed %d handed callbacks (%v)", len(got), err)
		}
		if st := s.HandedCallbackStats(); st != (sqlstore.HandStats{Queued: 1, Handed: 1}) {
			t.Errorf("handed callbacks' stats = %+v, want 1 queued and handed", st)
		}
		runHanded(t, newDelivery(s, clock, "a").RunHanded)
		waitFor(t, "the callback", func() bool { return rc.count() == 1 })
		waitFor(t, "its delivery recorded", func() bool {
			cbs, err := s.Callbacks(ctx, payd.CallbackDelivered, 10)
			return err == nil && len(cbs) == 1
		})
		cbs, _ := s.Callbacks(ctx, payd.CallbackDelivered, 10)
		if cbs[0].SubjectID != p.ID || cbs[0].Event != payd.EventRTPAccepted || cbs[0].Attempts != 1 {
			t.Errorf("delivered %s %s after %d attempts, want the payment %s's rtp.accepted after 1", cbs[0].Event, cbs[0].SubjectID, cbs[0].Attempts, p.ID)
		}
		// Nothing is left for a claim, now or after the lease.
		if got, _ := s.ClaimCallbacks(ctx, "b", clock.Now().Add(time.Hour), 30*time.Second, 10); len(got) != 0 {
			t.Errorf("b claimed %d delivered callbacks", len(got))
		}
		if rc.count() != 1 {
			t.Errorf("the callback arrived %d times", rc.count())
		}
	})
}

// TestHandedCallbackLeaseIsRealTime: a merchant on the sandbox's test clock
// dates its callback days ahead; the lease it is written with is still
// real time's, so that another instance takes it within the lease's length
// of real time should this one die.
func TestHandedCallbackLeaseIsRealTime(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		real := payd.NewFakeClock(storetest.Epoch)
		s.HandCallbacks("a", 30*time.Second, real)
		ahead := payd.NewFakeClock(storetest.Epoch.Add(72 * time.Hour))
		m, _ := acceptedRTP(t, s, ahead, "http://127.0.0.1:1/cb")
		// The test clock's claim, as of the merchant's time: held by a for
		// 30 s of real time, then b's.
		claim := func(after time.Duration) int {
			got, err := s.ClaimCallbacksAt(ctx, "b", m.ID, ahead.Now(), real.Now().Add(after), real.Now().Add(after+time.Minute), 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		if n := claim(29 * time.Second); n != 0 {
			t.Fatalf("b claimed a callback leased to a")
		}
		if n := claim(30 * time.Second); n != 1 {
			t.Fatalf("b claimed %d callbacks once a's lease ran out in real time, want 1", n)
		}
	})
}

// TestHandedCallbacksReleasedAtStop: callbacks still queued when the
// instance's handed loop stops are released to the claims at once, not
// left to wait out their lease.
func TestHandedCallbacksReleasedAtStop(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		s.HandCallbacks("a", 30*time.Second, clock)
		acceptedRTP(t, s, clock, "http://127.0.0.1:1/cb")
		if got, _ := s.ClaimCallbacks(ctx, "b", clock.Now(), 30*time.Second, 10); len(got) != 0 {
			t.Fatalf("b claimed a handed callback")
		}
		stopped, cancel := context.WithCancel(context.Background())
		cancel() // the server is stopping: the loop takes nothing and releases what is queued
		newDelivery(s, clock, "a").RunHanded(stopped)
		if got, err := s.ClaimCallbacks(ctx, "b", clock.Now(), 30*time.Second, 10); err != nil || len(got) != 1 {
			t.Fatalf("b claimed %d released callbacks, want 1 (%v)", len(got), err)
		}
	})
}

// TestReleaseCallbacks: releasing gives up the leases of the callbacks
// named, all in one call, and only those their owner holds.
func TestReleaseCallbacks(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		s.HandCallbacks("a", 30*time.Second, clock)
		for range 4 {
			acceptedRTP(t, s, clock, "http://127.0.0.1:1/cb")
		}
		var ids []string
		for _, h := range s.HandedCallbacks(ctx, 10) {
			ids = append(ids, h.Item.ID)
		}
		if len(ids) != 4 {
			t.Fatalf("%d callbacks handed, want 4", len(ids))
		}
		claim := func() int {
			t.Helper()
			got, err := s.ClaimCallbacks(ctx, "b", clock.Now(), 30*time.Second, 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		if err := s.ReleaseCallbacks(ctx, "c", ids...); err != nil {
			t.Fatal(err)
		}
		if n := claim(); n != 0 {
			t.Fatalf("b claimed %d callbacks after another owner's release, want 0", n)
		}
		if err := s.ReleaseCallbacks(ctx, "a", ids[:3]...); err != nil {
			t.Fatal(err)
		}
		if n := claim(); n != 3 {
			t.Fatalf("b claimed %d callbacks after a released 3, want 3", n)
		}
		// b's leases now: a releases nothing of them, nor of its fourth
		// when named with none.
		if err := s.ReleaseCallbacks(ctx, "a", ids[:3]...); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseCallbacks(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if n := claim(); n != 0 {
			t.Fatalf("b claimed %d callbacks it or a still held, want 0", n)
		}
	})
}

// TestStarvedInstanceGivesCallbacksBack: instance a, starved (one
// attempter, its host's limit one, a receiver taking 200 ms an answer),
// is handed 30 callbacks at once. What a cannot start within Soon of its
// lease is given back at once, and b's claims take it: every callback
// arrives once, all well within a's lease. (a held them all: those it
// could not reach waited out the lease, 3 s here, 30 s by default.)
func TestStarvedInstanceGivesCallbacksBack(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.SystemClock{}
		const lease = 3 * time.Second
		s.HandCallbacks("a", lease, clock)
		var mu sync.Mutex
		arrived := map[string]int{}
		var last time.Time
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(200 * time.Millisecond)
			mu.Lock()
			arrived[r.Header.Get("X-Callback-Id")]++
			last = time.Now()
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		start := time.Now()
		for range 30 {
			acceptedRTP(t, s, clock, srv.URL+"/cb")
		}
		a := newDelivery(s, clock, "a")
		a.Lease, a.Parallel, a.PerHost = lease, 1, 1
		b := newDelivery(s, clock, "b")
		b.Lease = lease
		runHanded(t, a.RunHanded)
		ctx, cancel := context.WithCancel(context.Background())
		claims := make(chan struct{})
		go func() {
			defer close(claims)
			for ctx.Err() == nil {
				b.RunOnce(ctx)
				time.Sleep(20 * time.Millisecond)
			}
		}()
		t.Cleanup(func() { cancel(); <-claims })
		waitFor(t, "30 callbacks", func() bool { mu.Lock(); defer mu.Unlock(); return len(arrived) == 30 })
		mu.Lock()
		defer mu.Unlock()
		for id, n := range arrived {
			if n != 1 {
				t.Errorf("callback %s arrived %d times", id, n)
			}
		}
		if took := last.Sub(start); took >= lease {
			t.Errorf("the last callback arrived %v after the writes, not within a's lease of %v", took, lease)
		}
		if a.GivenBack() == 0 {
			t.Error("a gave nothing back")
		}
		t.Logf("last arrival %v after the writes; a gave back %d", last.Sub(start).Round(time.Millisecond), a.GivenBack())
	})
}

// TestClaimPassGivesBackWhatItCannotStart: a claim pass that took more
// than its attempters can start within Soon gives the rest back at once
// instead of holding their leases while it works through them.
func TestClaimPassGivesBackWhatItCannotStart(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.SystemClock{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) }))
		t.Cleanup(srv.Close)
		for range 10 {
			acceptedRTP(t, s, clock, srv.URL+"/cb")
		}
		a := newDelivery(s, clock, "a")
		a.Lease, a.Soon, a.Parallel = 3*time.Second, 500*time.Millisecond, 1
		if _, err := a.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		// a started about two attempts within Soon; the rest were given back
		// and are due to anyone now, while a's lease would still hold them.
		got, err := s.ClaimCallbacks(ctx, "b", clock.Now(), time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || int64(len(got)) != a.GivenBack() {
			t.Errorf("b claimed %d callbacks after a's pass, a gave back %d; want the same, more than none", len(got), a.GivenBack())
		}
	})
}
