// Package worker runs payd's background loops: callback delivery, refund
// processing, expiry and the sandbox's automatic RTP decisions. Every loop
// has the same shape: a struct with its settings, RunOnce (one pass, which
// tests call directly with a fake clock) and Run (RunOnce on a ticker, or
// sooner when woken, until the context ends).
//
// All coordination between instances goes through the database: delivery
// claims callbacks with a lease, and every other pass is a set of guarded
// updates, so any number of instances may run the same loops.
package worker

import (
	"context"
	"log/slog"
	"time"

	"payd/internal/sqlstore"
)

// Pass is one pass of a loop; it returns how much work it did.
type Pass func(ctx context.Context) (int, error)

// Run calls pass every interval and whenever wake fires, until ctx ends. A
// pass that did a full batch (full > 0 and n >= full) runs again at once.
func Run(ctx context.Context, log *slog.Logger, name string, interval time.Duration, wake <-chan struct{}, full int, pass Pass) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := pass(ctx)
		switch {
		case err == nil || ctx.Err() != nil:
		case sqlstore.Unavailable(err):
			// The database is away for now; the next pass tries again.
			log.Warn("background pass: database unavailable", "loop", name, "err", err)
		default:
			log.Error("background pass failed", "loop", name, "err", err)
		}
		if err == nil && full > 0 && n >= full {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// Paced is pass for housekeeping whose backlog must not crowd out the
// requests: after a pass that did a full batch (n >= full) it waits rest
// times as long as that pass took before running the next, so a backlog
// takes at most 1/(rest+1) of the time. Expiry is such work: reads apply
// expiry themselves, so a stored status may lag. A server started on a
// database with tens of thousands of overdue RTPs otherwise wrote their
// expiries back to back, and on SQLite, whose writes share one connection,
// the API's writes fell to a twentieth of their rate until it was done.
func Paced(full, rest int, pass Pass) Pass {
	var wait time.Duration
	return func(ctx context.Context) (int, error) {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
		}
		start := time.Now()
		n, err := pass(ctx)
		wait = 0
		if err == nil && n >= full {
			wait = time.Duration(rest) * time.Since(start)
		}
		return n, err
	}
}

// HandedLoops is how many loops of an instance take the rails orders its
// own writes hand it in memory (sqlstore/handover.go): one gathers while
// the other waits for its slowest delivery. (Handed callbacks are
// attempted as they come, by one loop.)
const HandedLoops = 2

// Waker coalesces wake-up calls into a channel a loop selects on.
type Waker chan struct{}

// NewWaker returns a waker.
func NewWaker() Waker { return make(Waker, 1) }

// Wake asks the loop to run soon; it never blocks.
func (w Waker) Wake() {
	select {
	case w <- struct{}{}:
	default:
	}
}
