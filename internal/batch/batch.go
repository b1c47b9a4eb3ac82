// Package batch is the natural batching payd uses wherever work queues on a
// channel for one consumer: group commit, coalesced reads, the recording of
// callback attempts.
package batch

// Gather is first and whatever else is already queued on ch, up to max, in
// buf's storage. It never waits for a batch to fill: a lone item goes at
// once, and under load what queued meanwhile shares the next batch. A
// closed ch ends the batch.
func Gather[T any](buf []T, first T, ch <-chan T, max int) []T {
	buf = append(buf[:0], first)
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
