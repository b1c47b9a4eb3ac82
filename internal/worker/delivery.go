package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"payd"
	"payd/internal/batch"
	"payd/internal/sqlstore"
	"payd/internal/webhook"
)

// DefaultSchedule is the redelivery schedule of spec §6.7: after failed
// attempt n (1–7) the next waits the n-th delay; the 8th failure is final.
var DefaultSchedule = []time.Duration{
	10 * time.Second, 60 * time.Second, 300 * time.Second, 600 * time.Second,
	3600 * time.Second, 43200 * time.Second, 86400 * time.Second,
}

// DeliveryBatch is how many callbacks a delivery pass claims by default: a
// pass waits for its slowest attempt, so under a steady flow a larger claim
// keeps more attempts in flight per pass (64 kept PostgreSQL's delivery
// behind a flow of 600 a second).
const DeliveryBatch = 256

// DeliveryLoops is how many delivery passes of one instance run at once,
// each claiming its own callbacks. A pass waits for its slowest attempt:
// with one loop a callback committed during a pass waited for that pass to
// end before it was even claimed (rtp-flow on 100,000 rows, SQLite:
// accept→arrival p50 40–45 ms with one loop, 24–32 ms with two), and one
// merchant's slow endpoint held back every other merchant's callbacks.
const DeliveryLoops = 4

// DeliveryParallel is how many attempts one delivery loop has in flight at
// once by default (Delivery.Parallel).
const DeliveryParallel = 64

// Delivery sends queued callbacks.
type Delivery struct {
	Store    *sqlstore.Store
	Client   *http.Client
	Clock    payd.Clock
	Log      *slog.Logger
	Owner    string          // this instance's name in leases and attempt records
	Schedule []time.Duration // DefaultSchedule when nil
	Lease    time.Duration   // how long a claim lasts; default 30 s (> the 10 s attempt timeout)
	// Soon is how long a leased callback may wait here for its attempt to
	// start (for an attempter, or for its host to have one fewer in flight)
	// before it is given back: its lease released at once, for another
	// instance's claim or this one's next, instead of held until it runs
	// out. Default Lease/6 (5 s).
	Soon     time.Duration
	Batch    int            // callbacks claimed per pass; default DeliveryBatch
	Parallel int            // attempts in flight at once, per loop; default DeliveryParallel
	PerHost  int            // attempts in flight to one host, across loops (hosts.go; PAYD_CALLBACK_PER_HOST); default Parallel/2
	Jitter   func() float64 // in [0, 1): the share of the 10 % jitter applied; default random
	Attempts *prometheus.CounterVec
	// Clocked: give merchants on the sandbox's test clock a claim as of
	// their own time (sandbox only).
	Clocked bool

	once  sync.Once
	hosts hosts
	given atomic.Int64 // callbacks given back (GivenBack)
}

// NewAttemptsCounter is the callback-attempts metric, by outcome.
func NewAttemptsCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "payd_callback_attempts_total", Help: "Callback delivery attempts by outcome.",
	}, []string{"outcome"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

func (d *Delivery) defaults() { d.once.Do(d.setDefaults) }

func (d *Delivery) setDefaults() {
	if d.Schedule == nil {
		d.Schedule = DefaultSchedule
	}
	if d.Lease == 0 {
		d.Lease = 30 * time.Second
	}
	if d.Soon == 0 {
		d.Soon = d.Lease / 6
	}
	if d.Batch == 0 {
		d.Batch = DeliveryBatch
	}
	if d.Parallel == 0 {
		d.Parallel = DeliveryParallel
	}
	if d.PerHost == 0 {
		d.PerHost = max(1, d.Parallel/2)
	}
	d.hosts.limit = d.PerHost
	if d.Jitter == nil {
		d.Jitter = rand.Float64
	}
}

// Parked is how many callbacks wait for their host to have fewer than
// PerHost attempts in flight (hosts.go): a merchant's endpoint slow or
// hung.
func (d *Delivery) Parked() int { return d.hosts.parked() }

// GivenBack is how many leased callbacks this instance gave back since it
// started, unattempted, because their attempt could not start within Soon
// (the instance starved, or their host at its limit).
func (d *Delivery) GivenBack() int64 { return d.given.Load() }

// lease is c leased to this instance until until: its attempt must start
// by until−Lease+Soon.
func (d *Delivery) lease(c *payd.Callback, until time.Time) leased {
	return leased{c: c, until: until, startBy: until.Add(d.Soon - d.Lease)}
}

// giveBack releases the leases of callbacks this instance will not attempt
// soon, in one statement, so that any instance's claim takes them now.
// The claims are not woken: this instance is behind, and the others claim
// every DeliveryInterval.
func (d *Delivery) giveBack(ctx context.Context, ls []leased) {
	if len(ls) == 0 {
		return
	}
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.c.ID
	}
	d.given.Add(int64(len(ls)))
	if err := d.Store.ReleaseCallbacks(context.WithoutCancel(ctx), d.Owner, ids...); err != nil {
		d.Log.Warn("callbacks not given back; their leases run out instead", "callbacks", len(ids), "err", err)
	}
}

