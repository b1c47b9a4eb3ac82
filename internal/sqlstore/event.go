package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"payd"
)

// event records one state change in the transaction making it; the cause
// comes from ctx. A change to the same status records nothing.
func (t *tx) event(ctx context.Context, merchantID, object, id, from, to string, at time.Time) error {
	if from == to {
		return nil
	}
	err := t.write(ctx, -1, nil, "INSERT INTO events (merchant_id, object, object_id, from_status, to_status, at, cause) VALUES (?, ?, ?, ?, ?, ?, ?)",
		merchantID, object, id, from, to, ms(at), string(payd.CauseOf(ctx)))
	if err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	return nil
}

// transitions runs q, an UPDATE moving rows of object from one status to
// another that ends in "RETURNING id, merchant_id, updated_at", and
// records an event for every row it moved. It returns how many.
func (t *tx) transitions(ctx context.Context, object, from, to, q string, args ...any) (int64, error) {
	ids, err := t.transitionsOf(ctx, object, from, to, q, args...)
	return int64(len(ids)), err
}

// transitionsOf is transitions, giving the ids of the rows it moved.
func (t *tx) transitionsOf(ctx context.Context, object, from, to, q string, args ...any) ([]string, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	type moved struct {
		id, merchant string
		at           int64
	}
	var all []moved
	for rows.Next() {
		var m moved
		if err := rows.Scan(&m.id, &m.merchant, &m.at); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, len(all))
	for i, m := range all {
		ids[i] = m.id
	}
	cause := string(payd.CauseOf(ctx))
	const per = 500
	for len(all) > 0 {
		chunk := all[:min(per, len(all))]
		all = all[len(chunk):]
		var b strings.Builder
		b.WriteString("INSERT INTO events (merchant_id, object, object_id, from_status, to_status, at, cause) VALUES ")
		vals := make([]any, 0, 7*len(chunk))
		for i, m := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			vals = append(vals, m.merchant, object, m.id, from, to, m.at, cause)
		}
		if _, err := t.exec(ctx, b.String(), vals...); err != nil {
			return nil, fmt.Errorf("record events: %w", err)
		}
	}
	return ids, nil
}

const changeCols = "id, merchant_id, object, object_id, from_status, to_status, at, cause"

func scanChange(sc scanner) (*payd.Change, error) {
	var e payd.Change
	var at int64
	var cause string
	if err := sc.Scan(&e.ID, &e.MerchantID, &e.Object, &e.ObjectID, &e.From, &e.To, &at, &cause); err != nil {
		return nil, err
	}
	e.At, e.Cause = payd.UnixMilli(at), payd.Cause(cause)
	return &e, nil
}

// Changes are the merchant's recorded state changes of the given objects,
// oldest first.
func (s *Store) Changes(ctx context.Context, merchantID string, objectIDs ...string) ([]*payd.Change, error) {
	if len(objectIDs) == 0 {
		return nil, nil
	}
	q := "SELECT " + changeCols + " FROM events WHERE merchant_id = ? AND object_id IN (?" + strings.Repeat(", ?", len(objectIDs)-1) + ") ORDER BY id"
	args := []any{merchantID}
	for _, id := range objectIDs {
		args = append(args, id)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	return scanAll(rows, scanChange)
}

// RecentChanges are the merchant's latest state changes, newest first.
func (s *Store) RecentChanges(ctx context.Context, merchantID string, limit int) ([]*payd.Change, error) {
	rows, err := s.query(ctx, "SELECT "+changeCols+" FROM events WHERE merchant_id = ? ORDER BY id DESC LIMIT ?", merchantID, limit)
	if err != nil {
		return nil, fmt.Errorf("recent events: %w", err)
	}
	return scanAll(rows, scanChange)
}
