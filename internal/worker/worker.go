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
		if err != nil && ctx.Err() == nil {
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
