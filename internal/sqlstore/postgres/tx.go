package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Transactions, pipelined. Through database/sql a transaction's BEGIN and
// COMMIT are round trips of their own, and so is the statement of its
// queued writes (writes.go): an RTP's acceptance was four (BEGIN, the
// locked read, the writes, COMMIT), and under rtp-flow PostgreSQL's
// backends and their wake-ups took more of the two cores than payd. A
// transaction therefore runs on pgx's own connection, taken from the
// database/sql pool (sql.Conn.Raw), and sends what must come before a
// statement in the statement's round trip: BEGIN is sent with the first
// statement, the queued writes with the next, and at the end the writes
// with COMMIT. An acceptance is two round trips; a transaction whose
// writes are all queued is one.
//
// Since the writes travel with the COMMIT, a write that must affect a
// number of rows is checked by the statement itself (the store's
// migration 018, payd_short_write), which aborts the transaction, and the
// COMMIT behind it with it.

// Tx is a transaction on one connection: whether BEGIN has been sent, and
// the writes queued to go with the next statement.
type Tx struct {
	c      *pgx.Conn
	rebind func(string) string // ? placeholders to $n, for the queued writes' statement
	begun  bool
	later  writes
}

// NewTx starts a transaction on c; nothing is sent until its first
// statement or Commit. rebind turns the queued writes' statement, written
// with ? placeholders, into PostgreSQL's.
func NewTx(c *pgx.Conn, rebind func(string) string) *Tx { return &Tx{c: c, rebind: rebind} }

// step is what the pipeline sends before a statement.
type step uint8

const (
	stepBegin step = 1 << iota
	stepWrites
)

// prelude queues on b BEGIN if it has not been sent, and the queued writes.
func (t *Tx) prelude(b *pgx.Batch) step {
	var st step
	if !t.begun {
		b.Queue("BEGIN")
		t.begun = true
		st |= stepBegin
	}
	if q, args := t.later.statement(); q != "" {
		b.Queue(t.rebind(q), args...)
		st |= stepWrites
	}
	return st
}

// readPrelude reads the results of the prelude's steps. An error of the
// writes stays with the transaction (End).
func (t *Tx) readPrelude(br pgx.BatchResults, st step) error {
	if st&stepBegin != 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	if st&stepWrites != 0 {
		if _, err := br.Exec(); err != nil {
			return t.later.failed(err)
		}
	}
	return t.later.err
}

// Exec runs q (with $n placeholders) after its prelude, in one round trip.
func (t *Tx) Exec(ctx context.Context, q string, args []any) (sql.Result, error) {
	r, err := t.Query(ctx, q, args)
	if err != nil {
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return Result(r.CommandTag().RowsAffected()), nil
}

// Query runs q (with $n placeholders) after its prelude, in one round
// trip; the rows hold the connection until they are closed.
func (t *Tx) Query(ctx context.Context, q string, args []any) (Rows, error) {
	if t.later.err != nil {
		return Rows{}, t.later.err
	}
	b := &pgx.Batch{}
	st := t.prelude(b)
	if st == 0 {
		r, err := t.c.Query(ctx, q, args...)
		if err != nil {
			return Rows{}, err
		}
		return Rows{Rows: r}, nil
	}
	b.Queue(q, args...)
	br := t.c.SendBatch(ctx, b)
	if err := t.readPrelude(br, st); err != nil {
		br.Close()
		return Rows{}, err
	}
	r, err := br.Query()
	if err != nil {
		br.Close()
		return Rows{}, err
	}
	return Rows{Rows: r, br: br}, nil
}

// QueryRow is Query's first row: its Scan returns the error of the writes
// sent before it, which also stays with the transaction (End).
func (t *Tx) QueryRow(ctx context.Context, q string, args []any) Row {
	r, err := t.Query(ctx, q, args)
	return Row{r: r, err: err}
}

// Write queues q (an INSERT, UPDATE or DELETE without RETURNING, with ?
// placeholders) to go with the transaction's next statement or its
// COMMIT. With want >= 0 it must affect exactly want rows, or the
// transaction ends with short.
func (t *Tx) Write(q string, args []any, want int64, short error) error {
	if t.later.err != nil {
		return t.later.err
	}
	t.later.q = append(t.later.q, queuedWrite{q, args, want, short})
	return nil
}

// Queued is how many writes wait for the next round trip.
func (t *Tx) Queued() int { return len(t.later.q) }

// End is what a transaction whose function returned err ends with: an
// error of the queued writes, which came first, wins over err (a statement
// after a failed one fails too, for that reason only).
func (t *Tx) End(err error) error {
	if err == nil || t.later.err == nil {
		return err
	}
	return t.later.err
}

// Commit sends the queued writes and COMMIT, with BEGIN if nothing was
// sent before: one round trip.
func (t *Tx) Commit(ctx context.Context) error {
	if t.later.err != nil {
		return t.later.err
	}
	if !t.begun && len(t.later.q) == 0 {
		return nil // nothing was read or written
	}
	b := &pgx.Batch{}
	st := t.prelude(b)
	b.Queue("COMMIT")
	br := t.c.SendBatch(ctx, b)
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