// dispatch starts l's attempt on an attempter of work, if it can start
// by its startBy: counted for its host (parked if the host is at its
// limit), then handed to an attempter, waiting for one until startBy. What
// cannot start in time is added to back, to give back; parked reports a
// callback parked for its host.
func (d *Delivery) dispatch(work chan<- leased, l leased, back *[]leased) (parked bool) {
	now := d.Clock.Now()
	if now.After(l.startBy) {
		*back = append(*back, l)
		return false
	}
	attempt, give := d.hosts.take(l)
	switch {
	case give:
		*back = append(*back, l)
		return false
	case !attempt:
		return true
	}
	select {
	case work <- l:
		return false
	default:
	}
	t := time.NewTimer(l.startBy.Sub(now))
	defer t.Stop()
	select {
	case work <- l:
	case <-t.C:
		// No attempter freed in time: this instance is behind. l, and what
		// was parked behind it for its host if it was the host's last in
		// flight, go back.
		*back = append(append(*back, l), d.hosts.cancel(l.c)...)
	}
	return false
}

// RunOnce claims the due callbacks and makes one attempt of each. It
// returns how many it claimed less those parked for a busy host
// (hosts.go): a pass that only parked what it claimed is not run again at
// once, so a hung host's backlog is not claimed faster than it is tried.
func (d *Delivery) RunOnce(ctx context.Context) (int, error) {
	d.defaults()
	now := d.Clock.Now()
	cbs, err := d.claim(ctx, now)
	if len(cbs) == 0 {
		return 0, err
	}
	parked := d.attemptAll(ctx, cbs, now.Add(d.Lease))
	return len(cbs) - parked, err
}

// RunHanded makes the first attempt of the callbacks this instance's
// writes hand it (Store.HandCallbacks), already leased to it, until ctx
// ends; then it gives up the leases of those still queued, for the claims
// to take. Each callback is attempted as soon as it is handed, Parallel at
// a time, never waiting for a pass to end; the attempts are recorded as
// they finish, together (as in RunOnce).
func (d *Delivery) RunHanded(ctx context.Context) {
	d.defaults()
	done := make(chan sqlstore.Recorded, d.Parallel)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		var buf []sqlstore.Recorded
		for r := range done {
			buf = batch.Gather(buf[:0], r, done, d.Batch)
			d.record(ctx, buf)
		}
	}()
	work, wait := d.attempters(ctx, d.Parallel, done)
	var back []leased
	for {
		handed := d.Store.HandedCallbacks(ctx, d.Batch)
		if handed == nil {
			break
		}
		for _, h := range handed {
			d.dispatch(work, d.lease(h.Item, h.LeaseUntil), &back)
		}
		d.giveBack(ctx, back)
		back = back[:0]
	}
	close(work)
	wait()
	close(done)
	<-recorded
	if err := d.Store.ReleaseHandedCallbacks(context.WithoutCancel(ctx)); err != nil {
		d.Log.Warn("handed callbacks not released; their leases run out instead", "err", err)
	}
}

// ReleaseParked gives up the leases of the callbacks still parked for a
// busy host (hosts.go), so that another instance's claims take them at once
// instead of after their leases run out. serve calls it once every loop of
// d has ended: nothing is in flight then, and nothing is parked again.
func (d *Delivery) ReleaseParked(ctx context.Context) error {
	parked := d.hosts.drain()
	ids := make([]string, len(parked))
	for i, l := range parked {
		ids[i] = l.c.ID
	}
	return d.Store.ReleaseCallbacks(ctx, d.Owner, ids...)
}

// attemptAll makes one attempt of each of cbs, leased to this instance
// until until, and records them; those parked for a busy host (hosts.go)
// are attempted by the attempter that ends one of its host's attempts, and
// those whose attempt cannot start within Soon are given back. It returns
// how many it parked or gave back.
func (d *Delivery) attemptAll(ctx context.Context, cbs []*payd.Callback, until time.Time) (parked int) {
	// Attempts are recorded as they finish, together: whatever finished
	// while the previous record was being written goes in the next one,
	// one transaction each (group commit), not one per attempt.
	done := make(chan sqlstore.Recorded, len(cbs))
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		var buf []sqlstore.Recorded
		for r := range done {
			buf = batch.Gather(buf, r, done, len(cbs))
			d.record(ctx, buf)
		}
	}()
	work, wait := d.attempters(ctx, min(d.Parallel, len(cbs)), done)
	var back []leased
	for _, c := range cbs {
		if d.dispatch(work, d.lease(c, until), &back) {
			parked++
		}
	}
	parked += len(back)
	d.giveBack(ctx, back)
	close(work)
	wait()
	close(done)
	<-recorded
	return parked
}

