package worker

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/seed"
	"payd/internal/sqlstore/storetest"
	"payd/internal/webhook"
)

var ctx = context.Background()

// receiver is a merchant endpoint on loopback that answers with the
// statuses it is given, then 200, and keeps what it received.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   []string
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, req)
		r.bodies = append(r.bodies, string(b))
		status := 200
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) }

// acceptedRTP queues an rtp.accepted callback to url and returns the payment.
func acceptedRTP(t *testing.T, s *sqlstore.Store, clock payd.Clock, url string) (*payd.Merchant, *payd.Payment) {
	t.Helper()
	c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop"}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Merchant(ctx, c.MerchantID)
	amount, exp := payd.Money(5000), clock.Now().Add(time.Hour)
	r, err := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "x", CallbackURL: url}, m.ID, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRTP(ctx, m, r); err != nil {
		t.Fatal(err)
	}
	_, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

func newDelivery(s *sqlstore.Store, clock payd.Clock, owner string) *Delivery {
	return &Delivery{Store: s, Client: webhook.NewClient(true), Clock: clock, Owner: owner,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jitter: func() float64 { return 0 }}
}

func TestDeliveryRetriesOnScheduleWithTheSamePayload(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		rcv := newReceiver(t, 500, 500)
		m, p := acceptedRTP(t, s, clock, rcv.srv.URL+"/cb")
		d := newDelivery(s, clock, "a")
		steps := []struct {
			advance time.Duration
			want    int // deliveries made so far
		}{
			{0, 1}, {9 * time.Second, 1}, {time.Second, 2}, {59 * time.Second, 2}, {time.Second, 3}, {time.Hour, 3},
		}
		for i, st := range steps {
			clock.Advance(st.advance)
			if _, err := d.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if got := rcv.count(); got != st.want {
				t.Fatalf("step %d: %d attempts, want %d", i, got, st.want)
			}
		}
		for i, req := range rcv.got {
			if rcv.bodies[i] != rcv.bodies[0] || req.Header.Get("X-Signature") != rcv.got[0].Header.Get("X-Signature") ||
				req.Header.Get("X-Callback-Id") != rcv.got[0].Header.Get("X-Callback-Id") ||
				req.Header.Get("X-Signature-Timestamp") != rcv.got[0].Header.Get("X-Signature-Timestamp") {
				t.Errorf("attempt %d differs from the first", i+1)
			}
			if req.Header.Get("X-Callback-Attempt") != []string{"1", "2", "3"}[i] || req.Method != "POST" {
				t.Errorf("attempt %d: %s X-Callback-Attempt %s", i+1, req.Method, req.Header.Get("X-Callback-Attempt"))
			}
		}
		// The body is the seed's callback, signed with the merchant's key.
		want := payd.RTPAcceptedFields(&payd.RTP{ID: p.RTPID}, p).Body(m.SignatureKey)
		if rcv.bodies[0] != string(want) {
			t.Errorf("body\n got %s\nwant %s", rcv.bodies[0], want)
		}
		cbs, _ := s.Callbacks(ctx, payd.CallbackDelivered, 10)
		if len(cbs) != 1 || cbs[0].Attempts != 3 {
			t.Fatalf("delivered callbacks = %+v", cbs)
		}
		atts, _ := s.CallbackAttempts(ctx, cbs[0].ID)
		if len(atts) != 3 || atts[0].StatusCode != 500 || atts[2].StatusCode != 200 || !atts[1].StartedAt.Equal(storetest.Epoch.Add(10*time.Second)) {
			t.Errorf("attempts = %+v", atts)
		}
	})
}

func TestDeliveryGivesUpAfterTheScheduleAndResendRestartsIt(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		fails := make([]int, 9)
		for i := range fails {
			fails[i] = 503
		}
		rcv := newReceiver(t, fails...)
		acceptedRTP(t, s, clock, rcv.srv.URL)
		d := newDelivery(s, clock, "a")
		d.RunOnce(ctx)
		for _, delay := range DefaultSchedule {
			clock.Advance(delay)
			d.RunOnce(ctx)
		}
		if rcv.count() != 8 {
			t.Fatalf("%d attempts, want 8", rcv.count())
		}
		failed, _ := s.Callbacks(ctx, payd.CallbackFailed, 10)
		if len(failed) != 1 || failed[0].Attempts != 8 {
			t.Fatalf("failed = %+v", failed)
		}
		clock.Advance(1000 * time.Hour)
		d.RunOnce(ctx)
		if rcv.count() != 8 {
			t.Error("a failed callback was attempted again")
		}
		if err := s.ResendCallback(ctx, failed[0].ID, clock.Now()); err != nil {
			t.Fatal(err)
		}
		d.RunOnce(ctx) // attempt 9: 503, next in 10 s again
		clock.Advance(10 * time.Second)
		d.RunOnce(ctx) // attempt 10: 200
		if rcv.count() != 10 || rcv.got[9].Header.Get("X-Callback-Attempt") != "10" {
			t.Errorf("after resend: %d attempts", rcv.count())
		}
		if cb, _ := s.Callback(ctx, failed[0].ID); cb.State != payd.CallbackDelivered {
			t.Errorf("state after resend = %s", cb.State)
		}
		if err := s.ResendCallback(ctx, failed[0].ID, clock.Now()); err != payd.ErrConflict {
			t.Errorf("resend of a delivered callback: %v", err)
		}
	})
}

