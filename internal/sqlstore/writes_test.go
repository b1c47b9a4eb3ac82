package sqlstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestWritesSentTogether: on PostgreSQL a transaction's writes wait and go
// to the server together (postgres/writes.go), on SQLite and the plain store they
// run at once; on both,
// a read in the transaction sees the writes before it, a write that must
// change one row and changes none ends the transaction with a conflict,
// and a failing write rolls back everything the transaction wrote, with
// its own error.
func TestWritesSentTogether(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, url string) {
		pg := strings.HasPrefix(url, "postgres") && !s.Plain() // writes queued; the plain store runs each at once
		leases := func() int64 {
			t.Helper()
			var n int64
			if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
				n, err = w.Count(ctx, "SELECT count(*) FROM leases WHERE name LIKE 'wt-%'")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		const ins = "INSERT INTO leases (name, owner, until) VALUES (?, ?, ?)"

		// Queued on PostgreSQL, read back in the same transaction, committed.
		err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			if err := w.Write(ctx, -1, ins, "wt-a", "me", 1); err != nil {
				return err
			}
			if err := w.Write(ctx, -1, ins, "wt-b", "me", 1); err != nil {
				return err
			}
			if want := map[bool]int{true: 2, false: 0}[pg]; w.Queued() != want {
				t.Errorf("queued %d writes, want %d", w.Queued(), want)
			}
			n, err := w.Count(ctx, "SELECT count(*) FROM leases WHERE name LIKE 'wt-%'")
			if n != 2 || w.Queued() != 0 {
				t.Errorf("read after the writes: %d rows, %d still queued; want 2, 0", n, w.Queued())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := leases(); n != 2 {
			t.Fatalf("committed %d rows, want 2", n)
		}
		// A guarded update of a row written before the transaction.
		err = s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			return w.Write(ctx, 1, "UPDATE leases SET until = ? WHERE name = ?", 2, "wt-a")
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			n, err := w.Count(ctx, "SELECT until FROM leases WHERE name = ?", "wt-a")
			if n != 2 {
				t.Errorf("updated until = %d, want 2", n)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// Sent together, the update cannot see the insert queued with it:
		// on PostgreSQL it changed no row and the transaction says so.
		// (That is why queued writes must not depend on each other.)
		err = s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			if err := w.Write(ctx, -1, ins, "wt-c", "me", 1); err != nil {
				return err
			}
			return w.Write(ctx, 1, "UPDATE leases SET until = ? WHERE name = ?", 2, "wt-c")
		})
		if pg != errors.Is(err, payd.ErrConflict) {
			t.Errorf("an update of a row inserted in the same batch: %v (PostgreSQL: want a conflict; SQLite: none)", err)
		}
		if n := leases(); n != map[bool]int64{true: 2, false: 3}[pg] {
			t.Fatalf("after the dependent update: %d rows", n)
		}

		// A write that must change one row and changes none: nothing of
		// the transaction stays, even what was written before it.
		err = s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			if err := w.Write(ctx, -1, ins, "wt-d", "me", 1); err != nil {
				return err
			}
			return w.Write(ctx, 1, "UPDATE leases SET until = ? WHERE name = ?", 3, "wt-missing")
		})
		if !errors.Is(err, payd.ErrConflict) {
			t.Errorf("guarded update of no row: %v, want a conflict", err)
		}
		// A failing write (a duplicate key) ends the transaction with its
		// own error, even when the function went on to read and failed
		// for that reason only.
		err = s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			if err := w.Write(ctx, -1, ins, "wt-e", "me", 1); err != nil {
				return err
			}
			if err := w.Write(ctx, -1, ins, "wt-a", "me", 1); err != nil {
				return err
			}
			_, err := w.Count(ctx, "SELECT count(*) FROM leases")
			return err
		})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "unique") {
			t.Errorf("duplicate key: %v, want the unique violation", err)
		}
		// The same when the function returns an error of its own after the
		// read that failed: on PostgreSQL the queued write's, which came
		// first, ends the transaction (on SQLite the write failed at once
		// and the function's error is the one it chose).
		own := errors.New("the function's own")
		err = s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			w.Write(ctx, 1, "UPDATE leases SET until = ? WHERE name = ?", 3, "wt-missing")
			w.Count(ctx, "SELECT count(*) FROM leases")
			return own
		})
		if want := map[bool]error{true: payd.ErrConflict, false: own}[pg]; !errors.Is(err, want) {
			t.Errorf("a function's own error after a failed queued write: %v, want %v", err, want)
		}
		if n := leases(); n != map[bool]int64{true: 2, false: 3}[pg] {
			t.Errorf("after the failed transactions: %d rows; their writes must not stay", n)
		}
	})
}

