package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// ReadStatements keeps prepared read statements by query text. On SQLite,
// database/sql otherwise prepares (parses and plans) every query anew,
// which profiling showed to be a third of the CPU of a read. PostgreSQL's
// driver caches statements by itself, so the cache is used on SQLite only.
// List queries vary with their filters and paging, so the cache stops
// growing at maxStmts distinct statements and the rest run unprepared.
// Writes have a cache of their own, WriteStatements. A nil cache
// prepares nothing.
type ReadStatements struct {
	mu sync.Mutex
	m  map[stmtKey]*sql.Stmt
}

type stmtKey struct {
	db *sql.DB
	q  string
}

const maxStmts = 512

// Get returns the prepared statement for q on db, preparing it once, or
// nil when q should run unprepared.
func (c *ReadStatements) Get(ctx context.Context, db *sql.DB, q string) *sql.Stmt {
	if c == nil {
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

// Close closes the statements.
func (c *ReadStatements) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// WriteStatements keep SQLite's write statements prepared. A profile of the
// callback flow showed a fifth of the server's CPU parsing the same
// INSERTs and UPDATEs again in every transaction. Preparing on the
// one-connection writer pool while a transaction holds the connection
// would deadlock, so a statement met inside a transaction runs unprepared
// once and is noted; the group committer, the only goroutine that runs
// SQLite's write transactions, prepares what was noted between
// transactions, and later transactions bind the prepared statement to
// themselves (sql.Tx.StmtContext reuses it on the same connection). A nil
// cache prepares nothing.
type WriteStatements struct {
	mu   sync.Mutex
	m    map[string]*sql.Stmt
	want map[string]bool
}

// Get returns the prepared statement of q, or nil after noting q.
func (c *WriteStatements) Get(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st
	}
	// Statements with several parts would run only the first prepared;
	// past maxStmts the rest run unprepared (a multi-row statement keeps
	// its texts few by its rows' parts: the store's rowParts).
	if len(c.m)+len(c.want) < maxStmts && !strings.Contains(q, ";") {
		if c.want == nil {
			c.want = map[string]bool{}
		}
		c.want[q] = true
	}
	return nil
}

// Prepare prepares the noted statements on db, between transactions.
func (c *WriteStatements) Prepare(db *sql.DB) {
	if c == nil {
		return
	}
	c.mu.Lock()
	want := c.want
	c.want = nil
	c.mu.Unlock()
	for q := range want {
		// A statement that does not prepare is kept as nil: it runs
		// unprepared, where its error shows, and is not tried again.
		st, _ := db.Prepare(q)
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		c.m[q] = st
		c.mu.Unlock()
	}
}

// Close closes the statements.
func (c *WriteStatements) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		if st != nil {
			st.Close()
		}
	}
	c.m = nil
}

// Prepared is the text of every write statement kept prepared.
func (c *WriteStatements) Prepared() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for q, st := range c.m {
		if st != nil {
			out = append(out, q)
		}
	}
	return out
}
