package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Writes sent together. On PostgreSQL every statement of a transaction is
// a round trip, and an RTP's acceptance was ten of them (begin, the locked
// read, the merchant, the RTP's update, its event, the payment's reference,
// the payment, the callback, its objects, commit): a profile of the callback
// flow showed PostgreSQL's backends spending more of the machine on those
// round trips than payd did on everything else. The writes whose only
// result is whether they happened are queued with tx.write instead, and go
// to the server as one statement of data-modifying WITH clauses just before
// the transaction's next statement or its commit.
//
// Writes queued together see the same snapshot, so none may depend on
// another's effect (a foreign key between them is fine: it is checked at
// the statement's end). A statement that reads what a queued write wrote is
// sent after it, because every other statement sends the queue first.
// SQLite runs in process, where a statement costs no round trip: there a
// queued write runs at once.

// writes is a transaction's queue and the first error sending it met.
type writes struct {
	q   []queuedWrite
	err error
}

type queuedWrite struct {
	q     string
	args  []any
	want  int64 // rows it must affect, or -1
	short error // returned when it affects another number
}

// write runs q (an INSERT, UPDATE or DELETE without RETURNING), or queues
// it on PostgreSQL. With want >= 0 the write must affect exactly want rows,
// or the transaction ends with short.
func (t *tx) write(ctx context.Context, want int64, short error, q string, args ...any) error {
	if t.later == nil || t.s.engine != Postgres {
		res, err := t.exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if want >= 0 {
			if n, _ := res.RowsAffected(); n != want {
				return short
			}
		}
		return nil
	}
	if t.later.err != nil {
		return t.later.err
	}
	t.later.q = append(t.later.q, queuedWrite{q, args, want, short})
	return nil
}

// flush sends the queued writes. An error stays with the transaction.
func (t *tx) flush(ctx context.Context) error {
	w := t.later
	if w == nil {
		return nil
	}
	if w.err != nil || len(w.q) == 0 {
		return w.err
	}
	qs := w.q
	w.q = nil
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, q := range qs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("w" + strconv.Itoa(i) + " AS (" + q.q + " RETURNING 1)")
		args = append(args, q.args...)
	}
	b.WriteString(" SELECT ")
	counts := make([]int64, len(qs))
	dest := make([]any, len(qs))
	for i := range qs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(SELECT count(*) FROM w" + strconv.Itoa(i) + ")")
		dest[i] = &counts[i]
	}
	if err := t.tx.QueryRowContext(ctx, t.s.rebind(b.String()), args...).Scan(dest...); err != nil {
		w.err = fmt.Errorf("write: %w", err)
		return w.err
	}
	for i, q := range qs {
		if q.want >= 0 && counts[i] != q.want {
			w.err = q.short
			return w.err
		}
	}
	return nil
}

// end is what a transaction whose function returned err ends with: the
// queued writes are sent, and their error, which came first, wins over
// err (a statement after a failed one fails too, for that reason only).
func (t *tx) end(ctx context.Context, err error) error {
	if t.later == nil {
		return err
	}
	if err == nil {
		return t.flush(ctx)
	}
	if t.later.err != nil {
		return t.later.err
	}
	return err
}
