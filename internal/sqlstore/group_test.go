package sqlstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestGroupCommitOutlivesAbandonedUseCase: on SQLite use cases share a
// transaction (group.go). A client that goes away while its use case's
// write runs must not undo the others': SQLite rolls back the whole
// transaction when a write is interrupted, and a use case that had
// already written in the same batch then failed with "no such savepoint"
// (seen at the end of every load scenario). A use case the committer has
// started therefore runs to its end.
func TestGroupCommitOutlivesAbandonedUseCase(t *testing.T) {
	s, _ := storetest.SQLite(t)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var written, during atomic.Bool
	errs := s.RunBatch(
		sqlstore.BatchJob{Ctx: ctx, F: func(w sqlstore.WriteTx) error {
			return w.Write(ctx, -1, "INSERT INTO leases (name, owner, until) VALUES ('gc-first', 'me', 1)")
		}},
		sqlstore.BatchJob{Ctx: actx, F: func(w sqlstore.WriteTx) error {
			// A write long enough to be cancelled while it runs.
			time.AfterFunc(20*time.Millisecond, func() { during.Store(!written.Load()); cancel() })
			err := w.Write(actx, -1, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
				INSERT INTO leases (name, owner, until) SELECT 'gc-' || x, 'me', 1 FROM c`)
			written.Store(true)
			return err
		}},
	)
	<-actx.Done()
	if !during.Load() {
		t.Fatal("the abandoned use case's write ended before its client went away; the test shows nothing")
	}
	if errs[0] != nil {
		t.Fatalf("the use case batched with an abandoned one: %v", errs[0])
	}
	aerr := errs[1]
	if aerr != nil && !errors.Is(aerr, context.Canceled) {
		t.Errorf("the abandoned use case: %v, want success or its cancellation", aerr)
	}
	var n, many int64
	if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
		if n, err = w.Count(ctx, "SELECT count(*) FROM leases WHERE name = 'gc-first'"); err != nil {
			return err
		}
		many, err = w.Count(ctx, "SELECT count(*) FROM leases WHERE name LIKE 'gc-%' AND name <> 'gc-first'")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the first use case acknowledged its write, and %d rows of it stayed", n)
	}
	if want := map[bool]int64{true: 100000, false: 0}[aerr == nil]; many != want {
		t.Errorf("the abandoned use case (%v) left %d of its rows, want %d", aerr, many, want)
	}
}
