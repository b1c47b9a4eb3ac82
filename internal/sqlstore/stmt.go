package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps prepared read statements by query text. On SQLite,
// database/sql otherwise prepares (parses and plans) every query anew,
// which profiling showed to be a third of the CPU of a read. PostgreSQL's
// driver caches statements by itself, so the cache is used on SQLite only.
// List queries vary with their filters and paging, so the cache stops
// growing at maxStmts distinct statements and the rest run unprepared.
// Writes are not cached: preparing on the one-connection writer pool while
// a transaction holds it would deadlock, and group commit already spreads
// their cost.
type stmtCache struct {
	mu sync.Mutex
	m  map[stmtKey]*sql.Stmt
}

type stmtKey struct {
	db *sql.DB
	q  string
}

const maxStmts = 512

// get returns the prepared statement for q on db, preparing it once, or
// nil when q should run unprepared.
func (c *stmtCache) get(ctx context.Context, s *Store, db *sql.DB, q string) *sql.Stmt {
	if s.engine != SQLite {
		return nil
	}
	k := stmtKey{db, q}
	c.mu.Lock()
	st, ok := c.m[k]
	full := len(c.m) >= maxStmts
	c.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := db.PrepareContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return nil // let the unprepared path report the error
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[stmtKey]*sql.Stmt{}
	}
	if old, ok := c.m[k]; ok {
		st.Close()
		return old
	}
	c.m[k] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}
