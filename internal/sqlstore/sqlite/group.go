package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"payd/internal/batch"
)

// Group commit. SQLite has one writer, and with synchronous=FULL every
// commit waits for an fsync. Serializing use cases through one connection
// therefore caps throughput at one fsync per use case. Instead, concurrent
// write transactions queue for one goroutine that runs a batch of them
// inside a single SQLite transaction, each in a savepoint of its own, and
// commits once: a use case that fails rolls back to its savepoint without
// touching the others, and none of them is acknowledged before the shared
// commit is durable. PostgreSQL, with real concurrent writers, commits
// each transaction on its own.

// MaxBatch bounds how many use cases share one commit.
const MaxBatch = 128

// ErrClosed is the error of a use case submitted after the store closed.
var ErrClosed = errors.New("store closed")

// Transactions are what the group committer runs use cases in: the
// store's transactions, T.
type Transactions[T any] interface {
	// Solo runs a batch of one in a transaction of its own.
	Solo(ctx context.Context, f func(T) error) error
	// Begin starts a transaction the batch shares.
	Begin() (T, error)
	// Savepoint opens a use case's savepoint.
	Savepoint(t T) error
	// Release closes it: kept, or rolled back to when the use case failed
	// (with whatever the use case did beside the database).
	Release(t T, failed bool) error
	// Commit commits the shared transaction; Rollback rolls it back.
	Commit(t T) error
	Rollback(t T)
}

// Committer runs use cases in shared transactions, one batch at a time.
type Committer[T any] struct {
	txs    Transactions[T]
	jobs   chan job[T]
	closed <-chan struct{}
	// Between runs after each batch, while no transaction is open.
	between func()

	batches, useCases atomic.Int64
	busy              atomic.Int64 // nanoseconds
}

type job[T any] struct {
	ctx  context.Context
	f    func(T) error
	done chan error
}

// NewCommitter is a committer over txs that stops when closed is closed;
// between runs after each batch.
func NewCommitter[T any](txs Transactions[T], closed <-chan struct{}, between func()) *Committer[T] {
	return &Committer[T]{txs: txs, jobs: make(chan job[T]), closed: closed, between: between}
}

// Do runs f in the next batch and returns its outcome once the batch has
// committed (or failed).
func (c *Committer[T]) Do(ctx context.Context, f func(T) error) error {
	j := job[T]{ctx: ctx, f: f, done: make(chan error, 1)}
	select {
	case c.jobs <- j:
	case <-c.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done
}

// Run takes batches until closed, and calls idle every idleEvery between
// them.
func (c *Committer[T]) Run(idle func(), idleEvery time.Duration) {
	tick := time.NewTicker(idleEvery)
	defer tick.Stop()
	idle()
	for {
		var first job[T]
		select {
		case first = <-c.jobs:
		case <-tick.C:
			idle()
			continue
		case <-c.closed:
			return
		}
		b := batch.Gather(nil, first, c.jobs, MaxBatch)
		start := time.Now()
		c.run(b)
		c.batches.Add(1)
		c.useCases.Add(int64(len(b)))
		c.busy.Add(int64(time.Since(start)))
		c.between()
	}
}

// RunBatch runs fs as one batch, as Run does use cases that queued
// together, and returns each one's outcome.
func (c *Committer[T]) RunBatch(ctx []context.Context, fs []func(T) error) []error {
	b := make([]job[T], len(fs))
	for i := range fs {
		b[i] = job[T]{ctx: ctx[i], f: fs[i], done: make(chan error, 1)}
	}
	c.run(b)
	out := make([]error, len(b))
	for i, j := range b {
		out[i] = <-j.done
	}
	return out
}

func (c *Committer[T]) run(b []job[T]) {
	if len(b) == 1 {
		j := b[0]
		j.done <- c.txs.Solo(j.ctx, j.f)
		return
	}
	fail := func(err error) {
		for _, j := range b {
			j.done <- err
		}
	}
	t, err := c.txs.Begin()
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	abort := func(err error) {
		c.txs.Rollback(t)
		fail(err)
	}
	results := make([]error, len(b))
	for i, j := range b {
		if err := j.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if err := c.txs.Savepoint(t); err != nil {
			abort(fmt.Errorf("savepoint: %w", err))
			return
		}
		results[i] = j.f(t)
		if err := c.txs.Release(t, results[i] != nil); err != nil {
			abort(fmt.Errorf("savepoint: %w", err))
			return
		}
	}
	if err := c.txs.Commit(t); err != nil {
		abort(fmt.Errorf("commit: %w", err))
		return
	}
	for i, j := range b {
		j.done <- results[i]
	}
}

// Stats are the committer's work so far: batches committed, the use cases
// they carried, and the time it spent running them.
func (c *Committer[T]) Stats() (batches, useCases int64, busy time.Duration) {
	return c.batches.Load(), c.useCases.Load(), time.Duration(c.busy.Load())
}
