package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"payd"
)

const callbackCols = `id, merchant_id, event, subject_id, url, body, ts, signature, state, attempts,
	schedule_start, next_attempt_at, created_at, delivered_at, last_status, last_error, COALESCE(object_id, subject_id)`

func scanCallback(sc scanner) (*payd.Callback, error) {
	var c payd.Callback
	var event, body, state string
	var next, created int64
	var delivered, lastStatus sql.NullInt64
	var lastErr sql.NullString
	if err := sc.Scan(&c.ID, &c.MerchantID, &event, &c.SubjectID, &c.URL, &body, &c.Timestamp, &c.Signature, &state,
		&c.Attempts, &c.ScheduleStart, &next, &created, &delivered, &lastStatus, &lastErr, &c.ObjectID); err != nil {
		return nil, notFound(err)
	}
	c.Event, c.Body, c.State = payd.Event(event), []byte(body), payd.CallbackState(state)
	c.NextAttemptAt, c.CreatedAt, c.DeliveredAt = payd.UnixMilli(next), payd.UnixMilli(created), fromNullMS(delivered)
	c.LastStatus, c.LastError = int(lastStatus.Int64), lastErr.String
	return &c, nil
}

// insertCallback queues a callback in the outbox, inside the transaction of
// the change that causes it, leased to this instance when callbacks are
// handed, for the caller to hand it to the instance's delivery after the
// commit (handover.go).
func (t *tx) insertCallback(ctx context.Context, c *payd.Callback) error {
	owner, until := leaseArgs(t.s.callbackLease(c))
	err := t.write(ctx, -1, nil, `INSERT INTO callbacks (id, merchant_id, event, subject_id, object_id, url, body, ts, signature, state,
		attempts, next_attempt_at, created_at, lease_owner, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)`,
		c.ID, c.MerchantID, string(c.Event), c.SubjectID, nullStr(c.ObjectID), c.URL, string(c.Body), c.Timestamp, c.Signature,
		ms(c.NextAttemptAt), ms(c.CreatedAt), owner, until)
	if err != nil {
		return fmt.Errorf("queue callback: %w", err)
	}
	objects := c.Objects
	if len(objects) == 0 {
		objects = []string{c.SubjectID}
	}
	// One statement for all of them: a round trip each was a tenth of an
	// RTP acceptance's on PostgreSQL.
	q := "INSERT INTO callback_objects (object_id, callback_id) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?), ", len(objects)), ", ") + " ON CONFLICT DO NOTHING"
	args := make([]any, 0, 2*len(objects))
	for _, id := range objects {
		args = append(args, id, c.ID)
	}
	if err := t.write(ctx, -1, nil, q, args...); err != nil {
		return fmt.Errorf("queue callback: %w", err)
	}
	return nil
}

// ClaimCallbacks leases up to limit due callbacks to owner until now+lease.
// A callback leased by another instance is skipped until its lease runs
// out, so no two instances send the same attempt at once.
func (s *Store) ClaimCallbacks(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*payd.Callback, error) {
	var out []*payd.Callback
	err := s.inTx(ctx, func(t *tx) error {
		if err := t.walkInOrder(ctx); err != nil { // as the rails orders' claim (rails.go)
			return fmt.Errorf("claim callbacks: %w", err)
		}
		rows, err := t.query(ctx, `UPDATE callbacks SET lease_owner = ?, lease_until = ?
			WHERE id IN (`+s.dueCallbacksQ(limit)+`)
			RETURNING `+callbackCols, owner, ms(now.Add(lease)), ms(now), ms(now))
		if err != nil {
			return fmt.Errorf("claim callbacks: %w", err)
		}
		out, err = scanAll(rows, scanCallback)
		return err
	})
	if err != nil {
		return nil, err // a claim that did not commit leased nothing
	}
	return out, nil
}