func TestDeliveryLeases(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		acceptedRTP(t, s, clock, "http://127.0.0.1:1/cb")
		a, err := s.ClaimCallbacks(ctx, "a", clock.Now(), 30*time.Second, 10)
		if err != nil || len(a) != 1 {
			t.Fatalf("claim a = %v, %v", a, err)
		}
		if b, _ := s.ClaimCallbacks(ctx, "b", clock.Now().Add(29*time.Second), 30*time.Second, 10); len(b) != 0 {
			t.Errorf("b claimed a leased callback")
		}
		// A crashed owner's lease runs out and another instance takes over;
		// the late owner can no longer record its attempt.
		b, _ := s.ClaimCallbacks(ctx, "b", clock.Now().Add(30*time.Second), 30*time.Second, 10)
		if len(b) != 1 {
			t.Fatalf("b did not take over the expired lease")
		}
		if err := s.RecordAttempt(ctx, a[0], "a", sqlstore.Attempt{Number: 1, StartedAt: clock.Now(), StatusCode: 200}, time.Time{}); err != payd.ErrConflict {
			t.Errorf("stale owner recorded: %v", err)
		}
		if err := s.RecordAttempt(ctx, b[0], "b", sqlstore.Attempt{Number: 1, StartedAt: clock.Now(), StatusCode: 200}, time.Time{}); err != nil {
			t.Errorf("owner could not record: %v", err)
		}
	})
}

// TestDeliveryAttemptsWhatItClaimedBeforeAFailure: a pass whose claim
// fails after it has leased callbacks (here the test clock's claim, which
// reads merchants, a table another connection has renamed) still attempts
// those callbacks at once, rather than leaving them to wait out their
// lease, and reports the failure.
func TestDeliveryAttemptsWhatItClaimedBeforeAFailure(t *testing.T) {
	s, u := storetest.SQLite(t)
	clock := payd.NewFakeClock(storetest.Epoch)
	rcv := newReceiver(t)
	_, p := acceptedRTP(t, s, clock, rcv.srv.URL)
	db, err := sql.Open("sqlite", strings.TrimPrefix(u, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("ALTER TABLE merchants RENAME TO merchants_elsewhere"); err != nil {
		t.Fatal(err)
	}
	d := newDelivery(s, clock, "a")
	d.Clocked = true
	n, err := d.RunOnce(ctx)
	if err == nil {
		t.Error("the failed claim was not reported")
	}
	if n != 1 || rcv.count() != 1 {
		t.Fatalf("pass attempted %d callbacks, the receiver got %d; want the one claimed", n, rcv.count())
	}
	cbs, err := s.Callbacks(ctx, payd.CallbackDelivered, 10)
	if err != nil || len(cbs) != 1 || cbs[0].SubjectID != p.ID {
		t.Errorf("delivered callbacks = %v, %v", cbs, err)
	}
}

// hangOnFirst is a merchant endpoint whose first request hangs until the
// client goes (or the test ends), after a 500's status line when answer;
// reached closes once that request is in. Later requests get 200.
func hangOnFirst(t *testing.T, answer bool) (url string, reached <-chan struct{}) {
	in, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) != 1 {
			return
		}
		if answer {
			w.WriteHeader(500)
			w.(http.Flusher).Flush()
		}
		close(in)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: no handler holds Close up
	return srv.URL, in
}

// stopMidAttempt runs one pass of d and ends its context (payd stopping)
// once reached closes and settle has passed.
func stopMidAttempt(t *testing.T, d *Delivery, reached <-chan struct{}, settle time.Duration) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := d.RunOnce(runCtx); done <- err }()
	<-reached
	time.Sleep(settle)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAttemptCutShortByAStopIsDueAtOnce: an attempt still in flight when
