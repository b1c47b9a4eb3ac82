package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestSearchTotalsFollowNewRTPs: an instance answers a repeated
// description search's total from the one it counted while the merchant
// has the same number of RTPs, and counts again as soon as the merchant
// has one more, created by this instance or another; every total equals
// the matches actually listed, on both engines.
func TestSearchTotalsFollowNewRTPs(t *testing.T) {
	storetest.FastEngines(t, func(t *testing.T, a *sqlstore.Store, u string) {
		b, err := sqlstore.Open(u) // another instance on the same database
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := b.SetSecretKey(storetest.SecretKey); err != nil {
			t.Fatal(err)
		}
		var hits atomic.Int64
		defer sqlstore.OnKeptTotal(func() { hits.Add(1) })()
		now := storetest.Epoch
		m, _ := newMerchant(t, a, 100)
		other, _ := newMerchant(t, a, 100)
		at := func(i int) time.Time { return now.Add(time.Duration(i) * time.Second) }
		for i, d := range []string{"Coffee beans", "Tea", "coffee cup", "Tea pot", "Iced COFFEE"} {
			newDescribedRTP(t, a, m, "+37360000001", d, at(i))
		}
		created := 5
		later := at(100)

		// check lists the whole search and a page of it from a, wants
		// their totals equal to the matches listed, and wants the page
		// answered from a kept total or not.
		check := func(what string, f payd.RTPFilter, want int, kept bool) {
			t.Helper()
			whole := f
			whole.Count, whole.Offset = 0, 0
			all, total, err := a.RTPs(ctx, whole, later)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range all {
				if r.MerchantID != f.MerchantID || !strings.Contains(strings.ToLower(r.Description), strings.ToLower(f.Description)) {
					t.Fatalf("%s: %s (%q) does not match %q", what, r.ID, r.Description, f.Description)
				}
				ids = append(ids, r.ID)
			}
			if total != len(all) || total != want {
				t.Fatalf("%s: the whole list has %d rows, total %d; want %d", what, len(all), total, want)
			}
			before := hits.Load()
			page, total, err := a.RTPs(ctx, f, later)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range page {
				got = append(got, r.ID)
			}
			wantPage := ids[min(f.Offset, len(ids)):min(f.Offset+f.Count, len(ids))]
			if total != want || !slices.Equal(got, wantPage) && len(got)+len(wantPage) > 0 {
				t.Errorf("%s: page %v total %d; want %v total %d", what, got, total, wantPage, want)
			}
			if k := hits.Load() > before; k != kept {
				t.Errorf("%s: answered from a kept total: %v, want %v", what, k, kept)
			}
		}
		coffee := payd.RTPFilter{MerchantID: m.ID, Description: "coffee", Count: 2}
		check("first search", coffee, 3, true) // the whole list before it counted
		for _, off := range []int{2, 4} {
			page := coffee
			page.Offset = off
			check("next page", page, 3, true)
		}
		byAmount := coffee
		byAmount.SortBy, byAmount.Desc = "amount", true
		check("another order", byAmount, 3, true)

		newDescribedRTP(t, b, m, "+37360000001", "COFFEE to go", at(created))
		created++
		check("after another instance created a match", coffee, 4, true)

		newDescribedRTP(t, b, m, "+37360000001", "Juice", at(created))
		created++
		check("after another instance created a non-match", coffee, 4, true)

		newDescribedRTP(t, b, other, "+37360000001", "Coffee", at(created))
		check("after another merchant's match", coffee, 4, true)

		priced := coffee
		amount := payd.Money(5000)
		priced.Amount = &amount
		check("with an amount", priced, 4, true)
		priced.Amount = new(payd.Money)
		check("with another amount", priced, 0, true)

		// A status as of now changes with no new RTP: never kept.
		open := coffee
		open.Statuses = []payd.RTPStatus{payd.RTPActive}
		check("by status", open, 4, false)
		check("by status, now expired", payd.RTPFilter{MerchantID: m.ID, Description: "coffee", Count: 2,
			Statuses: []payd.RTPStatus{payd.RTPExpired}}, 0, false)
		if hits.Load() == 0 {
			t.Fatal("no search was answered from a kept total")
		}
	})
}

// TestIdenticalSearchesShareOneReading: description searches that find
// no kept total share the reading of one of them while it runs, the same
// search for the same page with the merchant's RTPs unchanged; each gets
// the total, its own copies of the page's RTPs, and a search whose
// client goes away meanwhile gets its context's error without stopping
// the others' reading. A search for another page reads for itself.
func TestIdenticalSearchesShareOneReading(t *testing.T) {
	storetest.FastEngines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := storetest.Epoch
		m, _ := newMerchant(t, s, 100)
		for i, d := range []string{"Coffee beans", "Tea", "coffee cup", "Iced COFFEE"} {
			newDescribedRTP(t, s, m, "+37360000001", d, now.Add(time.Duration(i)*time.Second))
		}
		var reads atomic.Int64
		leading, release := make(chan struct{}), make(chan struct{})
		defer sqlstore.OnSearchRead(func() {
			if reads.Add(1) == 1 {
				close(leading)
				<-release
			}
		})()
		f := payd.RTPFilter{MerchantID: m.ID, Description: "coffee", Count: 2}
		type answer struct {
			page  []*payd.RTP
			total int
			err   error
		}
		search := func(ctx context.Context, f payd.RTPFilter) chan answer {
			c := make(chan answer, 1)
			go func() {
				page, total, err := s.RTPs(ctx, f, now.Add(time.Minute))
				c <- answer{page, total, err}
			}()
			return c
		}
		first := search(ctx, f)
		<-leading
		var waiting []chan answer
		for range 3 {
			waiting = append(waiting, search(ctx, f))
		}
		gone, leave := context.WithCancel(ctx)
		left := search(gone, f)
		time.Sleep(200 * time.Millisecond) // all of them waiting for the first's reading
		leave()
		if a := <-left; !errors.Is(a.err, context.Canceled) {
			t.Fatalf("a search whose client went away: %v, want its context's error", a.err)
		}
		close(release)
		answers := []answer{<-first}
		for _, c := range waiting {
			answers = append(answers, <-c)
		}
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d readings for 5 identical searches, want 1", n)
		}
		seen := map[*payd.RTP]bool{}
		for i, a := range answers {
			if a.err != nil || a.total != 3 || len(a.page) != 2 {
				t.Fatalf("search %d: %d RTPs of %d, %v; want 2 of 3", i, len(a.page), a.total, a.err)
			}
			for k, r := range a.page {
				if seen[r] {
					t.Fatalf("search %d shares an RTP's record with another", i)
				}
				seen[r] = true
				if r.ID != answers[0].page[k].ID {
					t.Fatalf("search %d: page %s, want the first's %s", i, r.ID, answers[0].page[k].ID)
				}
			}
		}
		// Another page is another reading; the total is kept by now.
		next := f
		next.Offset = 2
		if a := <-search(ctx, next); a.err != nil || a.total != 3 || len(a.page) != 1 {
			t.Fatalf("next page: %d RTPs of %d, %v", len(a.page), a.total, a.err)
		}
	})
}
