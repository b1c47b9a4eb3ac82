package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
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
	concurrently(t, readers, func(g int) error {
		for i := 0; i < rounds; i++ {
			mine, theirs := ra[(g+i)%len(ra)], rb[(g+i)%len(rb)]
			r, err := s.RTP(ctx, a.ID, mine.ID, now)
			switch {
			case err != nil:
				return err
			case r.ID != mine.ID || r.MerchantID != a.ID || r.Amount != mine.Amount:
				return errors.New("read " + mine.ID + " answered " + r.ID)
			}
			r.Description = "changed by its reader" // must not reach another reader
			if _, err := s.RTP(ctx, a.ID, theirs.ID, now); !errors.Is(err, payd.ErrNotFound) {
				return errors.New("another merchant's RTP: want not found")
			}
			if _, err := s.RTP(ctx, a.ID, payd.NewID(now), now); !errors.Is(err, payd.ErrNotFound) {
				return errors.New("a missing RTP: want not found")
			}
			if r, err := s.RTP(ctx, "", theirs.ID, now); err != nil || r.MerchantID != b.ID || r.Description != "Order" {
				return errors.New("a read for the payer page")
			}
		}
		return nil
	})
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

// TestCoalescedRTPCreates: on PostgreSQL concurrent creates share insert
// statements, and every RTP reads back exactly as created, its optional
// fields absent or present; a batch holding a row the database refuses
// stores every other row and fails that one alone.
func TestCoalescedRTPCreates(t *testing.T) {
	s, _ := storetest.Postgres(t)
	now := storetest.Epoch
	m, _ := newMerchant(t, s, 100)
	rtp := func(i int) *payd.RTP {
		r := &payd.RTP{ID: payd.NewID(now), MerchantID: m.ID, Alias: fmt.Sprintf("3736900%04d", i), Amount: payd.Money(100 + i),
			Currency: "MDL", Description: fmt.Sprintf("Order %d", i), Status: payd.RTPCreated,
			CreatedAt: now.Add(time.Duration(i) * time.Millisecond), UpdatedAt: now.Add(time.Duration(i) * time.Millisecond),
			ExpiresAt: now.Add(time.Hour + time.Duration(i)*time.Second)}
		if i%2 == 1 { // every optional column present
			r.OrderID, r.TerminalID, r.CallbackURL, r.RedirectURL = fmt.Sprintf("o-%d", i), "t-1", "https://merchant.example/cb", "https://merchant.example/back"
			r.CancelReason, r.PayID, r.AutoAction, r.AutoAt = "reason", payd.NewID(now), "accept", now.Add(time.Minute)
		}
		return r
	}
	check := func(want *payd.RTP) {
		t.Helper()
		got, err := s.RTP(ctx, m.ID, want.ID, now)
		if err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		w := *want
		w.Observe(now)
		if !reflect.DeepEqual(*got, w) {
			t.Fatalf("read back %+v\nwant %+v", *got, w)
		}
	}

	before := s.CoalescedInserts()
	const writers, rounds = 64, 10
	created := make([][]*payd.RTP, writers)
	concurrently(t, writers, func(g int) error {
		for i := 0; i < rounds; i++ {
			r := rtp(g*rounds + i)
			if err := s.CreateRTP(ctx, m, r); err != nil {
				return err
			}
			created[g] = append(created[g], r)
		}
		return nil
	})
	statements := s.CoalescedInserts() - before
	t.Logf("%d creates in %d statements", writers*rounds, statements)
	if statements >= writers*rounds {
		t.Fatalf("%d creates took %d statements: none shared", writers*rounds, statements)
	}
	for _, rs := range created {
		for _, r := range rs {
			check(r)
		}
	}

	// A create whose request ends while it waits: it fails only if its row
	// was not written (queued or not, both happen: the select is random).
	for i := 0; i < 100; i++ {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		r := rtp(2000 + i)
		err := s.CreateRTP(cancelled, m, r)
		_, rerr := s.RTP(ctx, m.ID, r.ID, now)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("a create with its context ended: %v, its row read: %v", err, rerr)
		}
	}

	// One row the database refuses (a zero amount breaks its CHECK).
	batch := []*payd.RTP{rtp(1001), rtp(1002), rtp(1003), rtp(1004)}
	batch[2].Amount = 0
	errs2 := s.InsertRTPsTogether(batch)
	for i, err := range errs2 {
		if (err != nil) != (i == 2) {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	check(batch[0])
	check(batch[1])
	check(batch[3])
	if _, err := s.RTP(ctx, m.ID, batch[2].ID, now); !errors.Is(err, payd.ErrNotFound) {
		t.Fatalf("the refused row: %v", err)
	}
	// A row whose id exists already (a retry of a committed create) fails
	// without a second row.
	if errs := s.InsertRTPsTogether([]*payd.RTP{batch[0], rtp(1005)}); errs[0] == nil || errs[1] != nil {
		t.Fatalf("an existing id beside a new one: %v", errs)
	}
	err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
		n, err := w.Count(ctx, "SELECT count(*) FROM rtps WHERE id = ?", batch[0].ID)
		if err == nil && n != 1 {
			err = fmt.Errorf("%d rows of one id", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCoalescedCreatesDatabaseAway: a coalesced insert that finds the
// database away is not retried row by row (a retry of a statement whose
// outcome is unknown would meet its own committed rows): each create gets
// the error, which says the database is unavailable, and once it is back
// the same RTPs insert as new.
func TestCoalescedCreatesDatabaseAway(t *testing.T) {
	s, proxy := storetest.PostgresBehindProxy(t)
	now := storetest.Epoch
	m, _ := newMerchant(t, s, 100)
	var batch []*payd.RTP
	for i := range 3 {
		batch = append(batch, &payd.RTP{ID: payd.NewID(now), MerchantID: m.ID, Alias: "37369000001", Amount: payd.Money(100 + i),
			Currency: "MDL", Description: "away", Status: payd.RTPCreated, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)})
	}
	proxy.Cut()
	before := s.CoalescedInserts()
	for i, err := range s.InsertRTPsTogether(batch) {
		if !sqlstore.Unavailable(err) {
			t.Errorf("row %d with the database away: %v, want an unavailable error", i, err)
		}
	}
	if n := s.CoalescedInserts() - before; n != 1 {
		t.Errorf("%d statements for a batch with the database away, want 1 (no row-by-row retry)", n)
	}
	proxy.Restore()
	var errs []error
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if errs = s.InsertRTPsTogether(batch); !sqlstore.Unavailable(errors.Join(errs...)) {
			break // the pool reconnected
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("row %d once the database is back: %v", i, err)
		}
	}
}

// concurrently runs f(0) … f(n-1) in n goroutines released at once and
// fails t with the first error any of them returns.
func concurrently(t *testing.T, n int, f func(g int) error) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-start
			errs <- f(g)
		}(g)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCoalescedCreatesWithOrders: with the rails taking orders, concurrent
// RTP creates on PostgreSQL share statements and each RTP is written with
// its pain.013 order, on both engines: no RTP without its order.
func TestCoalescedCreatesWithOrders(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		m, _ := newMerchant(t, s, 0)
		before := s.CoalescedInserts()
		const n = 64
		concurrently(t, n, func(g int) error {
			amount, exp := payd.Money(100+g), storetest.Epoch.Add(time.Hour)
			r, err := payd.NewRTP(payd.RTPInput{Alias: "37369000001", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "x"}, m.ID, storetest.Epoch)
			if err != nil {
				return err
			}
			return s.CreateRTP(ctx, m, r)
		})
		orders, err := s.ClaimOrders(ctx, "t", storetest.Epoch.Add(time.Minute), time.Minute, 1000)
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string]bool{}
		for _, o := range orders {
			if o.Kind == payd.OrderSendRTP {
				sent[o.ObjectID] = true
			}
		}
		rs, _, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m.ID, Count: 1000}, storetest.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != n || len(sent) != n {
			t.Fatalf("%d RTPs, %d pain.013 orders; want %d of each", len(rs), len(sent), n)
		}
		for _, r := range rs {
			if !sent[r.ID] {
				t.Errorf("RTP %s has no order", r.ID)
			}
		}
		if s.Engine() == sqlstore.Postgres {
			t.Logf("%d creates in %d statements", n, s.CoalescedInserts()-before)
		}
	})
}
