package sqlstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"payd"
)

// TestSegmentedSortsMatchOneSort: the status and orderId sorts read a page
// segment by segment (segmentPage); every page must be the same slice of
// the list that one ORDER BY over the whole list gives, in both
// directions, at any offset, with filters, with RTPs whose deadline has
// passed but which still say Active or Created, and with missing order ids.
func TestSegmentedSortsMatchOneSort(t *testing.T) {
	onBothEngines(t, checkSegments)
}

func checkSegments(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	seedMerchants(t, s, []string{"m1", "m2"}, 600, now)
	if _, err := s.w.Exec("UPDATE rtps SET order_id = NULL WHERE amount % 3 = 0"); err != nil {
		t.Fatal(err)
	}
	// 300 hours on, about a third of the open RTPs are past their deadline
	// and not yet written Expired.
	at := now.Add(300 * time.Hour)
	ids := func(f payd.RTPFilter) []string {
		t.Helper()
		rs, _, err := s.RTPs(ctx, f, at)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	lazy := 0
	for _, r := range mustRTPs(t, s, payd.RTPFilter{MerchantID: "m1"}, now) {
		if (r.Status == payd.RTPActive || r.Status == payd.RTPCreated) && !r.ExpiresAt.After(at) {
			lazy++
		}
	}
	if lazy < 20 {
		t.Fatalf("only %d RTPs expire lazily: the test would not show the Expired segment", lazy)
	}
	filters := []payd.RTPFilter{{}, {Statuses: []payd.RTPStatus{payd.RTPExpired, payd.RTPActive}}, {TerminalID: "T0"}, {Description: "shirt"}}
	pages := 0
	for _, sortBy := range []string{"status", "orderId"} {
		for _, desc := range []bool{false, true} {
			for _, base := range filters {
				f := base
				f.MerchantID, f.SortBy, f.Desc = "m1", sortBy, desc
				all := ids(f) // Count 0: one sort over the whole list
				if len(all) == 0 {
					t.Fatalf("%+v: empty", f)
				}
				for _, off := range []int{0, 1, 7, 49, len(all) - 5, len(all) + 3} {
					for _, n := range []int{1, 10, 100} {
						f.Offset, f.Count = max(off, 0), n
						want := all[min(f.Offset, len(all)):min(f.Offset+n, len(all))]
						if got := ids(f); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
							t.Errorf("sortBy=%s desc=%v %+v offset %d count %d:\n got %v\nwant %v", sortBy, desc, base, f.Offset, n, got, want)
						}
						pages++
					}
				}
			}
		}
	}
	// A status filter's total adds one count per stored status it covers
	// (rtpListQueries): it must equal the RTPs of the whole list whose
	// status as of now is among those asked for, lazily expired ones too.
	whole := mustRTPs(t, s, payd.RTPFilter{MerchantID: "m1"}, at)
	for _, sts := range [][]payd.RTPStatus{{payd.RTPExpired}, {payd.RTPActive}, {payd.RTPCreated}, {payd.RTPAccepted},
		{payd.RTPExpired, payd.RTPActive}, {payd.RTPCreated, payd.RTPExpired, payd.RTPRejected}, {payd.RTPExpired, payd.RTPExpired}} {
		for _, terminal := range []string{"", "T4"} {
			want := 0
			for _, r := range whole {
				if slices.Contains(sts, r.Status) && (terminal == "" || r.TerminalID == terminal) {
					want++
				}
			}
			_, total, err := s.RTPs(context.Background(), payd.RTPFilter{MerchantID: "m1", Statuses: sts, TerminalID: terminal, Count: 5}, at)
			if err != nil || total != want || want == 0 {
				t.Errorf("statuses %v terminal %q: total %d, %v; want %d (and some)", sts, terminal, total, err, want)
			}
		}
	}
	t.Logf("%d pages equal to one sort's slices; %d RTPs expire lazily", pages, lazy)
}

