package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Backup writes a consistent copy of a SQLite database to path while it
// serves (VACUUM INTO reads one snapshot; writers go on). path must not
// exist. PostgreSQL is backed up with pg_dump instead.
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.engine != SQLite {
		return errors.New("backup copies SQLite databases; for PostgreSQL use pg_dump (docs/operations.md)")
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup: %s exists", path)
	}
	if _, err := s.w.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// Prune deletes, in batches of at most batch rows, what is older than
// cutoff and no longer needed: delivered callbacks with their attempts, and
// the rails' delivered orders and inbox records. Each batch is its own
// short transaction, so the API never waits for a long delete. It returns
// how many rows it deleted.
func (s *Store) Prune(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	steps := []string{
		`DELETE FROM callback_objects WHERE callback_id IN (SELECT id FROM callbacks WHERE state = 'delivered' AND delivered_at < ?
			AND id IN (SELECT callback_id FROM callback_objects) LIMIT ?)`,
		`DELETE FROM callback_attempts WHERE callback_id IN (SELECT id FROM callbacks WHERE state = 'delivered' AND delivered_at < ?
			AND id IN (SELECT callback_id FROM callback_attempts) LIMIT ?)`,
		`DELETE FROM callbacks WHERE id IN (SELECT id FROM callbacks WHERE state = 'delivered' AND delivered_at < ?
			AND id NOT IN (SELECT callback_id FROM callback_attempts) LIMIT ?)`,
		`DELETE FROM rails_orders WHERE id IN (SELECT id FROM rails_orders WHERE state = 'delivered' AND delivered_at < ? LIMIT ?)`,
		`DELETE FROM rails_inbox WHERE msg_id IN (SELECT msg_id FROM rails_inbox WHERE received_at < ? LIMIT ?)`,
	}
	var total int64
	for _, q := range steps {
		for {
			var n int64
			err := s.inTx(ctx, func(t *tx) error {
				res, err := t.exec(ctx, q, ms(cutoff), batch)
				if err != nil {
					return err
				}
				n, _ = res.RowsAffected()
				return nil
			})
			if err != nil {
				return total, fmt.Errorf("prune: %w", err)
			}
			total += n
			if n < int64(batch) {
				break
			}
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}