// attempters starts n goroutines that attempt the callbacks sent on work
// (each counted in flight for its host: hosts.take), one at a time each,
// and send the outcomes to done; wait returns once work is closed and they
// have finished. One that ends an attempt attempts next what is parked
// for its host (hosts.next). They live as long as their loop: a goroutine
// started for each attempt grew its stack through net/http's client every
// time (runtime.newstack: 0.7-5.6% of payd's CPU in three profiles of
// rails-credit; none in two with these).
func (d *Delivery) attempters(ctx context.Context, n int, done chan<- sqlstore.Recorded) (work chan<- leased, wait func()) {
	w := make(chan leased)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range w {
				for ok := true; ok; {
					done <- d.attempt(ctx, l.c)
					var back []leased
					l, ok, back = d.hosts.next(l.c, d.Clock.Now(), ctx.Err() == nil)
					d.giveBack(ctx, back)
				}
			}
		}()
	}
	return w, wg.Wait
}

// claim leases the due callbacks: everyone's, then those of merchants on
// the sandbox's test clock as of their own time. What it claimed before an
// error is returned with it, to be attempted at once: left alone, it would
// wait out its lease (30 s) before another pass could take it.
func (d *Delivery) claim(ctx context.Context, now time.Time) ([]*payd.Callback, error) {
	cbs, err := d.Store.ClaimCallbacks(ctx, d.Owner, now, d.Lease, d.Batch)
	if err != nil || !d.Clocked {
		return cbs, err
	}
	clocked, err := d.Store.ClockedMerchants(ctx)
	if err != nil {
		return cbs, err
	}
	for _, m := range clocked {
		more, err := d.Store.ClaimCallbacksAt(ctx, d.Owner, m.ID, m.Now(now), now, now.Add(d.Lease), d.Batch)
		cbs = append(cbs, more...)
		if err != nil {
			return cbs, err
		}
	}
	return cbs, nil
}

// attempt makes one delivery attempt of c and returns it to be recorded.
func (d *Delivery) attempt(ctx context.Context, c *payd.Callback) sqlstore.Recorded {
	n := c.Attempts + 1
	start := d.Clock.Now()
	res := webhook.Send(ctx, d.Client, c, n)
	end := d.Clock.Now()
	outcome := "failure"
	if res.OK() {
		outcome = "success"
	}
	if d.Attempts != nil {
		d.Attempts.WithLabelValues(outcome).Inc()
	}
	var next time.Time
	switch {
	case res.OK():
	case ctx.Err() != nil && res.StatusCode == 0:
		// The loop's context ended before an answer: payd is stopping and
		// cut the attempt short, no fault of the merchant's. It is due
		// again at once, for another instance's claim, not after the
		// schedule's next delay, and a stop never makes a callback's
		// failure final. It still counts as an attempt (the merchant may
		// have had it), so the schedule goes on one step further the next
		// time. An answer that came before the stop is an outcome like any
		// other and follows the schedule.
		next = end
		res.Error = "payd stopped during the attempt: " + res.Error
	default:
		next = d.nextAttempt(n-c.ScheduleStart, end)
	}
	return sqlstore.Recorded{Callback: c, Next: next, Attempt: sqlstore.Attempt{
		Number: n, StartedAt: start, Duration: end.Sub(start), StatusCode: res.StatusCode, Error: res.Error, ResponseBody: res.Body,
	}}
}

// record writes finished attempts, even if ctx was cancelled meanwhile:
// the attempts happened. While the database is out of reach it tries
// again, for up to half the lease: the claim is still this instance's, and
// an attempt that reached the merchant but was never recorded would be
// sent again once the lease ran out.
func (d *Delivery) record(ctx context.Context, batch []sqlstore.Recorded) {
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	lost, err := d.Store.RecordAttempts(ctx, d.Owner, batch)
	for wait := 50 * time.Millisecond; err != nil && sqlstore.Unavailable(err) && time.Since(start) < d.Lease/2; wait = min(2*wait, time.Second) {
		time.Sleep(wait)
		lost, err = d.Store.RecordAttempts(ctx, d.Owner, batch)
	}
	if err != nil {
		for _, r := range batch {
			d.Log.Error("record callback attempt", "callback_id", r.Callback.ID, "attempt", r.Attempt.Number, "err", err)
		}
		return
	}
	gone := map[int]bool{}
	for _, i := range lost {
		gone[i] = true
		d.Log.Warn("callback lease lost before the attempt was recorded", "callback_id", batch[i].Callback.ID, "attempt", batch[i].Attempt.Number)
	}
	for i, r := range batch {
		if !gone[i] && !r.Attempt.OK() {
			d.Log.Info("callback attempt failed", "callback_id", r.Callback.ID, "attempt", r.Attempt.Number,
				"status", r.Attempt.StatusCode, "error", r.Attempt.Error, "final", r.Next.IsZero())
		}
	}
}

// nextAttempt is when attempt k+1 of the current schedule is due after
// attempt k failed at now, or zero when the schedule is exhausted. Jitter
// lengthens a delay by up to 10 % and never shortens it.
func (d *Delivery) nextAttempt(k int, now time.Time) time.Time {
	if k < 1 || k > len(d.Schedule) {
		return time.Time{}
	}
	delay := d.Schedule[k-1]
	delay += time.Duration(float64(delay) * 0.1 * d.Jitter())
	return now.Add(delay).Truncate(time.Millisecond)
}
