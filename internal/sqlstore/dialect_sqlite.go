package sqlstore

import (
	"context"
	"encoding/json"
	"math/bits"
	"strconv"
)

// sqliteDialect is SQLite's SQL. Its one writer connection serializes
// writes, so no statement takes a row lock, and its planner needs telling
// an index in a few places.
type sqliteDialect struct{}

func (sqliteDialect) rebind(q string) string       { return q }
func (sqliteDialect) forUpdate() string            { return "" }
func (sqliteDialect) forUpdateOf(string) string    { return "" }
func (sqliteDialect) skipLocked() string           { return "" }
func (sqliteDialect) noLimit() string              { return " LIMIT -1" }
func (sqliteDialect) lower(expr string) string     { return "payd_lower(" + expr + ")" }
func (sqliteDialect) orderSeq() string             { return "rowid" }
func (sqliteDialect) claimPlan() string            { return "" }
func (sqliteDialect) planned(args []any) []any     { return args } // its planner does not look at bound values (016)
func (sqliteDialect) countsInPage() bool           { return false }
func (sqliteDialect) walksDescriptions() bool      { return true }
func (sqliteDialect) appendsCounts() bool          { return false } // one row per merchant and status already
func (sqliteDialect) indexedBy(t, i string) string { return t + " INDEXED BY " + i }

func (d sqliteDialect) rtpDescriptionLike(w *where, v string) { w.like(d, "description", v) }

// idsIn reads the ids from one JSON array.
func (sqliteDialect) idsIn(ids []string) (string, any, error) {
	b, err := json.Marshal(ids)
	return " IN (SELECT value FROM json_each(?))", string(b), err
}

// rowParts gives each part a power of two of rows, largest first, so that
// the statements' texts are a few (nine up to 256 rows) and each is
// prepared once (sqlite.WriteStatements): parsing a text of every length took 5% of
// the server's CPU during rtp-flow.
func (sqliteDialect) rowParts(n int) [][2]int {
	var out [][2]int
	for from := 0; from < n; {
		size := 1 << (bits.Len(uint(n-from)) - 1)
		out = append(out, [2]int{from, from + size})
		from += size
	}
	return out
}

// drawRefs draws by an update of the counters row, which a rollback
// undoes: t notes the draw, and the rollback of t, or of its use case's
// savepoint within a shared transaction (group.go), forgets the block
// (undoDraw, forget), lest its numbers be handed out again by the next
// draw. SQLite's writes run one at a time (group.go), so no other draw
// runs meanwhile.
func (sqliteDialect) drawRefs(ctx context.Context, t *tx) ([]int64, error) {
	var top int64
	if err := t.queryRow(ctx, "UPDATE counters SET value = value + "+strconv.Itoa(refBlock)+" WHERE name = 'payment_ref' RETURNING value").Scan(&top); err != nil {
		return nil, err
	}
	t.drewRefs = true
	drawn := make([]int64, refBlock)
	for i := range drawn {
		drawn[i] = top - refBlock + 1 + int64(i)
	}
	return drawn, nil
}
