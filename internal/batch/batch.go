// Package batch is the natural batching payd uses wherever work queues on a
// channel for one consumer: group commit, coalesced reads, the recording of
// callback attempts.
package batch

import "time"

// Gather is first and whatever else is already queued on ch, up to max, in
// buf's storage. It never waits for a batch to fill: a lone item goes at
// once, and under load what queued meanwhile shares the next batch. A
// closed ch ends the batch.
func Gather[T any](buf []T, first T, ch <-chan T, max int) []T {
	return queued(append(buf[:0], first), ch, max)
}

// Wave is Gather for a consumer whose batches carry a fixed cost worth
// sharing: when fewer than want have queued, it waits up to wait for more
// before it takes what has queued by then. A consumer that asks for the
// size of its last batch, and waits no longer than that batch took, turns
// a wave of concurrent requests that arrives spread out into one batch
// instead of a batch and its stragglers, and adds to a request's wait at
// most one batch's time, which a request that arrived just after a batch
// started waits anyway. With want <= 1 or no wait it is Gather.
func Wave[T any](buf []T, first T, ch <-chan T, max, want int, wait time.Duration) []T {
	buf = Gather(buf, first, ch, max)
	want = min(want, max)
	if len(buf) >= want || wait <= 0 {
		return buf
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for len(buf) < want {
		select {
		case j, ok := <-ch:
			if !ok {
				return buf
			}
			buf = append(buf, j)
		case <-t.C:
			return queued(buf, ch, max)
		}
	}
	return queued(buf, ch, max)
}

// queued appends to buf what is queued on ch, up to max in all, without
// waiting.
func queued[T any](buf []T, ch <-chan T, max int) []T {
	for len(buf) < max {
		select {
		case j, ok := <-ch:
			if !ok {
				return buf
			}
			buf = append(buf, j)
		default:
			return buf
		}
	}
	return buf
}
