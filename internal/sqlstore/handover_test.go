package sqlstore_test

import (
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestHandedCallbacksQueueFull: a payment's callback that finds its
// instance's queue full is not left leased to that instance: its lease is
// given up at once, so another instance claims it now, not after the lease.
func TestHandedCallbacksQueueFull(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := storetest.Epoch
		s.HandCallbacksUpTo("a", 30*time.Second, payd.NewFakeClock(now), 1)
		m, _ := newMerchant(t, s, 0)
		for range 3 {
			r := newRTP(t, s, m, "37369112221", now)
			if _, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now); err != nil {
				t.Fatal(err)
			}
		}
		if st := s.HandedCallbackStats(); st != (sqlstore.HandStats{Queued: 1, Handed: 1, Full: 2}) {
			t.Errorf("handed callbacks' stats = %+v, want 1 queued and handed, 2 full", st)
		}
		got, err := s.ClaimCallbacks(ctx, "b", now, 30*time.Second, 10)
		if err != nil || len(got) != 2 {
			t.Fatalf("b claimed %d callbacks past the full queue, want 2 (%v)", len(got), err)
		}
	})
}
