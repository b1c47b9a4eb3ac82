package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL transactions, pipelined. Through database/sql a transaction's
// BEGIN and COMMIT are round trips of their own, and so is the statement
// of its queued writes (writes.go): an RTP's acceptance was four (BEGIN,
// the locked read, the writes, COMMIT), and under rtp-flow PostgreSQL's
// backends and their wake-ups took more of the two cores than payd. A
// transaction therefore runs on pgx's own connection, taken from the
// database/sql pool (sql.Conn.Raw), and sends what must come before a
// statement in the statement's round trip: BEGIN is sent with the first
// statement, the queued writes with the next, and at the end the writes
// with COMMIT. An acceptance is two round trips; a transaction whose
// writes are all queued is one.
//
// Since the writes travel with the COMMIT, a write that must affect a
// number of rows is checked by the statement itself (migration 018's
// payd_short_write), which aborts the transaction, and the COMMIT behind it
// with it.

// pgTx is a transaction's connection, whether BEGIN has been sent, and
// the writes queued to go with the next statement (writes.go).
type pgTx struct {
	c     *pgx.Conn
	begun bool
	later writes
}

// rowSet is what a query returns: *sql.Rows, or pgRows.
type rowSet interface {
	Next() bool
	Scan(...any) error
	Close() error
	Err() error
}

// pgTxRun runs f in a transaction on one of the pool's connections.
func (s *Store) pgTxRun(ctx context.Context, f func(*tx) error) error {
	return s.pgConn(ctx, func(c *pgx.Conn) error {
		t := &tx{s: s, pg: &pgTx{c: c}}
		err := t.pg.later.end(f(t))
		if err == nil {
			err = t.commit(ctx)
		}
		if notPrimary(err) {
			// A node that is no primary any more (demoted, or a standby a
			// multi-host URL reached): the connection goes, not back to
			// the pool, so the next one finds the primary.
			t.pg.c.Close(context.WithoutCancel(ctx))
			return err
		}
		if t.pg.c.PgConn().TxStatus() != 'I' {
			// Failed, or its context ended: roll back before the connection
			// goes back to the pool (which would otherwise discard it).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			t.pg.c.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return err
	})
}

// pgConn runs f on pgx's own connection, taken from the database/sql
// pool: it scans rows without database/sql's conversions, and pipelines.
func (s *Store) pgConn(ctx context.Context, f func(*pgx.Conn) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error { return f(dc.(*stdlib.Conn).Conn()) })
}

// step is what the pipeline sends before a statement.
type step uint8

const (
	stepBegin step = 1 << iota
	stepWrites
)

// prelude queues on b BEGIN if it has not been sent, and the queued writes.
func (t *tx) prelude(b *pgx.Batch) step {
	var st step
	if !t.pg.begun {
		b.Queue("BEGIN")
		t.pg.begun = true
		st |= stepBegin
	}
	if q, args := t.pg.later.statement(); q != "" {
		b.Queue(t.s.d.rebind(q), args...)
		st |= stepWrites
	}
	return st
}

// readPrelude reads the results of the prelude's steps. An error of the
// writes stays with the transaction (tx.end).
func (t *tx) readPrelude(br pgx.BatchResults, st step) error {
	if st&stepBegin != 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	if st&stepWrites != 0 {
		if _, err := br.Exec(); err != nil {
			return t.pg.later.failed(err)
		}
	}
	return t.pg.later.err
}

// pgExec runs q after its prelude, in one round trip.
func (t *tx) pgExec(ctx context.Context, q string, args []any) (sql.Result, error) {
	r, err := t.pgQuery(ctx, q, args)
	if err != nil {
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return pgResult(r.CommandTag().RowsAffected()), nil
}

// pgQuery runs q after its prelude, in one round trip; the rows hold the
// connection until they are closed.
func (t *tx) pgQuery(ctx context.Context, q string, args []any) (pgRows, error) {
	if t.pg.later.err != nil {
		return pgRows{}, t.pg.later.err
	}
	b := &pgx.Batch{}
	st := t.prelude(b)
	if st == 0 {
		r, err := t.pg.c.Query(ctx, q, args...)
		if err != nil {
			return pgRows{}, err
		}
		return pgRows{Rows: r}, nil
	}
	b.Queue(q, args...)
	br := t.pg.c.SendBatch(ctx, b)
	if err := t.readPrelude(br, st); err != nil {
		br.Close()
		return pgRows{}, err
	}
	r, err := br.Query()
	if err != nil {
		br.Close()
		return pgRows{}, err
	}
	return pgRows{Rows: r, br: br}, nil
}

// commit sends the queued writes and COMMIT, with BEGIN if nothing was
// sent before: one round trip.
func (t *tx) commit(ctx context.Context) error {
	if t.pg.later.err != nil {
		return t.pg.later.err
	}
	if !t.pg.begun && len(t.pg.later.q) == 0 {
		return nil // nothing was read or written
	}
	b := &pgx.Batch{}
	st := t.prelude(b)
	b.Queue("COMMIT")
	br := t.pg.c.SendBatch(ctx, b)
	defer br.Close()
	if err := t.readPrelude(br, st); err != nil {
		return err
	}
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: the transaction ended with %s", tag)
	}
	return nil
}

// pgResult is an exec's result: the rows it affected.
type pgResult int64

func (r pgResult) RowsAffected() (int64, error) { return int64(r), nil }

func (pgResult) LastInsertId() (int64, error) {
	return 0, errors.New("LastInsertId is not supported by PostgreSQL")
}

// pgRows are a query's rows and, when it was pipelined, the batch it came
// in, closed with them.
type pgRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r pgRows) Close() error {
	r.Rows.Close()
	err := r.Rows.Err()
	if r.br != nil {
		if cerr := r.br.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// pgRow is a queryRow's row: Scan reads the first row and closes the rest.
type pgRow struct {
	r   pgRows
	err error
}

func (r pgRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.r.Next() {
		err := r.r.Close()
		if err == nil {
			err = sql.ErrNoRows
		}
		return err
	}
	err := r.r.Scan(dest...)
	if cerr := r.r.Close(); err == nil {
		err = cerr
	}
	return err
}