// its loop's context ends (payd stopping) is recorded, and its callback is
// due again at once, for another instance's claim, instead of after the
// schedule's first delay (10 s). Even the attempt that would have been the
// schedule's last leaves it pending.
func TestAttemptCutShortByAStopIsDueAtOnce(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		for _, last := range []bool{false, true} {
			clock := payd.NewFakeClock(storetest.Epoch)
			url, reached := hangOnFirst(t, false)
			acceptedRTP(t, s, clock, url)
			a := newDelivery(s, clock, "a")
			if last {
				a.Schedule = []time.Duration{} // the first attempt is the schedule's last
			}
			stopMidAttempt(t, a, reached, 0)
			// (The first round's callback was delivered: the one pending is
			// this round's.)
			cbs, err := s.Callbacks(ctx, payd.CallbackPending, 10)
			if err != nil || len(cbs) != 1 || cbs[0].Attempts != 1 {
				t.Fatalf("last %v: pending callbacks after the stop = %+v, %v; want one with its attempt counted", last, cbs, err)
			}
			id := cbs[0].ID
			// Another instance, at the same moment, takes it and delivers it.
			b := newDelivery(s, clock, "b")
			if _, err := b.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			atts, err := s.CallbackAttempts(ctx, id)
			if err != nil || len(atts) != 2 || !strings.HasPrefix(atts[0].Error, "payd stopped during the attempt: ") || atts[1].StatusCode != 200 {
				t.Fatalf("last %v: attempts = %+v, %v; want the cut one, then a 200 at once", last, atts, err)
			}
		}
	})
}

// TestAnswerBeforeAStopFollowsTheSchedule: an attempt the merchant had
// answered (a 500, its body still coming) when the stop came is an
// outcome like any other: its callback waits the schedule's 10 s.
func TestAnswerBeforeAStopFollowsTheSchedule(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		url, reached := hangOnFirst(t, true)
		acceptedRTP(t, s, clock, url)
		// 200 ms: time for the client to read the status line.
		stopMidAttempt(t, newDelivery(s, clock, "a"), reached, 200*time.Millisecond)
		cbs, err := s.Callbacks(ctx, payd.CallbackPending, 10)
		if err != nil || len(cbs) != 1 || cbs[0].Attempts != 1 {
			t.Fatalf("pending callbacks after the stop = %+v, %v", cbs, err)
		}
		atts, err := s.CallbackAttempts(ctx, cbs[0].ID)
		if err != nil || len(atts) != 1 || atts[0].StatusCode != 500 || strings.HasPrefix(atts[0].Error, "payd stopped") {
			t.Fatalf("attempts = %+v, %v; want the 500 as answered", atts, err)
		}
		b := newDelivery(s, clock, "b")
		if n, err := b.RunOnce(ctx); err != nil || n != 0 {
			t.Fatalf("another instance at once: claimed %d, %v; want none before the schedule's 10 s", n, err)
		}
		clock.Advance(10 * time.Second)
		if n, err := b.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("after 10 s: claimed %d, %v; want it", n, err)
		}
	})
}

func TestJitterOnlyLengthens(t *testing.T) {
	d := &Delivery{}
	d.defaults()
	now := storetest.Epoch
	for i := 0; i < 1000; i++ {
		next := d.nextAttempt(2, now)
		if delay := next.Sub(now); delay < 60*time.Second || delay > 66*time.Second {
			t.Fatalf("delay %v outside [60s, 66s]", delay)
		}
	}
	if !d.nextAttempt(8, now).IsZero() {
		t.Error("an 8th failure was rescheduled")
	}
}

