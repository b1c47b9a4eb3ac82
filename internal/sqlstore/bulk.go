package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"payd"
)

// seedWords describe seeded RTPs; the load generator searches for one.
var seedWords = []string{"shirt", "book", "coffee", "ticket", "lamp", "chair", "phone", "bread"}

// SeedRTPs bulk-inserts n RTPs spread over the given merchants, for list
// benchmarks: multi-row inserts in large transactions, not the API. The
// RTPs vary in amount, order id, terminal, description, status and times;
// a merchant's k-th RTP is described by the k-th of seedWords in turn, so a
// search by any of them matches an eighth of every merchant's RTPs.
// An open RTP whose deadline is already past is written Expired at its
// deadline, as the expiry loop of a running payd would have: a seeded
// database is one in steady state, not one with months of expiries due.
func (s *Store) SeedRTPs(ctx context.Context, merchantIDs []string, n int, now time.Time) error {
	if s.engine == Postgres {
		return s.seedRTPsPostgres(ctx, merchantIDs, n, now)
	}
	const perStmt = 500
	statuses := []payd.RTPStatus{payd.RTPActive, payd.RTPActive, payd.RTPAccepted, payd.RTPRejected, payd.RTPCancelled, payd.RTPExpired, payd.RTPCreated}
	for done := 0; done < n; {
		err := s.inTx(ctx, func(t *tx) error {
			for k := 0; k < 20 && done < n; k++ {
				m := min(perStmt, n-done)
				var b strings.Builder
				b.WriteString("INSERT INTO rtps (" + rtpCols + ") VALUES ")
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
						int64(100+(j*7919)%9_999_900), "MDL", fmt.Sprintf("Order %d: %s", j, seedWords[j/len(merchantIDs)%len(seedWords)]),
						fmt.Sprintf("ord-%d", j%5000), nullStr(fmt.Sprintf("T%d", j%20)), nil, nil, string(st), nil, nil, nil, nil,
						ms(created), ms(updated), ms(expires))
				}
				if _, err := t.exec(ctx, b.String(), args...); err != nil {
					return fmt.Errorf("seed rtps: %w", err)
				}
				done += m
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Without samples (migration 016 says why).
	if _, err := s.w.ExecContext(ctx, "ANALYZE; DELETE FROM sqlite_stat4; ANALYZE sqlite_schema"); err != nil {
		return err
	}
	return s.settle(ctx)
}

// settle writes the seed's pages to the database files, so the runs that
// follow a seed do not pay for its checkpoint: SQLite moves the WAL into
// the database and empties it, PostgreSQL checkpoints.
func (s *Store) settle(ctx context.Context) error {
	q := "PRAGMA wal_checkpoint(TRUNCATE)"
	if s.engine == Postgres {
		q = "CHECKPOINT"
	}
	_, err := s.w.ExecContext(ctx, q)
	return err
}

// seedRTPsPostgres makes the same rows as SeedRTPs inside the server, a
// million per statement, from generate_series: the 10M-row runs seed in
// minutes instead of an hour of client round trips. Ids are UUIDv7 of the
// row's creation time (random bits from md5 of its number).
func (s *Store) seedRTPsPostgres(ctx context.Context, merchantIDs []string, n int, now time.Time) error {
	const chunk = 1_000_000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n) - 1
		_, err := s.w.ExecContext(ctx, `
			INSERT INTO rtps (`+rtpCols+`)
			SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-' || '8' || substr(r, 4, 3) || '-' || substr(r, 7, 12),
				($1::text[])[j % $2 + 1], '37369112221', 100 + (j::bigint * 7919) % 9999900, 'MDL',
				'Order ' || j || ': ' || ($7::text[])[j / $2 % cardinality($7::text[]) + 1],
				'ord-' || (j % 5000), 'T' || (j % 20), NULL, NULL,
				CASE WHEN st IN ('Active','Created') AND e <= $3::bigint THEN 'Expired' ELSE st END,
				NULL, NULL, NULL, NULL, c, CASE WHEN st IN ('Active','Created') AND e <= $3::bigint THEN e ELSE c END, e
			FROM (SELECT j, $3::bigint - ($4::bigint - j) * 1000 AS c, md5(j::text) AS r FROM generate_series($5::bigint, $6::bigint) AS j) g,
				LATERAL (SELECT lpad(to_hex(c), 12, '0') AS h, c + (1 + j % 1000) * 3600000 AS e,
					(ARRAY['Active','Active','Accepted','Rejected','Cancelled','Expired','Created'])[j % 7 + 1] AS st) x`,
			merchantIDs, len(merchantIDs), ms(now), n, from, to, seedWords)
		if err != nil {
			return fmt.Errorf("seed rtps: %w", err)
		}
	}
	if _, err := s.w.ExecContext(ctx, "VACUUM ANALYZE rtps"); err != nil { // as autovacuum would have by now
		return err
	}
	return s.settle(ctx)
}

// PrepareFloor creates floor_rtps, a copy of the rtps table's shape with
// no indexes but its key, for the storage floor of the load generator.
func (s *Store) PrepareFloor(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS floor_rtps (
		id TEXT PRIMARY KEY, merchant_id TEXT NOT NULL, alias TEXT NOT NULL, amount BIGINT NOT NULL, currency TEXT NOT NULL,
		description TEXT NOT NULL, order_id TEXT, terminal_id TEXT, callback_url TEXT, redirect_url TEXT, status TEXT NOT NULL,
		cancel_reason TEXT, pay_id TEXT, auto_action TEXT, auto_at BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL)`)
	return err
}

// FloorInsert is the storage floor's unit of work: one single-row insert
// transaction of an RTP-shaped row, through the same connections payd uses,
// committed on its own (no group commit: the floor is the plain way).
func (s *Store) FloorInsert(ctx context.Context, now time.Time) error {
	return s.soloTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "INSERT INTO floor_rtps ("+rtpCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			payd.NewID(now), "floor", "37369112221", 5000, "MDL", "Floor row", "ord-1", nil, "http://127.0.0.1:1/cb", nil,
			"Active", nil, nil, nil, nil, ms(now), ms(now), ms(now.Add(time.Hour)))
		return err
	})
}

// DropFloor removes the floor table.
func (s *Store) DropFloor(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, "DROP TABLE IF EXISTS floor_rtps")
	return err
}
