package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// postgresDialect is PostgreSQL's SQL. Several instances write the
// database, so a read-modify-write locks its rows and claims skip the
// locked ones.
type postgresDialect struct {
	binds *sync.Map // rebind's texts, by the text written with '?'
}

func (postgresDialect) forUpdate() string                { return " FOR UPDATE" }
func (postgresDialect) forUpdateOf(table string) string  { return " FOR UPDATE OF " + table }
func (postgresDialect) skipLocked() string               { return " FOR UPDATE SKIP LOCKED" }
func (postgresDialect) noLimit() string                  { return " LIMIT ALL" }
func (postgresDialect) lower(expr string) string         { return "LOWER(" + expr + ")" }
func (postgresDialect) indexedBy(table, _ string) string { return table }
func (postgresDialect) orderSeq() string                 { return "seq" } // a sequence
func (postgresDialect) walksDescriptions() bool          { return false }
func (postgresDialect) appendsCounts() bool              { return true } // 017

func (postgresDialect) idsIn(ids []string) (string, any, error) { return " = ANY(?)", ids, nil }

// rebind rewrites '?' placeholders as $1, $2, ….
func (d postgresDialect) rebind(q string) string {
	if v, ok := d.binds.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	out := b.String()
	d.binds.Store(q, out)
	return out
}

// planned makes a statement run unnamed: parsed and planned for its values
// at each run, as the plan tests EXPLAIN it. A prepared statement is
// planned once for any values after five runs whenever that generic plan
// looks no dearer, and a description search's generic plan is the trigram
// index, which rechecks a heap row per candidate: for a word on half of a
// merchant's 10,000 RTPs its count took 16 ms where the creation index's
// entries take 4, and 575 ms with the rows not cached (EXPLAIN ANALYZE of
// the prepared count, 1M rows). Planning each run costs about 0.3 ms, so
// only searches, whose best plan depends on the word, pay it.
func (postgresDialect) planned(args []any) []any {
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// rowParts sends all the rows at once.
func (postgresDialect) rowParts(n int) [][2]int {
	if n == 0 {
		return nil
	}
	return [][2]int{{0, n}}
}

// claimPlan is claimPlanPG (rails.go).
func (postgresDialect) claimPlan() string { return claimPlanPG }

// drawRefs draws from the sequence, in the caller's transaction (another
// connection could wait for one of the pool's, all held by transactions
// waiting here); a sequence's numbers stay drawn when the transaction
// rolls back.
func (postgresDialect) drawRefs(ctx context.Context, t *tx) ([]int64, error) {
	rows, err := t.query(ctx, "SELECT nextval('payment_ref_seq') FROM generate_series(1, "+strconv.Itoa(refBlock)+")")
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(sc scanner) (v int64, err error) { return v, sc.Scan(&v) })
}

// rtpDescriptionLike searches the description stored lowered (014).
func (postgresDialect) rtpDescriptionLike(w *where, v string) { w.likeLowered("description_lc", v) }

// countsInPage: a substring search rechecks every candidate row of the
// merchant whatever the page, so the page counts the matches in that same
// scan (a window count) instead of a second one (4.3 ms instead of 7.6 for
// 10,000 RTPs, BenchmarkRTPList). On SQLite the window's sort of every
// match costs more than the second read of the index (6.1 ms against 5.2).
func (postgresDialect) countsInPage() bool { return true }
