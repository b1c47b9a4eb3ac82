package sqlstore

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"payd"
)

// TestRTPListPlansUseIndexes prints the PostgreSQL plan of the RTP list for
// every sort and the main filters, and checks that each reaches the rtps
// table through an index (with sequential scans disabled, the planner must
// still find one; a missing index would leave only a seq scan). The plans
// on a million rows are in BENCHMARKS.md.
func TestRTPListPlansUseIndexes(t *testing.T) {
	s := openPostgresForPlans(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	amount := payd.Money(5000)
	from := now.Add(-time.Hour)
	filters := map[string]payd.RTPFilter{
		"default":          {},
		"sort amount desc": {SortBy: "amount", Desc: true},
		"sort orderId":     {SortBy: "orderId"},
		"sort expiresAt":   {SortBy: "expiresAt"},
		"sort status":      {SortBy: "status"},
		"status Active":    {Statuses: []payd.RTPStatus{payd.RTPActive}},
		"orderId":          {OrderID: "o-1"},
		"amount":           {Amount: &amount},
		"terminalId":       {TerminalID: "T1"},
		"created range":    {CreatedFrom: &from, CreatedTo: &now},
	}
	for name, f := range filters {
		f.MerchantID, f.Count = "m", 50
		_, _, q, args := s.rtpListQueries(f, now)
		rows, err := conn.QueryContext(ctx, "EXPLAIN "+s.rebind(q), args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan.WriteString(line + "\n")
		}
		rows.Close()
		t.Logf("%s:\n%s", name, plan.String())
		if !strings.Contains(plan.String(), "Index") || strings.Contains(plan.String(), "Seq Scan on rtps") {
			t.Errorf("%s: the list does not use an index:\n%s", name, plan.String())
		}
	}
}

// openPostgresForPlans opens the test database in a fresh schema (the
// storetest package cannot be imported from here without a cycle).
func openPostgresForPlans(t *testing.T) *Store {
	base := os.Getenv("PAYD_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PAYD_TEST_POSTGRES_URL is not set")
	}
	admin, err := Open(base)
	if err != nil {
		t.Fatal(err)
	}
	schema := "plan_" + time.Now().Format("150405_000000")
	if _, err := admin.w.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("postgres unreachable: %v", err)
	}
	t.Cleanup(func() { admin.w.Exec("DROP SCHEMA " + schema + " CASCADE"); admin.Close() })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	s, err := Open(base + sep + "search_path=" + schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}
