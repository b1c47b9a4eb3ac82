package sqlstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"payd"
)

// TestSearchFoldsRomanianAndRussian: a description search is case
// insensitive for the languages payd's payers and merchants write in, not
// only for ASCII. SQLite's own lower() and LIKE fold ASCII alone, so a
// search for "кофе" missed "Кофе" and one for "plată" missed "PLATĂ"; the
// RTP and QR searches must find them on both engines, whichever way the
// page is read (SQLite's walk, its description index, PostgreSQL's count).
func TestSearchFoldsRomanianAndRussian(t *testing.T) {
	onBothEngines(t, checkSearchFolds)
}

func checkSearchFolds(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	seedMerchants(t, s, []string{"m1", "m2"}, 400, now)
	words := []string{"Кофе и ЧАЙ", "PLATĂ pentru cafea", "Șervețele, Încălțăminte"}
	terminal := map[string]string{} // each word's RTP's terminal
	for i, w := range words {
		var id, term string
		if err := s.r.QueryRow(s.d.rebind("SELECT id, terminal_id FROM rtps WHERE merchant_id = 'm1' ORDER BY created_at DESC, id LIMIT 1 OFFSET ?"), 10*i+3).Scan(&id, &term); err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.Exec(s.d.rebind("UPDATE rtps SET description = ? WHERE id = ?"), w, id); err != nil {
			t.Fatal(err)
		}
		terminal[w] = term
		q := &payd.QR{ID: payd.NewID(now.Add(time.Duration(i) * time.Second)), MerchantID: "m1", Type: payd.QRStatic,
			AmountType: payd.AmountFree, Currency: "MDL", Status: payd.QRActive, Description: w, IdleFrom: now, CreatedAt: now, UpdatedAt: now}
		if err := s.CreateQR(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		search string
		want   string
	}{
		{"кофе", words[0]}, {"КОФЕ", words[0]}, {"чай", words[0]}, {"plată", words[1]}, {"PLATĂ", words[1]},
		{"Plată Pentru", words[1]}, {"șervețele", words[2]}, {"ÎNCĂLȚĂMINTE", words[2]},
	} {
		for _, f := range []payd.RTPFilter{
			{MerchantID: "m1", Description: c.search, Count: 20},
			{MerchantID: "m1", Description: c.search, Count: 20, SortBy: "amount", Desc: true},
			{MerchantID: "m1", Description: c.search, Count: 20, TerminalID: terminal[c.want]}, // with another filter
			{MerchantID: "m1", Description: c.search},                                          // the whole list
		} {
			rs, total, err := s.RTPs(ctx, f, now)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.Description)
			}
			if total != 1 || !slices.Equal(got, []string{c.want}) {
				t.Errorf("RTPs %+v: total %d, %q; want %q", f, total, got, c.want)
			}
		}
		qs, total, err := s.QRs(ctx, QRFilter{MerchantID: "m1", Description: c.search, Count: 20}, now)
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(qs) != 1 || qs[0].Description != c.want {
			t.Errorf("QRs %q: total %d, %d items; want %q", c.search, total, len(qs), c.want)
		}
	}
}
