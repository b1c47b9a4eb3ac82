// Package sqlite is the SQLite engine's machinery under payd's store
// (internal/sqlstore): what SQLite needs and PostgreSQL does not, each
// piece with its row in BENCHMARKS.md.
//
//   - The group committer runs concurrent use cases in one transaction
//     and one commit (group.go).
//   - The RTP record cache answers RTP reads by id from memory while
//     nothing can have changed them, its records in an arena outside Go's
//     heap (rtpcache.go, ring.go).
//   - The statement caches keep reads and writes prepared (stmt.go).
//   - The checkpointer copies the write-ahead log back into the database
//     off the writer (checkpoint.go).
//
// The store's use cases know none of it. The store opens the engine,
// gives the group committer its transactions (Transactions: their
// savepoints, and the payment references a use case drew), and its RTP
// read and queries call the rest.
package sqlite
