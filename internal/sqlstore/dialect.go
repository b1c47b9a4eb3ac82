package sqlstore

import "context"

// dialect is what the use cases' SQL differs in between the engines: a few
// fragments of syntax, and the few plans a figure or a plan test justifies
// (each implementation says which). The use cases ask their store's
// dialect (Store.d) and never compare engines; the SQL itself is written
// once, in the subset both engines share (dialect_sqlite.go,
// dialect_postgres.go).
type dialect interface {
	// rebind writes q's '?' placeholders as the engine's.
	rebind(q string) string
	// forUpdate is the row lock a read-modify-write takes; forUpdateOf
	// locks only table's rows of a join; skipLocked lets several
	// instances claim disjoint work.
	forUpdate() string
	forUpdateOf(table string) string
	skipLocked() string
	// noLimit is a LIMIT that bounds nothing (for an OFFSET alone).
	noLimit() string
	// lower is expr lowered as a search lowers its pattern (fold.go).
	lower(expr string) string
	// indexedBy is table read through index, where the planner must be
	// told it.
	indexedBy(table, index string) string
	// idsIn is the condition, and its one argument, that a column is one
	// of ids: one statement text whatever their number, so that it stays
	// among the prepared statements.
	idsIn(ids []string) (string, any, error)
	// orderSeq is the column that says in which order rails orders were
	// written.
	orderSeq() string
	// planned makes a statement planned for its values at each run.
	planned(args []any) []any
	// rowParts cuts n rows of a multi-row statement into parts [from, to).
	rowParts(n int) [][2]int
	// claimPlan is the statement that makes a transaction's claims walk
	// their due index in order ("" none needed).
	claimPlan() string
	// drawRefs draws a block of refBlock payment reference numbers in t.
	drawRefs(ctx context.Context, t *tx) ([]int64, error)
	// rtpDescriptionLike adds the RTP list's search of descriptions by v.
	rtpDescriptionLike(w *where, v string)
	// countsInPage says whether a description search's page counts its
	// matches in the page's own scan; walksDescriptions whether it walks
	// the description index instead (descriptionWalk).
	countsInPage() bool
	walksDescriptions() bool
	// appendsCounts says whether rtp_status_counts takes a row per change
	// that CompactRTPCounts folds.
	appendsCounts() bool
}