func mustRTPs(t *testing.T, s *Store, f payd.RTPFilter, now time.Time) []*payd.RTP {
	t.Helper()
	rs, _, err := s.RTPs(context.Background(), f, now)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestDescriptionPagesAndCounts: on PostgreSQL a description search
// counts its matches in the page's own scan (a window count); on SQLite it
// walks the list's order when the count says the page is near (walkedRTPs)
// and reads the description index otherwise. Every page and its
// totalCount must equal what the whole list and a separate count give, at
// any offset (past the last match too), in every sort, whichever way the
// page was read, and only the merchant's own RTPs count.
func TestDescriptionPagesAndCounts(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s := openSQLiteForPlans(t)
		ways := map[string]int{}
		walked = func(how string) { ways[how]++ }
		defer func() { walked = nil }()
		checkDescriptionCounts(t, s)
		// Walks short enough to end before many pages do.
		defer func(n int) { walkRows = n }(walkRows)
		walkRows = 40
		checkDescriptionCounts(t, s)
		t.Logf("SQLite pages: %v", ways)
		for _, how := range []string{"walked", "long", "short"} {
			if ways[how] == 0 {
				t.Errorf("no page ended %q: %v", how, ways)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) { checkDescriptionCounts(t, openPostgresForPlans(t)) })
}

func checkDescriptionCounts(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if mustRTPs(t, s, payd.RTPFilter{MerchantID: "m1", Count: 1}, now) == nil {
		insertMerchants(t, s, []string{"m1", "m2"})
		if err := seedRTPs(ctx, s, []string{"m1", "m2"}, 600, now); err != nil {
			t.Fatal(err)
		}
		// The word of a few of the newest: a walk from the oldest finds
		// them late, past what the count led it to expect.
		if _, err := s.w.Exec(s.d.rebind("UPDATE rtps SET description = 'Rare Lamp-Oil' WHERE id IN (SELECT id FROM rtps WHERE merchant_id = 'm1' ORDER BY created_at DESC, id LIMIT 6)")); err != nil {
			t.Fatal(err)
		}
	}
	at := now.Add(300 * time.Hour)
	pages := 0
	for _, d := range []string{"shirt", "SHIRT", "e", "lamp-oil", "no such words"} {
		for _, sortBy := range []string{"", "amount", "expiresAt", "createdAt", "type"} {
			for _, desc := range []bool{false, true} {
				f := payd.RTPFilter{MerchantID: "m1", Description: d, SortBy: sortBy, Desc: desc}
				if _, _, _, _, counted := s.rtpListQueries(payd.RTPFilter{Description: d, Count: 1}, at, false); counted != (s.engine == Postgres) {
					t.Fatalf("a description page counts its matches: %v, want it on PostgreSQL only", counted)
				}
				if walks := s.descriptionWalk(payd.RTPFilter{Description: d, Count: 1, SortBy: sortBy}) != nil; walks != (s.engine == SQLite) {
					t.Fatalf("a description page walks: %v, want it on SQLite only", walks)
				}
				all := mustRTPs(t, s, f, at) // Count 0: the whole list, counted apart
				var want []string
				for _, r := range all {
					if r.MerchantID != "m1" || !strings.Contains(strings.ToLower(r.Description), strings.ToLower(d)) {
						t.Fatalf("%+v: %s (%s, %q) does not match", f, r.ID, r.MerchantID, r.Description)
					}
					want = append(want, r.ID)
				}
				if d == "no such words" && len(want) != 0 || d == "lamp-oil" && len(want) != 6 || len(d) < 6 && len(want) < 20 {
					t.Fatalf("%q: %d matches", d, len(want))
				}
				for _, off := range []int{0, 3, 60, len(want) - 2, len(want), len(want) + 10} {
					for _, n := range []int{1, 50} {
						f.Offset, f.Count = max(off, 0), n
						rs, total, err := s.RTPs(ctx, f, at)
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						for _, r := range rs {
							got = append(got, r.ID)
						}
						page := want[min(f.Offset, len(want)):min(f.Offset+n, len(want))]
						if total != len(want) || !slices.Equal(got, page) && len(got)+len(page) > 0 {
							t.Errorf("%+v: total %d, want %d; page\n got %v\nwant %v", f, total, len(want), got, page)
						}
						pages++
					}
				}
			}
		}
	}
	t.Logf("%d pages and counts equal to the whole list's", pages)
}
