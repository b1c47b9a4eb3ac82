// Package postgres is the PostgreSQL engine's machinery under payd's store
// (internal/sqlstore): what PostgreSQL needs and SQLite does not, each
// piece with its row in BENCHMARKS.md. Tx is a pipelined transaction on
// pgx's own connection, sending BEGIN, the queued writes and COMMIT in
// the round trips of the statements around them; Coalescer gathers
// concurrent work (RTP reads by id, RTP inserts) into one statement;
// Listener keeps a LISTEN connection, and pings itself so that a
// connection that hangs shows (the authentication cache follows changes
// through it).
//
// The store's use cases know none of it: they run on the store's tx,
// which runs on a Tx when the store is PostgreSQL's and not plain.
package postgres
