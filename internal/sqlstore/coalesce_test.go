package sqlstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

// TestCoalescedRTPReads: on PostgreSQL concurrent reads of RTPs by id share
// statements, and each still gets exactly its own answer: its RTP, a
// private copy when two ask for the same one, not found for another
// merchant's or a missing id, and what was written just before it asked.
func TestCoalescedRTPReads(t *testing.T) {
	s, _ := storetest.Postgres(t)
	now := storetest.Epoch
	a, _ := newMerchant(t, s, 100)
	b, _ := newMerchant(t, s, 100)
	var ra, rb []*payd.RTP
	for i := 0; i < 20; i++ {
		ra = append(ra, newRTP(t, s, a, "37369000001", now))
		rb = append(rb, newRTP(t, s, b, "37369000002", now))
	}
	before := s.CoalescedStatements()
	const readers, rounds = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, readers*rounds)
	start := make(chan struct{})
	for g := 0; g < readers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-start
			for i := 0; i < rounds; i++ {
				mine, theirs := ra[(g+i)%len(ra)], rb[(g+i)%len(rb)]
				r, err := s.RTP(ctx, a.ID, mine.ID, now)
				switch {
				case err != nil:
					errs <- err
				case r.ID != mine.ID || r.MerchantID != a.ID || r.Amount != mine.Amount:
					errs <- errors.New("read " + mine.ID + " answered " + r.ID)
				default:
					r.Description = "changed by its reader" // must not reach another reader
				}
				if _, err := s.RTP(ctx, a.ID, theirs.ID, now); !errors.Is(err, payd.ErrNotFound) {
					errs <- errors.New("another merchant's RTP: want not found")
				}
				if _, err := s.RTP(ctx, a.ID, payd.NewID(now), now); !errors.Is(err, payd.ErrNotFound) {
					errs <- errors.New("a missing RTP: want not found")
				}
				if r, err := s.RTP(ctx, "", theirs.ID, now); err != nil || r.MerchantID != b.ID || r.Description != "Order" {
					errs <- errors.New("a read for the payer page")
				}
			}
		}(g)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	reads := int64(readers * rounds * 4)
	statements := s.CoalescedStatements() - before
	t.Logf("%d reads in %d statements", reads, statements)
	if statements >= reads {
		t.Fatalf("%d reads took %d statements: none shared", reads, statements)
	}

	// Written, then read at once: the read's statement starts after it.
	for i := 0; i < 20; i++ {
		r := newRTP(t, s, a, "37369000003", now)
		if _, err := s.CancelRTP(ctx, a.ID, r.ID, "", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		got, err := s.RTP(ctx, a.ID, r.ID, now.Add(time.Second))
		if err != nil || got.Status != payd.RTPCancelled {
			t.Fatalf("read after a write: %+v %v", got, err)
		}
	}
}
