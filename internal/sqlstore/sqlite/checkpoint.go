package sqlite

import (
	"database/sql"
	"time"
)

// Checkpoints, on SQLite. In WAL mode a commit appends pages to the log,
// and a checkpoint copies them back into the database file. SQLite runs
// one by itself inside the commit that takes the log past
// wal_autocheckpoint pages (1,000 by default): on the writer connection,
// so the group committer, which every write goes through, stopped for it
// (3% of payd's CPU in rtp-flow, all of it on that one goroutine). A
// connection of its own checkpoints instead, every CheckpointEvery, in
// PASSIVE mode: it copies what no reader still needs, and blocks neither
// the readers nor the writer. The writer checkpoints by itself only past
// WALBackstop pages, should this connection fall behind or fail.
//
// Durability does not depend on it: a commit is durable once in the log
// (synchronous=FULL syncs the log at every commit), and a checkpoint syncs
// the log before it copies and the database file after.
const (
	CheckpointEvery = 100 * time.Millisecond
	WALBackstop     = 10_000 // the writer's wal_autocheckpoint
)

// Checkpoint checkpoints db every CheckpointEvery until closed is closed,
// then closes db.
func Checkpoint(db *sql.DB, closed <-chan struct{}) {
	defer db.Close()
	t := time.NewTicker(CheckpointEvery)
	defer t.Stop()
	for {
		select {
		case <-closed:
			return
		case <-t.C:
			// A failure leaves the pages in the log, where they are safe;
			// the next pass or the writer's backstop copies them.
			db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}