// TestReferencesUniqueAcrossInstances: payment reference numbers, drawn in
// blocks (payment.go), are never handed to two committed transactions when
// two instances on one database draw them concurrently, across many
// blocks, with some transactions rolling back among them (a number a
// rolled-back transaction took stays spent).
func TestReferencesUniqueAcrossInstances(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, url string) {
		other, err := sqlstore.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for i, st := range []*sqlstore.Store{s, other, s, other, s, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 60; k++ {
					var v int64
					err := st.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
						if v, err = w.NextReference(ctx); err != nil {
							return err
						}
						if k%10 == 9 {
							return errors.New("roll back")
						}
						return nil
					})
					if k%10 == 9 {
						if err == nil || err.Error() != "roll back" {
							t.Errorf("a rolled-back draw: %v", err)
						}
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := seen[v]; dup || v <= 0 {
						t.Errorf("reference %d drawn by %s and again by drawer %d", v, prev, i)
					}
					seen[v] = fmt.Sprint("drawer ", i)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != 6*54 {
			t.Errorf("%d distinct references of %d", len(seen), 6*54)
		}
	})
}

// TestReferenceBlockUndoneWithItsDrawer: on SQLite a block of references
// is drawn by an update of the counters row in the drawing use case's
// transaction, so a rollback undoes the draw. Here every use case that
// drew a block rolls back the first time, concurrently, so that many of
// them share a transaction and roll back to their savepoint within it
// (group.go). If a rolled-back draw's block stayed in memory, the next
// draw would hand out its numbers a second time. On PostgreSQL the
// sequence's numbers stay spent; the same uniqueness holds. A store opened
// afterwards, as after a restart, draws above every committed number.
func TestReferenceBlockUndoneWithItsDrawer(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, url string) {
		pg := strings.HasPrefix(url, "postgres")
		var mu sync.Mutex
		seen := map[int64]bool{}
		undone := map[int64]bool{} // first numbers of blocks whose draw was rolled back
		var top int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for committed := 0; committed < 100; {
					var v int64
					err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
						if v, err = w.NextReference(ctx); err != nil {
							return err
						}
						mu.Lock()
						defer mu.Unlock()
						if v%64 == 1 && !undone[v] {
							undone[v] = true
							return errors.New("roll back the draw")
						}
						return nil
					})
					if err != nil && err.Error() == "roll back the draw" {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[v] || v <= 0 {
						t.Errorf("reference %d handed out twice", v)
					}
					seen[v] = true
					top = max(top, v)
					mu.Unlock()
					committed++
				}
			}()
		}
		wg.Wait()
		if len(seen) != 800 {
			t.Errorf("%d distinct references committed, want 800", len(seen))
		}
		if len(undone) < 800/64 {
			t.Errorf("%d draws rolled back; the test wants one per block", len(undone))
		}
		if !pg {
			// An undone draw is drawn again: its first number is committed
			// the second time, and the 800 numbers leave no gap.
			for v := range undone {
				if v <= top && !seen[v] {
					t.Errorf("reference %d: its block's draw was rolled back and not drawn again", v)
				}
			}
			if top != 800 {
				t.Errorf("highest reference %d, want 800 (no gaps on one SQLite instance)", top)
			}
		}
		again, err := sqlstore.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		var v int64
		if err := again.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
			v, err = w.NextReference(ctx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if v <= top {
			t.Errorf("a store opened afterwards drew %d, not above the committed %d", v, top)
		}
	})
}
