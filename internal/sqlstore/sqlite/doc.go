// Package sqlite is the SQLite engine's machinery under payd's store
// (internal/sqlstore): what SQLite needs and PostgreSQL does not, each
// piece with its row in BENCHMARKS.md. The RTP record cache answers RTP
// reads by id from memory while nothing can have changed them, its
// records in an arena outside Go's heap (ring.go); the statement caches
// keep reads and writes prepared (stmt.go); the checkpointer copies the
// write-ahead log back into the database off the writer.
//
// The store's use cases know none of it: the store opens the engine, and
// its RTP read, its queries and its group committer call the rest. The
// group committer itself stays with the store: it runs the store's
// transactions, with their savepoints and the payment references they
// drew.
package sqlite
