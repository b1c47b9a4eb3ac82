package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Backup writes a consistent copy of a SQLite database to path while it
// serves (VACUUM INTO reads one snapshot; writers go on), readable by its
// owner only. path must not exist. PostgreSQL is backed up with pg_dump
// instead.
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.engine != SQLite {
		return errors.New("backup copies SQLite databases; for PostgreSQL use pg_dump (docs/operations.md)")
	}
	// VACUUM INTO writes into an empty file as it finds it, so the copy
	// gets this file's mode rather than one the umask decides.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("backup: %s exists", path)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f.Close()
	if _, err := s.w.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		os.Remove(path)
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// Prune deletes, in batches of at most batch rows, what is older than
// cutoff and no longer needed: delivered callbacks with their attempts and
// objects, and the rails' delivered orders and inbox records. Each batch is
// its own short transaction, so the API never waits for a long delete, and
// reaches its rows through an index (TestPrunePlansUseIndexes), so a pass
// with nothing to delete reads next to nothing. It returns how many rows it
// deleted.
func (s *Store) Prune(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	at := ms(cutoff)
	steps := []pruneStep{
		{pruneCallbacksQ, []any{at, at, batch}, pruneCallbackRows},
		{pruneOrdersQ, []any{at, batch}, []string{"DELETE FROM rails_orders WHERE id"}},
		{pruneInboxQ, []any{at, batch}, []string{"DELETE FROM rails_inbox WHERE msg_id"}},
	}
	var total int64
	for _, step := range steps {
		for {
			var found, n int64
			err := s.inTx(ctx, func(t *tx) error {
				var err error
				found, n, err = t.prune(ctx, step)
				return err
			})
			if err != nil {
				return total, fmt.Errorf("prune: %w", err)
			}
			total += n
			if found < int64(batch) {
				break
			}
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// A pruneStep finds a batch of rows through an index (find, with args)
// and deletes them by key with each of deletes, children first; each
// delete is completed by idsIn.
type pruneStep struct {
	find    string
	args    []any
	deletes []string
}

// Prune's statements, whose plans TestPrunePlansUseIndexes checks. Delivered
// callbacks are found through callbacks_state (state, created_at): a
// callback is delivered after it is created, so created_at < cutoff bounds
// the range to those that may be old enough.
const (
	pruneCallbacksQ = `SELECT id FROM callbacks WHERE state = 'delivered' AND created_at < ? AND delivered_at < ? LIMIT ?`
	pruneOrdersQ    = `SELECT id FROM rails_orders WHERE state = 'delivered' AND delivered_at < ? LIMIT ?`
	pruneInboxQ     = `SELECT msg_id FROM rails_inbox WHERE received_at < ? LIMIT ?`
)

var pruneCallbackRows = []string{"DELETE FROM callback_objects WHERE callback_id", "DELETE FROM callback_attempts WHERE callback_id",
	"DELETE FROM callbacks WHERE id"}

// prune runs one batch of st and returns how many rows it found and how
// many it deleted in all. On PostgreSQL the rows found are locked first,
// so that a change made meanwhile (a replay makes a delivered callback
// pending) either waits and finds the row gone or keeps it.
func (t *tx) prune(ctx context.Context, st pruneStep) (int64, int64, error) {
	rows, err := t.query(ctx, st.find+t.s.d.skipLocked(), st.args...)
	if err != nil {
		return 0, 0, err
	}
	keys, err := scanAll(rows, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) })
	if err != nil || len(keys) == 0 {
		return 0, 0, err
	}
	in, list, err := t.s.d.idsIn(keys)
	if err != nil {
		return 0, 0, err
	}
	var deleted int64
	for _, q := range st.deletes {
		res, err := t.exec(ctx, q+in, list)
		if err != nil {
			return 0, 0, err
		}
		n, _ := res.RowsAffected()
		deleted += n
	}
	return int64(len(keys)), deleted, nil
}
