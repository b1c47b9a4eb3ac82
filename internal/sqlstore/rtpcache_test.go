package sqlstore_test

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// cachedRead reads an RTP until the SQLite record cache answers it (the
// cache is served only while its poll is recent, which a loaded machine
// may delay), checking every read on the way, and returns the answer.
func cachedRead(t *testing.T, s *sqlstore.Store, m *payd.Merchant, id string, at time.Time, want payd.RTPStatus) *payd.RTP {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		before := cacheHits(s)
		got, err := s.RTP(ctx, m.ID, id, at)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if got.Status != want {
			t.Fatalf("read %s: status %s, want %s", id, got.Status, want)
		}
		if cacheHits(s) > before {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %s: never answered from the cache", id)
		}
	}
}

// TestRTPCacheFollowsEveryChange: on SQLite an RTP read by id is answered
// from memory once read, and the next read after any change of the record
// shows the change: each use case that writes an RTP, the expiry pass, any
// other statement through the store, and a commit of another connection
// to the same file (seen within RTPCacheMaxAge).
func TestRTPCacheFollowsEveryChange(t *testing.T) {
	s, u := storetest.SQLite(t)
	m, _ := newMerchant(t, s, 0)
	now := storetest.Epoch
	credit := func(id string) payd.Credit {
		return payd.Credit{TargetID: id, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}
	}

	r := newRTP(t, s, m, "37369112221", now)
	cachedRead(t, s, m, r.ID, now, payd.RTPActive)
	if _, err := s.CancelRTP(ctx, m.ID, r.ID, "changed my mind", now); err != nil {
		t.Fatal(err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPCancelled)

	r = newRTP(t, s, m, "37369112221", now)
	cachedRead(t, s, m, r.ID, now, payd.RTPActive)
	if _, err := s.RejectRTP(ctx, m.ID, r.ID, now); err != nil {
		t.Fatal(err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPRejected)

	// Accepted, then refunded in full by the refund's settlement.
	r = newRTP(t, s, m, "37369112221", now)
	cachedRead(t, s, m, r.ID, now, payd.RTPActive)
	_, p, err := s.CreditRTP(ctx, m.ID, credit(r.ID), now)
	if err != nil {
		t.Fatal(err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPAccepted)
	rf, err := s.CreateRefund(ctx, m.ID, p.ID, payd.RefundInput{Reason: "r"}, now, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SettleRefund(ctx, rf.ID, payd.RefundAccepted, now); err != nil {
		t.Fatal(err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPRefunded)

	// The expiry pass: read "before" the deadline, the stored status shows.
	r = newRTP(t, s, m, "37369112221", now)
	cachedRead(t, s, m, r.ID, now, payd.RTPActive)
	if n, err := s.ExpireRTPs(ctx, r.ExpiresAt, 100); err != nil || n != 1 {
		t.Fatalf("ExpireRTPs = %d, %v", n, err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPExpired)

	// The sandbox's pending decision, dropped.
	r = newRTP(t, s, m, "37369112221", now)
	if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
		return w.Write(ctx, 1, "UPDATE rtps SET auto_action = 'accept', auto_at = ? WHERE id = ?", now.UnixMilli(), r.ID)
	}); err != nil {
		t.Fatal(err)
	}
	if got := cachedRead(t, s, m, r.ID, now, payd.RTPActive); got.AutoAction != "accept" {
		t.Fatalf("auto action = %q", got.AutoAction)
	}
	if err := s.ClearRTPDecision(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if got := cachedRead(t, s, m, r.ID, now, payd.RTPActive); got.AutoAction != "" {
		t.Errorf("auto action after it was dropped = %q", got.AutoAction)
	}

	// A statement no use case makes: the writer connection's hook sees
	// every changed row, whatever wrote it.
	if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
		return w.Write(ctx, 1, "UPDATE rtps SET description = 'rewritten' WHERE id = ?", r.ID)
	}); err != nil {
		t.Fatal(err)
	}
	if got := cachedRead(t, s, m, r.ID, now, payd.RTPActive); got.Description != "rewritten" {
		t.Errorf("description after a raw update = %q", got.Description)
	}

	// Another connection: another process, or another store on the file.
	b, err := sqlstore.Open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CancelRTP(ctx, m.ID, r.ID, "from elsewhere", now); err != nil {
		t.Fatal(err)
	}
	time.Sleep(sqlstore.RTPCacheMaxAge + time.Millisecond)
	if got, err := s.RTP(ctx, m.ID, r.ID, now); err != nil || got.Status != payd.RTPCancelled {
		t.Fatalf("after another connection cancelled it: %v, %v", got, err)
	}
	cachedRead(t, s, m, r.ID, now, payd.RTPCancelled)

	// Another merchant's id is not found, cached or not.
	other, _ := newMerchant(t, s, 0)
	if _, err := s.RTP(ctx, other.ID, r.ID, now); err != payd.ErrNotFound {
		t.Errorf("another merchant's RTP: %v", err)
	}
}

// cacheHits is how many RTP reads s answered from memory.
func cacheHits(s *sqlstore.Store) int64 {
	st, _ := s.WriterStats()
	return st.RTPCacheHits
}

// TestRTPCacheHoldsNewRTPs: on SQLite an RTP is answered from memory from
// its first read on, exactly as the table holds it (times to the
// millisecond), as another store reading the table finds it.
func TestRTPCacheHoldsNewRTPs(t *testing.T) {
	s, u := storetest.SQLite(t)
	b, err := sqlstore.Open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m, _ := newMerchant(t, s, 0)
	// The cache answers only while its poll is recent, which a loaded
	// machine may delay: a first read the cache did not answer is retried
	// with a new RTP.
	for attempt := 0; ; attempt++ {
		now := time.Now() // nanoseconds: the table keeps milliseconds
		r := newRTP(t, s, m, "37369112221", now)
		before := cacheHits(s)
		got, err := s.RTP(ctx, m.ID, r.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if cacheHits(s) == before {
			if attempt == 20 {
				t.Fatal("no new RTP was answered from memory at its first read")
			}
			continue
		}
		want, err := b.RTP(ctx, m.ID, r.ID, now)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("first read from memory %+v; the table holds %+v (%v)", got, want, err)
		}
		return
	}
}

// TestRTPCacheReadsAfterAcknowledgedChanges: readers hammer RTPs while they
// change (SQLite: filling the cache from reads that race the commits); a
// read that starts after a change was acknowledged shows the change.
func TestRTPCacheReadsAfterAcknowledgedChanges(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		const n = 150
		rtps := make([]*payd.RTP, n)
		for i := range rtps {
			rtps[i] = newRTP(t, s, m, "37369112221", now)
		}
		cancelled := make([]atomic.Bool, n)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var reads, stale atomic.Int64
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; ; i = (i + 7) % n {
					select {
					case <-stop:
						return
					default:
					}
					done := cancelled[i].Load()
					got, err := s.RTP(ctx, m.ID, rtps[i].ID, now)
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					reads.Add(1)
					if done && got.Status != payd.RTPCancelled {
						stale.Add(1)
					}
				}
			}()
		}
		for i := range rtps {
			if _, err := s.CancelRTP(ctx, m.ID, rtps[i].ID, "r", now); err != nil {
				t.Fatal(err)
			}
			cancelled[i].Store(true)
		}
		close(stop)
		wg.Wait()
		if stale.Load() != 0 {
			t.Errorf("%d of %d reads showed an RTP as it was before an acknowledged cancel", stale.Load(), reads.Load())
		}
		if reads.Load() < n {
			t.Errorf("only %d reads ran beside %d changes", reads.Load(), n)
		}
	})
}
