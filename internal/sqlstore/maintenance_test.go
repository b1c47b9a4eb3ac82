package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestPruneMigrationKeepsObjects: on SQLite, 021 rebuilds callback_objects
// without a rowid; the object rows written before it are all there after
// it, found by object and by callback, and a retention pass then deletes
// an old delivered callback with its objects and attempts.
func TestPruneMigrationKeepsObjects(t *testing.T) {
	ctx := context.Background()
	s, err := Open("sqlite:" + filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Every migration but 021 first (and 023, 026 and 029, which rebuild
	// rails_orders with the index 021 creates, so cannot run before 021, and
	// 031, which alters 023's card_sessions).
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	exec(`INSERT INTO schema_migrations VALUES (21, 'held back', 0), (23, 'held back', 0), (26, 'held back', 0), (29, 'held back', 0), (31, 'held back', 0)`)
	if _, err := s.Migrate(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	insertMerchants(t, s, []string{"m"})
	old, recent := int64(1_000), int64(9_000_000)
	for _, c := range []struct {
		id      string
		created int64
		objects []string
	}{{"cb-old", old, []string{"rtp-1", "pay-1"}}, {"cb-recent", recent, []string{"rtp-2", "pay-2", "ext-2"}}} {
		exec(`INSERT INTO callbacks (id, merchant_id, event, subject_id, url, body, ts, signature, state, next_attempt_at, created_at, delivered_at)
			VALUES (?, 'm', 'rtp.accepted', ?, 'http://x', '{}', 0, 's', 'delivered', 0, ?, ?)`, c.id, c.objects[1], c.created, c.created+10)
		exec(`INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, status_code, instance) VALUES (?, 1, ?, 1, 200, 'i')`, c.id, c.created)
		for _, o := range c.objects {
			exec(`INSERT INTO callback_objects (object_id, callback_id) VALUES (?, ?)`, o, c.id)
		}
	}
	exec(`DELETE FROM schema_migrations WHERE version = 21`)
	if applied, err := s.Migrate(ctx, time.Now()); err != nil || len(applied) != 1 {
		t.Fatalf("Migrate = %v, %v; want 021 alone", applied, err)
	}
	count := func(q string, args ...any) (n int) {
		t.Helper()
		if err := s.w.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM callback_objects`); n != 5 {
		t.Fatalf("%d object rows after 021, want 5", n)
	}
	if n := count(`SELECT COUNT(*) FROM callback_objects WHERE object_id = 'ext-2' AND callback_id = 'cb-recent'`); n != 1 {
		t.Errorf("ext-2 finds %d callbacks, want 1", n)
	}
	if n := count(`SELECT COUNT(*) FROM callback_objects WHERE callback_id = 'cb-old'`); n != 2 {
		t.Errorf("cb-old has %d object rows, want 2", n)
	}
	if _, err := s.w.ExecContext(ctx, `SELECT rowid FROM callback_objects`); err == nil {
		t.Error("callback_objects still has a rowid")
	}
	n, err := s.Prune(ctx, time.UnixMilli(5_000_000), 10)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 { // the old callback, its attempt and its two object rows
		t.Errorf("pruned %d rows, want 4", n)
	}
	if c, o, a := count(`SELECT COUNT(*) FROM callbacks`), count(`SELECT COUNT(*) FROM callback_objects`),
		count(`SELECT COUNT(*) FROM callback_attempts`); c != 1 || o != 3 || a != 1 {
		t.Errorf("left %d callbacks, %d object rows, %d attempts; want the recent one's 1, 3, 1", c, o, a)
	}
}
