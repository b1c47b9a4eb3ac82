package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations
var migrations embed.FS

// migrationLock is the PostgreSQL advisory lock key that serializes
// instances migrating at the same time.
const migrationLock = 0x70617964 // "payd"

type migration struct {
	version int
	name    string
	sql     string
}

func (s *Store) migrations() ([]migration, error) {
	dir := "migrations/" + string(s.engine)
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate applies the migrations the database has not seen yet, each in its
// own transaction, and returns the names of those it applied. On PostgreSQL
// it holds an advisory lock, so instances starting together migrate once.
func (s *Store) Migrate(ctx context.Context, now time.Time) ([]string, error) {
	ms, err := s.migrations()
	if err != nil {
		return nil, err
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if s.engine == Postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
			return nil, fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		applied[v] = true
	}
	rows.Close()
	var done []string
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := s.apply(ctx, conn, m, now); err != nil {
			return done, err
		}
		done = append(done, m.name)
	}
	return done, nil
}

func (s *Store) apply(ctx context.Context, conn *sql.Conn, m migration, now time.Time) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", m.name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migrate %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
		m.version, m.name, now.UnixMilli()); err != nil {
		return fmt.Errorf("migrate %s: %w", m.name, err)
	}
	return tx.Commit()
}
