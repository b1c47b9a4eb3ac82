package sqlstore

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// Group commit, for SQLite (sqlite.Committer): concurrent use cases share
// one transaction and its commit, each in a savepoint of its own.

// groupTxs are the store's transactions as the group committer runs them.
type groupTxs struct{ s *Store }

func (g groupTxs) Solo(ctx context.Context, f func(*tx) error) error { return g.s.soloTx(ctx, f) }

func (g groupTxs) Begin() (*tx, error) {
	sqlTx, err := g.s.w.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	return &tx{s: g.s, tx: sqlTx, shared: true}, nil
}

// Savepoint and Release go through t: prepared once, like the use cases'
// writes (sqlite.WriteStatements).
func (groupTxs) Savepoint(t *tx) error {
	_, err := t.exec(context.Background(), "SAVEPOINT uc")
	t.drewRefs = false
	return err
}

// Release undoes a failed use case's block of payment references with its
// savepoint (payment.go).
func (groupTxs) Release(t *tx, failed bool) error {
	undo := "RELEASE uc"
	if failed {
		undo = "ROLLBACK TO uc; RELEASE uc"
	}
	if _, err := t.exec(context.Background(), undo); err != nil {
		return err
	}
	if failed {
		t.undoDraw()
	}
	return nil
}

func (g groupTxs) Commit(t *tx) error { return g.s.commit(t.tx) }

// Rollback undoes the references the batch drew with the transaction.
func (g groupTxs) Rollback(t *tx) {
	t.tx.Rollback()
	g.s.refs.forget()
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

// writerStats count the time SQLite's writer spent committing, for the
// metrics (the group committer counts the rest).
type writerStats struct {
	committing atomic.Int64 // nanoseconds
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
	if s.group == nil {
		return st, false
	}
	st.Batches, st.UseCases, st.Busy = s.group.Stats()
	st.Committing, st.RTPCacheHits = time.Duration(s.stats.committing.Load()), s.rtpc.Hits()
	return st, true
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