// dueCallbacksQ selects the ids of up to limit due callbacks (arguments:
// now, now), walking the index callbacks_due in its order and stopping at
// limit (as the rails orders' claim, dueOrdersQ). SQLite's planner
// preferred callbacks_state and sorted every pending callback; it is told
// the index by name.
func (s *Store) dueCallbacksQ(limit int) string {
	return `SELECT id FROM ` + s.d.indexedBy("callbacks", "callbacks_due") + ` WHERE state = 'pending' AND next_attempt_at <= ?
				AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at` + rowLimit(limit) + s.d.skipLocked()
}

// ClaimCallbacksAt claims one merchant's callbacks due by its time due (the
// test clock's pass), leased until leaseUntil in real time.
func (s *Store) ClaimCallbacksAt(ctx context.Context, owner, merchantID string, due, realNow, leaseUntil time.Time, limit int) ([]*payd.Callback, error) {
	var out []*payd.Callback
	err := s.inTx(ctx, func(t *tx) error {
		rows, err := t.query(ctx, `UPDATE callbacks SET lease_owner = ?, lease_until = ?
			WHERE id IN (SELECT id FROM callbacks WHERE merchant_id = ? AND state = 'pending' AND next_attempt_at <= ?
				AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at`+rowLimit(limit)+s.d.skipLocked()+`)
			RETURNING `+callbackCols, owner, ms(leaseUntil), merchantID, ms(due), ms(realNow))
		if err != nil {
			return fmt.Errorf("claim callbacks: %w", err)
		}
		out, err = scanAll(rows, scanCallback)
		return err
	})
	if err != nil {
		return nil, err // a claim that did not commit leased nothing
	}
	return out, nil
}

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	Number       int // 1, 2, …
	StartedAt    time.Time
	Duration     time.Duration
	StatusCode   int // 0 when no response
	Error        string
	ResponseBody string // the first 4 KiB of the answer
}

// OK reports whether the attempt delivered the callback: an answer 200
// (spec §6: any other status is a failure).
func (a Attempt) OK() bool { return a.Error == "" && a.StatusCode == 200 }

// RecordAttempt records an attempt made under owner's lease and moves the
// callback on: delivered on success, else pending until next, or failed
// when next is zero (schedule exhausted). It returns payd.ErrConflict when
// the lease was lost meanwhile.
func (s *Store) RecordAttempt(ctx context.Context, c *payd.Callback, owner string, a Attempt, next time.Time) error {
	lost, err := s.RecordAttempts(ctx, owner, []Recorded{{Callback: c, Attempt: a, Next: next}})
	if err == nil && len(lost) > 0 {
		return payd.ErrConflict
	}
	return err
}

// Recorded is one attempt to record: RecordAttempt's arguments.
type Recorded struct {
	Callback *payd.Callback
	Attempt  Attempt
	Next     time.Time
}

// RecordAttempts records several attempts made under owner's leases in
// one transaction (on PostgreSQL one statement for the callbacks, one for
// the attempt log; on SQLite one of each per part, below) and returns the
// indexes of those whose lease was lost meanwhile: nothing of them is
// written.
func (s *Store) RecordAttempts(ctx context.Context, owner string, rs []Recorded) (lost []int, err error) {
	if len(rs) == 0 {
		return nil, nil
	}
	err = s.inTx(ctx, func(t *tx) error {
		lost = lost[:0]
		kept := map[string]bool{}
		for _, p := range s.d.rowParts(len(rs)) {
			if err := s.recordCallbacks(ctx, t, owner, rs[p[0]:p[1]], kept); err != nil {
				return fmt.Errorf("record attempts: %w", err)
			}
		}
		var logged []Recorded
		for i, r := range rs {
			if !kept[r.Callback.ID] {
				lost = append(lost, i)
				continue
			}
			logged = append(logged, r)
		}
		for _, p := range s.d.rowParts(len(logged)) {
			if err := s.logAttempts(ctx, t, owner, logged[p[0]:p[1]]); err != nil {
				return err
			}
		}
		return nil
	})
	return lost, err
}

