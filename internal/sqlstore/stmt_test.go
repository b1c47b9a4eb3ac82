package sqlstore_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestWriteStatementsPrepared: on SQLite the statements of write
// transactions are prepared once and reused, the group commit's savepoints
// too, and the attempt records, whose text grows with the batch, are
// written in parts of a power of two of rows, so that batches of every
// length prepare a few texts and cannot crowd the fixed statements out of
// the cache; every attempt is still recorded once.
func TestWriteStatementsPrepared(t *testing.T) {
	s, _ := storetest.SQLite(t)
	m, _ := newMerchant(t, s, 0)
	now := storetest.Epoch
	for n := 1; n <= 6; n++ {
		for i := 0; i < n; i++ {
			r := newRTP(t, s, m, "37369112221", now)
			if _, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now); err != nil {
				t.Fatal(err)
			}
		}
		claimed, err := s.ClaimCallbacks(ctx, "w", now.Add(time.Hour), time.Minute, 100)
		if err != nil || len(claimed) != n {
			t.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
		}
		cbs := make([]sqlstore.Recorded, n)
		for i, c := range claimed {
			cbs[i] = sqlstore.Recorded{Callback: c, Attempt: sqlstore.Attempt{Number: 1, StartedAt: now, StatusCode: 200}}
		}
		if lost, err := s.RecordAttempts(ctx, "w", cbs); err != nil || len(lost) != 0 {
			t.Fatalf("record %d: lost %v, %v", n, lost, err)
		}
	}
	// Writes at once, which the committer groups in one transaction of
	// savepoints; then one more write makes it prepare what was noted.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				amount, exp := payd.Money(100), now.Add(time.Hour)
				r, err := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL",
					Description: "Order", CallbackURL: "https://merchant.example/cb"}, m.ID, now)
				if err == nil {
					err = s.CreateRTP(ctx, m, r)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	newRTP(t, s, m, "37369112221", now)
	prepared := strings.Join(s.PreparedWrites(), "\n")
	if !strings.Contains(prepared, "INSERT INTO rtps") || !strings.Contains(prepared, "INSERT INTO payments") {
		t.Fatalf("the fixed statements are not prepared:\n%s", prepared)
	}
	if !strings.Contains(prepared, "SAVEPOINT uc") || !strings.Contains(prepared, "RELEASE uc") {
		t.Fatalf("the group commit's savepoints are not prepared:\n%s", prepared)
	}
	// Batches of 1 to 6 attempts: parts of 1, 2 and 4 rows, no other.
	sizes := map[string]map[int]bool{"log": {}, "callbacks": {}}
	for _, q := range s.PreparedWrites() {
		switch {
		case strings.Contains(q, "INSERT INTO callback_attempts"):
			sizes["log"][strings.Count(q, "(?, ?, ?, ?, ?, ?, ?, ?)")] = true
		case strings.Contains(q, "UPDATE callbacks SET state = v.column2"):
			sizes["callbacks"][strings.Count(q, "CAST(? AS TEXT))")] = true
		}
	}
	for what, got := range sizes {
		if len(got) != 3 || !got[1] || !got[2] || !got[4] {
			t.Errorf("the %s statements prepared have %v rows, want 1, 2 and 4", what, got)
		}
	}
	var attempts, delivered int64
	err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
		if attempts, err = w.Count(ctx, "SELECT COUNT(*) FROM callback_attempts"); err != nil {
			return err
		}
		delivered, err = w.Count(ctx, "SELECT COUNT(*) FROM callbacks WHERE state = 'delivered' AND attempts = 1")
		return err
	})
	if err != nil || attempts != 21 || delivered != 21 {
		t.Fatalf("%d attempts logged and %d callbacks delivered, want 21 of each: %v", attempts, delivered, err)
	}
}
