// Package seed fills a payd database with generated rows for the load
// generator and the list benchmarks: multi-row inserts straight into the
// tables, not use cases, so it lives beside the store and never in it. It
// writes through the store's writer pool (sqlstore.Store.WriteDB) into a
// migrated database.
package seed

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"payd"
)

// Words describe seeded RTPs: a merchant's k-th RTP is described by the
// k-th word in turn, so a search by any of them matches an eighth of every
// merchant's RTPs. The load generator searches for "coffee".
var Words = []string{"shirt", "book", "coffee", "ticket", "lamp", "chair", "phone", "bread"}

// columns are the rtps table's, in the order a seeded row gives them.
const columns = `id, merchant_id, alias, amount, currency, description, order_id, terminal_id, callback_url,
	redirect_url, status, cancel_reason, pay_id, auto_action, auto_at, created_at, updated_at, expires_at`

// RTPs bulk-inserts n RTPs spread over the given merchants (postgres: db
// is PostgreSQL, else SQLite). The RTPs vary in amount, order id,
// terminal, description, status and times. An open RTP whose deadline is
// already past is written Expired at its deadline, as the expiry loop of a
// running payd would have: a seeded database is one in steady state, not
// one with months of expiries due.
func RTPs(ctx context.Context, db *sql.DB, postgres bool, merchantIDs []string, n int, now time.Time) error {
	if postgres {
		return rtpsPostgres(ctx, db, merchantIDs, n, now)
	}
	const perStmt = 500
	statuses := []payd.RTPStatus{payd.RTPActive, payd.RTPActive, payd.RTPAccepted, payd.RTPRejected, payd.RTPCancelled, payd.RTPExpired, payd.RTPCreated}
	for done := 0; done < n; {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("seed rtps: %w", err)
		}
		for k := 0; k < 20 && done < n; k++ {
			m := min(perStmt, n-done)
			var b strings.Builder
			b.WriteString("INSERT INTO rtps (" + columns + ") VALUES ")
			args := make([]any, 0, m*18)
			for i := 0; i < m; i++ {
				j := done + i
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
				created := now.Add(-time.Duration(n-j) * time.Second)
				expires := created.Add(time.Duration(1+j%1000) * time.Hour)
				st, updated := statuses[j%len(statuses)], created
				if (st == payd.RTPActive || st == payd.RTPCreated) && !expires.After(now) {
					st, updated = payd.RTPExpired, expires // as the expiry loop would have written it
				}
				args = append(args, payd.NewID(created), merchantIDs[j%len(merchantIDs)], "37369112221",
					int64(100+(j*7919)%9_999_900), "MDL", fmt.Sprintf("Order %d: %s", j, Words[j/len(merchantIDs)%len(Words)]),
					fmt.Sprintf("ord-%d", j%5000), fmt.Sprintf("T%d", j%20), nil, nil, string(st), nil, nil, nil, nil,
					created.UnixMilli(), updated.UnixMilli(), expires.UnixMilli())
			}
			if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
				tx.Rollback()
				return fmt.Errorf("seed rtps: %w", err)
			}
			done += m
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("seed rtps: %w", err)
		}
	}
	// Without samples (migration 016 says why).
	if _, err := db.ExecContext(ctx, "ANALYZE; DELETE FROM sqlite_stat4; ANALYZE sqlite_schema"); err != nil {
		return err
	}
	return settle(ctx, db, false)
}

// rtpsPostgres makes the same rows as RTPs inside the server, a million per
// statement, from generate_series: the 10M-row runs seed in minutes
// instead of an hour of client round trips. Ids are UUIDv7 of the row's
// creation time (random bits from md5 of its number).
func rtpsPostgres(ctx context.Context, db *sql.DB, merchantIDs []string, n int, now time.Time) error {
	const chunk = 1_000_000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n) - 1
		_, err := db.ExecContext(ctx, `
			INSERT INTO rtps (`+columns+`)
			SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-' || '8' || substr(r, 4, 3) || '-' || substr(r, 7, 12),
				($1::text[])[j % $2 + 1], '37369112221', 100 + (j::bigint * 7919) % 9999900, 'MDL',
				'Order ' || j || ': ' || ($7::text[])[j / $2 % cardinality($7::text[]) + 1],
				'ord-' || (j % 5000), 'T' || (j % 20), NULL, NULL,
				CASE WHEN st IN ('Active','Created') AND e <= $3::bigint THEN 'Expired' ELSE st END,
				NULL, NULL, NULL, NULL, c, CASE WHEN st IN ('Active','Created') AND e <= $3::bigint THEN e ELSE c END, e
			FROM (SELECT j, $3::bigint - ($4::bigint - j) * 1000 AS c, md5(j::text) AS r FROM generate_series($5::bigint, $6::bigint) AS j) g,
				LATERAL (SELECT lpad(to_hex(c), 12, '0') AS h, c + (1 + j % 1000) * 3600000 AS e,
					(ARRAY['Active','Active','Accepted','Rejected','Cancelled','Expired','Created'])[j % 7 + 1] AS st) x`,
			merchantIDs, len(merchantIDs), now.UnixMilli(), n, from, to, Words)
		if err != nil {
			return fmt.Errorf("seed rtps: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE rtps"); err != nil { // as autovacuum would have by now
		return err
	}
	return settle(ctx, db, true)
}

// settle writes the seed's pages to the database files, so the runs that
// follow a seed do not pay for its checkpoint: SQLite moves the WAL into
// the database and empties it, PostgreSQL checkpoints.
func settle(ctx context.Context, db *sql.DB, postgres bool) error {
	q := "PRAGMA wal_checkpoint(TRUNCATE)"
	if postgres {
		q = "CHECKPOINT"
	}
	_, err := db.ExecContext(ctx, q)
	return err
}
