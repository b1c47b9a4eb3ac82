package sqlstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"payd/internal/sqlstore/postgres"
)

// rowSet is what a query returns: *sql.Rows, or postgres.Rows.
type rowSet interface {
	Next() bool
	Scan(...any) error
	Close() error
	Err() error
}

// pgTxRun runs f in a pipelined transaction (postgres.Tx) on one of the
// pool's connections.
func (s *Store) pgTxRun(ctx context.Context, f func(*tx) error) error {
	return s.pgConn(ctx, func(c *pgx.Conn) error {
		t := &tx{s: s, pg: postgres.NewTx(c, s.d.rebind)}
		err := t.pg.End(f(t))
		if err == nil {
			err = t.pg.Commit(ctx)
		}
		if notPrimary(err) {
			// A node that is no primary any more (demoted, or a standby a
			// multi-host URL reached): the connection goes, not back to
			// the pool, so the next one finds the primary.
			c.Close(context.WithoutCancel(ctx))
			return err
		}
		if c.PgConn().TxStatus() != 'I' {
			// Failed, or its context ended: roll back before the connection
			// goes back to the pool (which would otherwise discard it).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			c.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return err
	})
}

// pgConn runs f on pgx's own connection, taken from the database/sql
// pool: it scans rows without database/sql's conversions, and pipelines.
func (s *Store) pgConn(ctx context.Context, f func(*pgx.Conn) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error { return f(dc.(*stdlib.Conn).Conn()) })
}
