package sqlstore

import (
	"context"
	"testing"
	"time"

	"payd"
)

// TestDescriptionSearchPlannedForItsWord: PostgreSQL plans a prepared
// statement once for any values after five runs when that generic plan
// looks no dearer, and for a description search the generic plan is the
// trigram index, which rechecks a heap row per candidate: a common word
// of a large merchant then costs many times what the creation index's
// entries do. Every description search runs unnamed, planned for its word
// at each run: after many searches of RTPs and QRs on one connection, none
// of its prepared statements searches a description.
func TestDescriptionSearchPlannedForItsWord(t *testing.T) {
	s := openPostgresForPlans(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ms := []string{"m1", "m2", "m3", "m4"}
	seedMerchants(t, s, ms, 20_000, now)
	s.r.SetMaxOpenConns(1) // every statement on the one session pg_prepared_statements shows
	shapes := []payd.RTPFilter{
		{Description: "shirt", Count: 20},                    // the page counting its matches
		{Description: "shirt", Count: 20, SortBy: "orderId"}, // counted apart
		{Description: "shirt", Count: 20, TerminalID: "T4"},  // with another filter
		{Description: "shirt", Count: 20, Statuses: []payd.RTPStatus{payd.RTPActive}},
	}
	runs := 0
	for i := 0; i < 12; i++ {
		for _, f := range shapes {
			f.MerchantID = ms[i%len(ms)]
			if _, _, err := s.RTPs(ctx, f, now); err != nil {
				t.Fatal(err)
			}
			runs++
		}
	}
	for i := 0; i < 12; i++ { // the QR list's search, by the same rule
		if _, _, err := s.QRs(ctx, QRFilter{MerchantID: ms[i%len(ms)], Description: "shirt", Count: 20}, now); err != nil {
			t.Fatal(err)
		}
		runs++
	}
	// This session's prepared statements that search a description (not
	// these queries of the view, whose text holds the pattern too).
	const searches = ` FROM pg_prepared_statements WHERE statement LIKE '%description% LIKE $%' AND statement NOT LIKE '%pg_prepared_statements%'`
	var prepared, generic int
	if err := s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(generic_plans), 0)`+searches).Scan(&prepared, &generic); err != nil {
		t.Fatal(err)
	}
	if prepared != 0 || generic != 0 {
		if rows, err := s.r.Query(`SELECT generic_plans, custom_plans, left(statement, 150)` + searches); err == nil {
			for rows.Next() {
				var g, c int
				var st string
				rows.Scan(&g, &c, &st)
				t.Logf("generic %d custom %d: %s", g, c, st)
			}
			rows.Close()
		}
		t.Errorf("after %d description searches: %d prepared statements searching descriptions, %d runs on a generic plan; want none", runs, prepared, generic)
	}
	// The check can fail: the statements of other lists are prepared.
	if _, _, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: "m1", Count: 20, TerminalID: "T4"}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE '%terminal_id%'`).Scan(&prepared); err != nil || prepared == 0 {
		t.Fatalf("a terminal list prepared %d statements (%v): pg_prepared_statements does not show this session's", prepared, err)
	}
}
