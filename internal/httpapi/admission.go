package httpapi

import (
	"context"
	"sync/atomic"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// admission bounds the API requests doing work at once. Past the bound a
// request waits in a queue of bounded length for at most QueueWait, then
// answers 503 90009 with Retry-After: the database is never offered more
// than it can serve, and nobody waits without end.
type admission struct {
	slots   chan struct{}
	waiting atomic.Int64
	queue   int64
	wait    time.Duration
	shed    atomic.Int64 // answered 503 here
}

func newAdmission(inFlight, queue int, wait time.Duration) *admission {
	return &admission{slots: make(chan struct{}, inFlight), queue: int64(queue), wait: wait}
}

// errOverloaded is what a request gets when it cannot be admitted in time.
var errOverloaded = payd.E(payd.CodeUnavailable, "retryAfter", "1")

// enter admits the request or says why not; leave must follow an admission.
func (a *admission) enter(ctx context.Context) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	if a.waiting.Add(1) > a.queue {
		a.waiting.Add(-1)
		a.shed.Add(1)
		return errOverloaded
	}
	defer a.waiting.Add(-1)
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-t.C:
		a.shed.Add(1)
		return errOverloaded
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *admission) leave() { <-a.slots }

// unavailable says whether err is the store running out of time or
// connections, or the database being out of reach, rather than a fault:
// the request may be retried.
func unavailable(err error) bool { return sqlstore.Unavailable(err) }

// statusClientClosed is logged and counted for a request whose client went
// away before the answer (nobody reads it).
const statusClientClosed = 499
