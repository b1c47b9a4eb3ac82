package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Writes sent together. On PostgreSQL every statement of a transaction is
// a round trip, and an RTP's acceptance was ten of them (begin, the locked
// read, the merchant, the RTP's update, its event, the payment's reference,
// the payment, the callback, its objects, commit): a profile of the callback
// flow showed PostgreSQL's backends spending more of the machine on those
// round trips than payd did on everything else. The writes whose only
// result is whether they happened are queued with Tx.Write instead, and go
// to the server as one statement of data-modifying WITH clauses in the
// round trip of the transaction's next statement or of its COMMIT
// (tx.go).
//
// Writes queued together see the same snapshot, so none may depend on
// another's effect (a foreign key between them is fine: it is checked at
// the statement's end). A statement that reads what a queued write wrote is
// sent after it, because every other statement sends the queue first.
// SQLite runs in process, where a statement costs no round trip: there
// the store runs a queued write at once.

// writes is a transaction's queue and the first error sending it met.
type writes struct {
	q    []queuedWrite
	sent []queuedWrite // the statement in flight (failed)
	err  error
}

type queuedWrite struct {
	q     string
	args  []any
	want  int64 // rows it must affect, or -1
	short error // returned when it affects another number
}

// statement is the queued writes as one statement, and empties the queue:
// "" when none are queued. A write that must affect a number of rows fails
// the statement otherwise (payd_short_write, the store's migration 018), so that a
// COMMIT sent behind it finds the transaction aborted.
func (w *writes) statement() (string, []any) {
	if len(w.q) == 0 {
		return "", nil
	}
	w.sent, w.q = w.q, nil
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, q := range w.sent {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("w" + strconv.Itoa(i) + " AS (" + q.q + " RETURNING 1)")
		args = append(args, q.args...)
	}
	b.WriteString(" SELECT 0")
	for i, q := range w.sent {
		if q.want >= 0 {
			n := strconv.Itoa(i)
			b.WriteString(", CASE WHEN (SELECT count(*) FROM w" + n + ") = " + strconv.FormatInt(q.want, 10) +
				" THEN 0 ELSE payd_short_write(" + n + ") END")
		}
	}
	return b.String(), args
}

// failed records the error the statement of the writes sent last met: the
// short error of the write that affected another number of rows, or err.
func (w *writes) failed(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == shortWriteCode {
		if i, cerr := strconv.Atoi(strings.TrimPrefix(pe.Message, shortWriteMessage)); cerr == nil && i < len(w.sent) {
			w.err = w.sent[i].short
			return w.err
		}
	}
	w.err = fmt.Errorf("write: %w", err)
	return w.err
}

// payd_short_write (the store's migration 018) raises this SQLSTATE, with this
// message before the write's position.
const (
	shortWriteCode    = "PD001"
	shortWriteMessage = "payd short write "
)
