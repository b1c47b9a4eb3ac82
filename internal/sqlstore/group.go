package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"payd/internal/batch"
	"payd/internal/sqlstore/sqlite"
)

// Group commit, for SQLite.
//
// SQLite has one writer, and with synchronous=FULL every commit waits for
// an fsync. Serializing use cases through one connection therefore caps
// throughput at one fsync per use case. Instead, concurrent write
// transactions queue for one goroutine that runs a batch of them inside a
// single SQLite transaction, each in a savepoint of its own, and commits
// once: a use case that fails rolls back to its savepoint without touching
// the others, and none of them is acknowledged before the shared commit is
// durable. PostgreSQL, with real concurrent writers, commits each
// transaction on its own.

// maxBatch bounds how many use cases share one commit.
const maxBatch = 128

var errStoreClosed = errors.New("store closed")

type writeJob struct {
	ctx  context.Context
	f    func(*tx) error
	done chan error
}

func (s *Store) groupTx(ctx context.Context, f func(*tx) error) error {
	j := writeJob{ctx: ctx, f: f, done: make(chan error, 1)}
	select {
	case s.jobs <- j:
	case <-s.closed:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done
}

// groupCommitter runs the write transactions, and between them polls
// what the RTP cache needs to know of other connections' commits.
func (s *Store) groupCommitter() {
	defer s.wg.Done()
	poll := time.NewTicker(sqlite.RTPPoll)
	defer poll.Stop()
	s.pollRTPs()
	for {
		var first writeJob
		select {
		case first = <-s.jobs:
		case <-poll.C:
			s.pollRTPs()
			continue
		case <-s.closed:
			return
		}
		b := batch.Gather(nil, first, s.jobs, maxBatch)
		start := time.Now()
		s.runBatch(b)
		s.stats.batches.Add(1)
		s.stats.useCases.Add(int64(len(b)))
		s.stats.busy.Add(int64(time.Since(start)))
		s.wstmts.Prepare(s.w)
	}
}

func (s *Store) runBatch(batch []writeJob) {
	if len(batch) == 1 {
		j := batch[0]
		j.done <- s.soloTx(j.ctx, j.f)
		return
	}
	fail := func(err error) {
		for _, j := range batch {
			j.done <- err
		}
	}
	sqlTx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	t := &tx{s: s, tx: sqlTx, shared: true}
	// A block of payment references a use case drew is undone with its
	// savepoint, and with the whole transaction (payment.go).
	abort := func(err error) {
		sqlTx.Rollback()
		s.refs.forget()
		fail(err)
	}
	results := make([]error, len(batch))
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		// Through t: prepared once, like the use cases' writes (sqlite.WriteStatements).
		if _, err := t.exec(context.Background(), "SAVEPOINT uc"); err != nil {
			abort(fmt.Errorf("savepoint: %w", err))
			return
		}
		t.drewRefs = false
		results[i] = j.f(t)
		undo := "RELEASE uc"
		if results[i] != nil {
			undo = "ROLLBACK TO uc; RELEASE uc"
		}
		if _, err := t.exec(context.Background(), undo); err != nil {
			abort(fmt.Errorf("savepoint: %w", err))
			return
		}
		if results[i] != nil {
			t.undoDraw()
		}
	}
	if err := s.commit(sqlTx); err != nil {
		abort(fmt.Errorf("commit: %w", err))
		return
	}
	for i, j := range batch {
		j.done <- results[i]
	}
}

// commit commits a SQLite write transaction and then settles the RTPs it
// changed in the cache (sqlite/rtpcache.go). The marks to settle are read before
// the commit: once it returns, the connection is free for other writers,
// whose marks must wait for their own transaction's end.
func (s *Store) commit(sqlTx *sql.Tx) error {
	upto := s.rtpc.Marked()
	start := time.Now()
	err := sqlTx.Commit()
	s.stats.committing.Add(int64(time.Since(start)))
	s.rtpc.Settle(upto)
	switch {
	case err == nil:
		s.writesRefused.Store(false)
	case Unavailable(err):
		s.writesRefused.Store(true) // Ping probes until a write succeeds
	}
	return err
}

// writerStats count the group committer's work (SQLite), for the metrics.
type writerStats struct {
	batches, useCases atomic.Int64
	busy, committing  atomic.Int64 // nanoseconds
}

// WriterStats is what SQLite's single writer has done since the store
// opened: transactions committed, use cases they carried, and the time it
// spent running them and in their commits (of which a share of one second
// per second is its utilisation: near 1, writes queue for it).
type WriterStats struct {
	Batches, UseCases int64
	Busy, Committing  time.Duration
	RTPCacheHits      int64 // RTP reads answered from memory (sqlite/rtpcache.go)
}

// WriterStats reports the writer's work; ok is false on PostgreSQL, which
// has no single writer, and without group commit (Options.Plain).
func (s *Store) WriterStats() (st WriterStats, ok bool) {
	if s.jobs == nil {
		return st, false
	}
	return WriterStats{
		Batches: s.stats.batches.Load(), UseCases: s.stats.useCases.Load(),
		Busy: time.Duration(s.stats.busy.Load()), Committing: time.Duration(s.stats.committing.Load()),
		RTPCacheHits: s.rtpc.Hits(),
	}, true
}

// pollRTPs reads data_version on the writer connection for the RTP cache
// (the group committer calls it between transactions).
func (s *Store) pollRTPs() {
	start := time.Now()
	var v int64
	if err := s.w.QueryRow("PRAGMA data_version").Scan(&v); err != nil {
		return // not confirmed: past sqlite.RTPMaxAge the cache is not served
	}
	s.rtpc.Confirm(v, start)
}
