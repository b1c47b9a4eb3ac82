package sqlstore_test

import (
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestWriteStatementsPrepared: on SQLite the statements of write
// transactions are prepared once and reused, and the attempt records,
// whose text grows with the batch, are never prepared, so batches of every
// length cannot crowd the fixed statements out of the cache.
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
	// One more write makes the committer prepare what the last one noted.
	newRTP(t, s, m, "37369112221", now)
	prepared := strings.Join(s.PreparedWrites(), "\n")
	if !strings.Contains(prepared, "INSERT INTO rtps") || !strings.Contains(prepared, "INSERT INTO payments") {
		t.Fatalf("the fixed statements are not prepared:\n%s", prepared)
	}
	if strings.Contains(prepared, "callback_attempts") || strings.Contains(prepared, "UPDATE callbacks SET state = v.column2") {
		t.Fatalf("a statement of varying length was prepared:\n%s", prepared)
	}
}
