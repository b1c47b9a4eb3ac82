package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"payd/internal/batch"
)

// Coalesced work. A statement costs PostgreSQL far more (a round trip, a
// backend wake-up, an executor start) than a row, so concurrent work of
// one kind (the store's RTP reads by id, its RTP inserts) queues for a few
// workers, and each serves whatever has queued, at most CoalesceMax, with
// one statement. Work alone is served at once, so an idle server adds no
// delay; under load, the work that arrives while a statement runs shares
// the next one.

// CoalesceMax is the most work one statement serves.
const CoalesceMax = 64

// ErrClosed is the error of work queued, or waited for, after the store
// closed.
var ErrClosed = errors.New("store closed")

// Coalescer queues work for a few workers; each takes whatever has queued
// and serves it at once.
type Coalescer[J any] struct {
	workers int
	serve   func([]J)
	closed  <-chan struct{}
	queue   chan J
	once    sync.Once
	// waveMax bounds a worker's wait for the rest of a wave (batch.Wave):
	// as many as its last batch held, for no longer than that batch's
	// statement took nor waveMax. 0: no wait, as batch.Gather.
	waveMax time.Duration
	// Statements counts the statements that served the work (serve adds
	// them).
	Statements atomic.Int64
}

// Init makes c serve with serve on workers goroutines, started on first
// use, until closed is closed.
func (c *Coalescer[J]) Init(workers int, waveMax time.Duration, closed <-chan struct{}, serve func([]J)) {
	c.workers, c.waveMax, c.closed, c.serve = workers, waveMax, closed, serve
}

// On says whether c serves (Init was called).
func (c *Coalescer[J]) On() bool { return c.serve != nil }

// Enqueue queues j unless ctx ends or the store closes first.
func (c *Coalescer[J]) Enqueue(ctx context.Context, j J) error {
	c.once.Do(func() {
		c.queue = make(chan J, CoalesceMax*c.workers)
		for i := 0; i < c.workers; i++ {
			go c.run()
		}
	})
	select {
	case c.queue <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return ErrClosed
	}
}

func (c *Coalescer[J]) run() {
	pending := make([]J, 0, CoalesceMax)
	var took time.Duration // the last batch's statement
	for {
		last := len(pending) // the last batch's size
		var first J
		select {
		case first = <-c.queue:
		case <-c.closed:
			return
		}
		pending = batch.Wave(pending, first, c.queue, CoalesceMax, last, min(took, c.waveMax))
		start := time.Now()
		c.serve(pending)
		took = time.Since(start)
	}
}