// recordCallbacks writes the outcome of rs's attempts to their callbacks
// still leased by owner and notes in kept those it wrote.
func (s *Store) recordCallbacks(ctx context.Context, t *tx, owner string, rs []Recorded, kept map[string]bool) error {
	vals := make([]string, 0, len(rs))
	args := make([]any, 0, 7*len(rs)+1)
	for _, r := range rs {
		a := r.Attempt
		state, delivered := payd.CallbackPending, any(nil)
		switch {
		case a.OK():
			state, delivered = payd.CallbackDelivered, ms(a.StartedAt.Add(a.Duration))
		case r.Next.IsZero():
			state = payd.CallbackFailed
		}
		nextMS := ms(r.Next)
		if r.Next.IsZero() {
			nextMS = ms(a.StartedAt)
		}
		vals = append(vals, "(?, ?, CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS TEXT))")
		args = append(args, r.Callback.ID, string(state), a.Number, nextMS, delivered, nullInt(a.StatusCode), nullStr(a.Error))
	}
	rows, err := t.query(ctx, `UPDATE callbacks SET state = v.column2, attempts = v.column3, next_attempt_at = v.column4,
			delivered_at = v.column5, last_status = v.column6, last_error = v.column7, lease_owner = NULL, lease_until = NULL
			FROM (VALUES `+strings.Join(vals, ", ")+`) AS v
			WHERE callbacks.id = v.column1 AND callbacks.lease_owner = ? AND callbacks.state = 'pending'
			RETURNING callbacks.id`, append(args, owner)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		kept[id] = true
	}
	return rows.Err()
}

// logAttempts adds rs's attempts to the attempt log.
func (s *Store) logAttempts(ctx context.Context, t *tx, owner string, rs []Recorded) error {
	ins := make([]string, 0, len(rs))
	args := make([]any, 0, 8*len(rs))
	for _, r := range rs {
		a := r.Attempt
		ins = append(ins, "(?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.Callback.ID, a.Number, ms(a.StartedAt), a.Duration.Milliseconds(),
			nullInt(a.StatusCode), nullStr(a.Error), owner, nullStr(a.ResponseBody))
	}
	_, err := t.exec(ctx, `INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, status_code, error, instance, response_body)
			VALUES `+strings.Join(ins, ", "), args...)
	return err
}

func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

// Callbacks lists callbacks, newest first, optionally in one state.
func (s *Store) Callbacks(ctx context.Context, state payd.CallbackState, limitN int) ([]*payd.Callback, error) {
	var w where
	w.opt("state = ?", string(state))
	rows, err := s.query(ctx, "SELECT "+callbackCols+" FROM callbacks"+w.sql()+" ORDER BY created_at DESC, id DESC"+s.limit(limitN, 0), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list callbacks: %w", err)
	}
	return scanAll(rows, scanCallback)
}

// Callback reads one callback.
func (s *Store) Callback(ctx context.Context, id string) (*payd.Callback, error) {
	return scanCallback(s.queryRow(ctx, "SELECT "+callbackCols+" FROM callbacks WHERE id = ?", id))
}

// CallbackAttempts lists the attempts made for a callback, in order.
func (s *Store) CallbackAttempts(ctx context.Context, id string) ([]Attempt, error) {
	rows, err := s.query(ctx, `SELECT attempt, started_at, duration_ms, status_code, error, response_body FROM callback_attempts
		WHERE callback_id = ? ORDER BY attempt`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		var a Attempt
		var started, dur int64
		var code sql.NullInt64
		var e, body sql.NullString
		if err := rows.Scan(&a.Number, &started, &dur, &code, &e, &body); err != nil {
			return nil, err
		}
		a.StartedAt, a.Duration, a.StatusCode, a.Error = payd.UnixMilli(started), time.Duration(dur)*time.Millisecond, int(code.Int64), e.String
		a.ResponseBody = body.String
		out = append(out, a)
	}
	return out, rows.Err()
}