// TestMerchantDownForADay: an endpoint that is down for a day gets every
// callback once it is back, at the next attempt of each one's schedule, with
// the payload of the first attempt.
func TestMerchantDownForADay(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		back := storetest.Epoch.Add(24 * time.Hour)
		var mu sync.Mutex
		bodies := map[string][]string{} // X-Callback-Id → bodies received
		var attemptsWhileDown int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			if clock.Now().Before(back) {
				attemptsWhileDown++
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			bodies[r.Header.Get("X-Callback-Id")] = append(bodies[r.Header.Get("X-Callback-Id")], string(b))
		}))
		defer srv.Close()
		for i := 0; i < 5; i++ {
			acceptedRTP(t, s, clock, srv.URL)
			clock.Advance(7 * time.Minute)
		}
		d := newDelivery(s, clock, "a")
		// 40 hours in one-minute steps, running the loop each step.
		for clock.Now().Before(storetest.Epoch.Add(40 * time.Hour)) {
			if _, err := d.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 5 {
			t.Fatalf("%d of 5 callbacks arrived after the outage", len(bodies))
		}
		for id, bs := range bodies {
			if len(bs) != 1 {
				t.Errorf("%s arrived %d times", id, len(bs))
			}
			cb, _ := s.Callback(ctx, id)
			if string(cb.Body) != bs[0] || cb.State != payd.CallbackDelivered || cb.Attempts != 8 {
				// Attempts 1–7 fail during the day (the 7th is 13 h 16 min after
				// the first); the 8th, 24 h after the 7th, lands once it is back.
				t.Errorf("%s: state %s after %d attempts", id, cb.State, cb.Attempts)
			}
		}
		t.Logf("%d attempts failed while the endpoint was down; every callback arrived once after", attemptsWhileDown)
	})
}

// TestRetentionPrunesOnlyWhatIsOldAndDone: delivered callbacks (with their
// attempts) older than the retention go, in batches; recent ones and
// pending ones stay.
func TestRetentionPrunesOnlyWhatIsOldAndDone(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		clock := payd.NewFakeClock(storetest.Epoch)
		ok := newReceiver(t)
		for i := 0; i < 7; i++ { // old and delivered
			acceptedRTP(t, s, clock, ok.srv.URL+"/old")
		}
		if _, err := newDelivery(s, clock, "a").RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(100 * 24 * time.Hour)
		down := newReceiver(t, 500, 500, 500)
		acceptedRTP(t, s, clock, down.srv.URL+"/pending") // stays pending after one failure
		acceptedRTP(t, s, clock, ok.srv.URL+"/recent")    // delivered now
		if _, err := newDelivery(s, clock, "a").RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		r := &Retention{Store: s, Clock: clock, Keep: 90 * 24 * time.Hour, Batch: 3}
		n, err := r.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 28 { // 7 callbacks, their 7 attempts and 14 rows of the object index (rtpId, payId)
			t.Errorf("pruned %d rows, want 28", n)
		}
		left, err := s.Callbacks(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		states := map[payd.CallbackState]int{}
		for _, c := range left {
			states[c.State]++
			if atts, _ := s.CallbackAttempts(ctx, c.ID); len(atts) != 1 {
				t.Errorf("callback %s kept %d attempts", c.ID, len(atts))
			}
		}
		if len(left) != 2 || states[payd.CallbackPending] != 1 || states[payd.CallbackDelivered] != 1 {
			t.Errorf("left %v", states)
		}
		if n, _ := r.RunOnce(ctx); n != 0 {
			t.Errorf("a second pass pruned %d", n)
		}
	})
}

// TestExpiryBatchFollowsTheEngine: an expiry pass over a backlog moves at
// most ExpiryBatch RTPs of each open status, 100 on SQLite (whose API
// writes wait behind it), and the passes together move every overdue RTP
// once.
func TestExpiryBatchFollowsTheEngine(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		engine := s.Engine()
		c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "m"}, storetest.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		// 1,400 RTPs with deadlines 1–1,000 hours after creation, 3 in 7 open.
		if err := seed.RTPs(ctx, s.WriteDB(), s.Engine() == sqlstore.Postgres, []string{c.MerchantID}, 1400, storetest.Epoch); err != nil {
			t.Fatal(err)
		}
		e := &Expiry{Store: s, Clock: payd.NewFakeClock(storetest.Epoch.Add(2000 * time.Hour))}
		batch := ExpiryBatch(s.Engine())
		if want := map[sqlstore.Engine]int{sqlstore.SQLite: 100, sqlstore.Postgres: 500}[engine]; batch != want {
			t.Fatalf("%s: batch %d, want %d", engine, batch, want)
		}
		total, passes := 0, 0
		for {
			n, err := e.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if n > 2*batch {
				t.Fatalf("a pass moved %d RTPs, more than %d of each open status", n, batch)
			}
			total += n
			passes++
		}
		// j%7 picks the status: 0 and 1 Active, 6 Created.
		if total != 600 {
			t.Fatalf("%d RTPs expired, want the 600 open ones", total)
		}
		if want := map[sqlstore.Engine]int{sqlstore.SQLite: 4, sqlstore.Postgres: 1}[engine]; passes != want {
			t.Fatalf("%s: %d passes, want %d", engine, passes, want)
		}
	})
}