// ResendCallback makes a failed callback pending again with a fresh
// schedule, due now.
func (s *Store) ResendCallback(ctx context.Context, id string, now time.Time) error {
	err := s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, `UPDATE callbacks SET state = 'pending', schedule_start = attempts, next_attempt_at = ?,
			lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = 'failed'`, ms(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := scanCallback(t.queryRow(ctx, "SELECT "+callbackCols+" FROM callbacks WHERE id = ?", id)); err != nil {
				return err
			}
			return payd.ErrConflict
		}
		return nil
	})
	if err == nil {
		s.queuedCallbacks()
	}
	return err
}

// PendingCallbacks counts callbacks waiting for delivery.
func (s *Store) PendingCallbacks(ctx context.Context) (int, error) {
	return s.count(ctx, "SELECT COUNT(*) FROM callbacks WHERE state = 'pending'", nil)
}

// CallbackFilter selects a merchant's callbacks for the callback log.
type CallbackFilter struct {
	MerchantID             string
	State                  payd.CallbackState // "" for all
	Event                  string
	ObjectID               string // any id the callback is about
	CreatedFrom, CreatedTo *time.Time
	Desc                   bool // newest first
	Count, Offset          int
}

// MerchantCallbacks lists a merchant's callbacks matching f and counts all matches.
func (s *Store) MerchantCallbacks(ctx context.Context, f CallbackFilter) ([]*payd.Callback, int, error) {
	var w where
	w.add("merchant_id = ?", f.MerchantID)
	w.opt("state = ?", string(f.State))
	w.opt("event = ?", f.Event)
	if f.ObjectID != "" {
		w.add("id IN (SELECT callback_id FROM callback_objects WHERE object_id = ?)", f.ObjectID)
	}
	w.timeRange("created_at", f.CreatedFrom, f.CreatedTo)
	total, err := s.count(ctx, "SELECT COUNT(*) FROM callbacks"+w.sql(), w.args)
	if err != nil {
		return nil, 0, fmt.Errorf("count callbacks: %w", err)
	}
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	rows, err := s.query(ctx, "SELECT "+callbackCols+" FROM callbacks"+w.sql()+" ORDER BY created_at"+dir+", id"+dir+s.limit(f.Count, f.Offset), w.args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list callbacks: %w", err)
	}
	out, err := scanAll(rows, scanCallback)
	return out, total, err
}

// MerchantCallback reads one of the merchant's callbacks.
func (s *Store) MerchantCallback(ctx context.Context, merchantID, id string) (*payd.Callback, error) {
	return scanCallback(s.queryRow(ctx, "SELECT "+callbackCols+" FROM callbacks WHERE id = ? AND merchant_id = ?", id, merchantID))
}

// ReplayCallback queues one of the merchant's callbacks again, whatever its
// state: due now with a fresh schedule, the same body (and body
// signature), a fresh X-Signature-Timestamp and X-Signature.
func (s *Store) ReplayCallback(ctx context.Context, m *payd.Merchant, id string, now time.Time) (*payd.Callback, error) {
	var c *payd.Callback
	err := s.inTx(ctx, func(t *tx) error {
		var err error
		if c, err = scanCallback(t.queryRow(ctx, "SELECT "+callbackCols+" FROM callbacks WHERE id = ? AND merchant_id = ?"+s.d.forUpdate(), id, m.ID)); err != nil {
			return err
		}
		c.Resign(m, now)
		c.State, c.ScheduleStart, c.NextAttemptAt = payd.CallbackPending, c.Attempts, now
		_, err = t.exec(ctx, `UPDATE callbacks SET state = 'pending', schedule_start = attempts, next_attempt_at = ?, ts = ?, signature = ?,
			lease_owner = NULL, lease_until = NULL WHERE id = ?`, ms(now), c.Timestamp, c.Signature, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.queuedCallbacks()
	return c, nil
}
