package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/seed"
)

// TestRTPListPlansUseIndexes prints the plans of the RTP list's count and
// page queries for every filter and sort of the contract (and, for a
// search whose total an instance keeps, its page read with the total
// known and the merchant's number of RTPs: totals.go), on both engines,
// and checks that each reaches the rtps table through an index of the
// merchant: on PostgreSQL with sequential scans disabled the planner must
// still find one (a missing index leaves only a seq scan); on SQLite every
// access must be a SEARCH (a SCAN reads the whole table or index).
func TestRTPListPlansUseIndexes(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		s := openSQLiteForPlans(t)
		checkPlans(t, s, "EXPLAIN QUERY PLAN ", func(plan string) bool {
			return (strings.Contains(plan, "SEARCH rtps USING") || strings.Contains(plan, "SEARCH rtp_counts USING") ||
				strings.Contains(plan, "SEARCH rtp_status_counts USING")) && !strings.Contains(plan, "SCAN rtps")
		})
	})
	t.Run("postgres", func(t *testing.T) {
		s := openPostgresForPlans(t)
		checkPlans(t, s, "EXPLAIN ", func(plan string) bool {
			return strings.Contains(plan, "Index") && !strings.Contains(plan, "Seq Scan on rtps")
		})
	})
}

// RTPListShapes are the list's shapes the benchmarks time: every filter and
// sort of spec §3.5.
func RTPListShapes(now time.Time) map[string]payd.RTPFilter {
	from, to := now.Add(-6*time.Hour), now.Add(-3*time.Hour)
	amount := payd.Money(1234)
	return map[string]payd.RTPFilter{
		"default": {}, "desc": {Desc: true}, "sort amount": {SortBy: "amount"}, "sort amount desc": {SortBy: "amount", Desc: true},
		"sort orderId": {SortBy: "orderId"}, "sort orderId desc": {SortBy: "orderId", Desc: true},
		"sort status": {SortBy: "status"}, "sort status desc": {SortBy: "status", Desc: true},
		"sort expiresAt": {SortBy: "expiresAt"}, "sort expiresAt desc": {SortBy: "expiresAt", Desc: true},
		"status Active": {Statuses: []payd.RTPStatus{payd.RTPActive}}, "status Expired": {Statuses: []payd.RTPStatus{payd.RTPExpired}},
		"status Accepted": {Statuses: []payd.RTPStatus{payd.RTPAccepted}},
		"amount":          {Amount: &amount}, "orderId": {OrderID: "ord-42"}, "terminalId": {TerminalID: "T7"}, "rtpId": {RTPID: "x"},
		"description":   {Description: "coffee"},
		"created range": {CreatedFrom: &from, CreatedTo: &to}, "expires range": {ExpiresFrom: &from, ExpiresTo: &to},
		"status Accepted sort amount desc": {Statuses: []payd.RTPStatus{payd.RTPAccepted}, SortBy: "amount", Desc: true},
	}
}

func checkPlans(t *testing.T, s *Store, explain string, usesIndex func(plan string) bool) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	// Plans follow the statistics: 20,000 RTPs over 10 merchants, analysed.
	var ms []string
	for i := 0; i < 10; i++ {
		ms = append(ms, fmt.Sprintf("m%d", i))
	}
	insertMerchants(t, s, ms)
	if err := seedRTPs(ctx, s, ms, 20_000, now); err != nil {
		t.Fatal(err)
	}
	// A seeded database is in steady state: no open RTP past its deadline
	// (the expiry loop would have written it Expired, at its deadline).
	var overdue, expiredLate int
	if err := s.r.QueryRowContext(ctx, s.d.rebind("SELECT (SELECT COUNT(*) FROM rtps WHERE status IN ('Created','Active') AND expires_at <= ?), "+
		"(SELECT COUNT(*) FROM rtps WHERE status = 'Expired' AND updated_at = expires_at AND expires_at > created_at)"), now.UnixMilli()).Scan(&overdue, &expiredLate); err != nil {
		t.Fatal(err)
	}
	if overdue != 0 || expiredLate == 0 {
		t.Fatalf("seeded: %d open RTPs past their deadline (want none), %d written Expired at their deadline (want some)", overdue, expiredLate)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if s.engine == SQLite {
		// The plans below come from sqlite_stat1 alone: no samples, whose
		// presence re-plans statements at each new bound value (016).
		var stat1, stat4 int
		if err := conn.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM sqlite_stat1), (SELECT COUNT(*) FROM sqlite_stat4)").Scan(&stat1, &stat4); err != nil {
			t.Fatal(err)
		}
		if stat1 == 0 || stat4 != 0 {
			t.Fatalf("after seeding: %d rows of sqlite_stat1 (want some) and %d of sqlite_stat4 (want none)", stat1, stat4)
		}
	}
	if s.engine == Postgres {
		if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range RTPListShapes(now) {
		f.MerchantID, f.Count = "m0", 50
		countQ, countArgs, q, args, _ := s.rtpListQueries(f, now, false)
		type query struct {
			what string
			q    string
			args []any
		}
		queries := []query{{"count", countQ, countArgs}, {"page", q, args}}
		if _, kept := fixedSearchKey(f); kept { // a search whose total is kept (totals.go)
			_, _, q, args, _ := s.rtpListQueries(f, now, true)
			queries = append(queries, query{"page, total kept", q, args},
				query{"merchant's number", merchantRTPsQ, []any{f.MerchantID}})
		}
		for _, qa := range queries {
			plan := checkPlan(t, s, conn, explain, name+" "+qa.what, qa.q, qa.args, usesIndex)
			// Through the description index, or on PostgreSQL an index-only
			// scan of the creation index, which carries the description.
			if name == "description" && qa.what != "merchant's number" && !strings.Contains(plan, "rtps_merchant_description") &&
				!(s.engine == Postgres && coveringCreated.MatchString(plan)) {
				t.Errorf("description %s: not through an index holding the description:\n%s", qa.what, plan)
			}
			// A status filter alone counts from the kept counts (017), and the
			// open RTPs past their deadline from the partial index of open ones.
			if qa.what == "count" && strings.HasPrefix(name, "status ") &&
				(!strings.Contains(plan, "rtp_status_counts") || (f.Statuses[0] != payd.RTPAccepted) != strings.Contains(plan, "rtps_open_merchant")) {
				t.Errorf("%s count: not from the kept counts and the open RTPs' index:\n%s", name, plan)
			}
		}
		if w := s.descriptionWalk(f); w != nil { // SQLite's walk of a description search
			checkPlan(t, s, conn, explain, name+" walk count", w.countQ, w.args, usesIndex)
			checkPlan(t, s, conn, explain, name+" walk", w.walkQ, append(append([]any{}, w.args...), 100), usesIndex)
		}
	}
	// The expiry pass reads the partial indexes of open objects by deadline.
	for _, due := range []struct {
		q, index string
		args     []any
	}{
		{dueRTPs, "rtps_open_expiry", []any{"Active", now.UnixMilli(), 500}},
		{dueCheckouts, "checkouts_due", []any{"Initialized", now.UnixMilli(), 500}},
		{dueIdleQRs, "qrs_due_idle", []any{"Active", now.UnixMilli(), 500}},
		{dueIdleExtensions, "qrs_due_idle", []any{now.UnixMilli(), 1000}},
	} {
		checkPlan(t, s, conn, explain, "due "+due.index, due.q, due.args, func(plan string) bool {
			return strings.Contains(plan, due.index)
		})
	}
}

// coveringCreated is an index-only scan, either way, of PostgreSQL's
// creation index, which carries the description.
var coveringCreated = regexp.MustCompile(`Index Only Scan (Backward )?using rtps_merchant_created `)

// checkPlan explains q, checks that it reaches rtps through an index and
// returns the plan.
func checkPlan(t *testing.T, s *Store, conn *sql.Conn, explain, what, q string, args []any, usesIndex func(plan string) bool) string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), explain+s.d.rebind(q), args...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer rows.Close()
	var plan strings.Builder
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		rows.Scan(ptrs...)
		fmt.Fprintf(&plan, "%s\n", vals[len(vals)-1])
	}
	t.Logf("%s:\n%s", what, plan.String())
	if !usesIndex(plan.String()) {
		t.Errorf("%s: not through the index it needs:\n%s", what, plan.String())
	}
	return plan.String()
}

// openSQLiteForPlans opens a migrated SQLite store in t's directory.
func openSQLiteForPlans(t *testing.T) *Store { return migrated(t, openSQLiteBare(t)) }

// openSQLiteBare opens an SQLite store in t's directory, not migrated.
func openSQLiteBare(t *testing.T) *Store {
	s, err := Open("sqlite:" + filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func migrated(t *testing.T, s *Store) *Store {
	t.Helper()
	if _, err := s.Migrate(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}

// onBothEngines runs check on a fresh migrated store of each engine.
func onBothEngines(t *testing.T, check func(*testing.T, *Store)) {
	t.Run("sqlite", func(t *testing.T) { check(t, openSQLiteForPlans(t)) })
	t.Run("postgres", func(t *testing.T) { check(t, openPostgresForPlans(t)) })
}

// seedMerchants adds bare merchants with these ids and n RTPs across them.
// seedRTPs seeds n RTPs over the merchants ids (package seed).
func seedRTPs(ctx context.Context, s *Store, ids []string, n int, now time.Time) error {
	return seed.RTPs(ctx, s.w, s.engine == Postgres, ids, n, now)
}

func seedMerchants(t *testing.T, s *Store, ids []string, n int, now time.Time) {
	t.Helper()
	insertMerchants(t, s, ids)
	if err := seedRTPs(context.Background(), s, ids, n, now); err != nil {
		t.Fatal(err)
	}
}

// insertMerchants adds bare merchants with these ids, for seeded RTPs.
func insertMerchants(t *testing.T, s *Store, ids []string) {
	for _, m := range ids {
		if _, err := s.w.Exec(s.d.rebind(`INSERT INTO merchants (id, name, client_id, secret_hash, secret_version, signature_key, active,
			commission_bp, mcc, created_at) VALUES (?, 'M', ?, 'x', 1, 'k', 1, 0, 'NONE', 0)`), m, "c-"+m); err != nil {
			t.Fatal(err)
		}
	}
}

// openPostgresForPlans opens the test database in a fresh schema (the
// storetest package cannot be imported from here without a cycle).
func openPostgresForPlans(t *testing.T) *Store { return migrated(t, openPostgresBare(t)) }

// openPostgresBare opens the test database in a fresh schema, not
// migrated.
func openPostgresBare(t *testing.T) *Store {
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
	return s
}

// TestPrunePlansUseIndexes: each statement of a retention pass (Prune)
// reaches its rows through the index named, never by reading a whole table
// or index. On SQLite the pass runs in the one writer that every write
// waits for: reading every delivered callback and every object row there
// stopped writes for about a second per 300,000 callbacks.
func TestPrunePlansUseIndexes(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		conn, err := s.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		explain, whole := "EXPLAIN QUERY PLAN ", sqliteReadsWhole
		pk := func(table string) string { return "sqlite_autoindex_" + table + "_1" }
		if s.engine == Postgres {
			explain, whole = "EXPLAIN ", postgresReadsWhole
			pk = func(table string) string { return table + "_pkey" }
			if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
				t.Fatal(err)
			}
		}
		in, list, err := s.d.idsIn([]string{"k1", "k2"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, q string
			args    []any
			index   string
			bound   string // a column the index's search must be bounded by
		}{
			// created_at bounds the range read: with state alone it is every delivered callback.
			{"delivered callbacks", pruneCallbacksQ, []any{1, 1, 500}, "callbacks_state", "created_at"},
			{"their objects", pruneCallbackRows[0] + in, []any{list}, "callback_objects_callback", ""},
			{"their attempts", pruneCallbackRows[1] + in, []any{list}, pk("callback_attempts"), ""},
			{"the callbacks", pruneCallbackRows[2] + in, []any{list}, pk("callbacks"), ""},
			{"delivered rails orders", pruneOrdersQ, []any{1, 500}, "rails_orders_delivered", ""},
			{"the orders", "DELETE FROM rails_orders WHERE id" + in, []any{list}, pk("rails_orders"), ""},
			{"old rails inbox", pruneInboxQ, []any{1, 500}, "rails_inbox_received", ""},
			{"the inbox records", "DELETE FROM rails_inbox WHERE msg_id" + in, []any{list}, pk("rails_inbox"), ""},
		} {
			checkPlan(t, s, conn, explain, c.what, c.q, c.args, func(plan string) bool {
				return strings.Contains(plan, c.index) && (c.bound == "" || searchBoundBy(plan, c.bound)) && !whole(plan)
			})
		}
	})
}

// searchBoundBy: a plan's index search is bounded by column (SQLite's
// SEARCH line, PostgreSQL's Index Cond line; a filter applied to the rows
// read does not count).
func searchBoundBy(plan, column string) bool {
	for _, l := range strings.Split(plan, "\n") {
		if (strings.Contains(l, "SEARCH ") || strings.Contains(l, "Index Cond:")) && strings.Contains(l, column) {
			return true
		}
	}
	return false
}

// sqliteReadsWhole: a SQLite plan reads a whole table or index (SCAN;
// json_each's argument aside).
func sqliteReadsWhole(plan string) bool { return sqliteScan.MatchString(plan) }

var sqliteScan = regexp.MustCompile(`SCAN (callbacks|callback_objects|callback_attempts|rails_orders|rails_inbox)\b`)

// postgresReadsWhole: a PostgreSQL plan has a sequential scan, or an index
// scan whose next line gives it no condition (it reads the whole index).
func postgresReadsWhole(plan string) bool {
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if strings.Contains(l, "Seq Scan") {
			return true
		}
		if strings.Contains(l, "Index Scan") || strings.Contains(l, "Index Only Scan") {
			if i+1 == len(lines) || !strings.Contains(lines[i+1], "Index Cond:") {
				return true
			}
		}
	}
	return false
}

// TestClaimsReadTheirBatch: a claim of rails orders or callbacks reads the
// pending rows from the index that holds them in the claim's order and stops
// at its batch; it never sorts every pending row. Sorting them was
// O(pending) a claim: with 57,000 orders waiting on PostgreSQL a claim took
// 17 s under load, and the orders fell further behind with each one.
func TestClaimsReadTheirBatch(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		insertMerchants(t, s, []string{"m0"})
		const pending = 20_000
		conn, err := s.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if s.engine == Postgres {
			// A claim whose generic plan was made while the table was
			// empty, as on a fresh database: prepared, planned and cached
			// now (forced generic here; PostgreSQL's default chooses it
			// after five executions), executed once the table is full.
			for _, q := range []string{"SET plan_cache_mode = force_generic_plan",
				"PREPARE claim_orders(bigint, bigint) AS " + s.d.rebind(s.dueOrdersQ(256)),
				"PREPARE claim_callbacks(bigint, bigint) AS " + s.d.rebind(s.dueCallbacksQ(256)),
				"EXPLAIN EXECUTE claim_orders(1, 1)", "EXPLAIN EXECUTE claim_callbacks(1, 1)"} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
		txn, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ins, err := txn.PrepareContext(ctx, s.d.rebind(`INSERT INTO rails_orders (id, kind, merchant_id, object_id, data, state, next_attempt_at, created_at)
			VALUES (?, 'rtp.send', 'm0', ?, '{}', ?, ?, ?)`))
		if err != nil {
			t.Fatal(err)
		}
		insCb, err := txn.PrepareContext(ctx, s.d.rebind(`INSERT INTO callbacks (id, merchant_id, event, subject_id, url, body, ts, signature, state, next_attempt_at, created_at)
			VALUES (?, 'm0', 'rtp', ?, 'http://127.0.0.1/cb', '{}', 0, 's', ?, ?, ?)`))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < pending+pending/4; i++ {
			state := "pending"
			if i%5 == 4 {
				state = "delivered"
			}
			at := int64(1_000_000 + i*7%pending) // due times out of writing order
			if _, err := ins.ExecContext(ctx, fmt.Sprintf("o%06d", i), fmt.Sprintf("r%06d", i/2), state, at, at); err != nil {
				t.Fatal(err)
			}
			if _, err := insCb.ExecContext(ctx, fmt.Sprintf("c%06d", i), fmt.Sprintf("r%06d", i), state, at, at); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		explain := "EXPLAIN QUERY PLAN "
		sorts := regexp.MustCompile(`TEMP B-TREE`)
		if s.engine == Postgres {
			explain, sorts = "EXPLAIN ", regexp.MustCompile(`(?m)^\s*(->\s*)?(Incremental )?Sort\b`)
			// What a claim sets in its transaction, for this session.
			if _, err := conn.ExecContext(ctx, strings.ReplaceAll(claimPlanPG, ", true)", ", false)")); err != nil {
				t.Fatal(err)
			}
		}
		now := int64(1_000_000 + pending)
		if s.engine == Postgres {
			// The statements prepared on the empty table: each candidate's
			// earlier order is found by its object (an index condition), not
			// by reading the object index whole.
			objectCond := regexp.MustCompile(`Index Cond: \(\(object_id = o\.object_id\)`)
			for _, c := range []struct{ what, q, index string }{
				{"orders", "claim_orders", "rails_orders_due"}, {"callbacks", "claim_callbacks", "callbacks_due"},
			} {
				checkPlan(t, s, conn, "EXPLAIN ", c.what+" claim prepared on an empty table", fmt.Sprintf("EXECUTE %s(%d, %d)", c.q, now, now), nil, func(plan string) bool {
					return strings.Contains(plan, c.index) && !sorts.MatchString(plan) && (c.what == "callbacks" || objectCond.MatchString(plan))
				})
			}
		}
		// First as the planner sees a table that grew since its last
		// analysis (here: never analysed), then with fresh statistics.
		for _, when := range []string{"before ANALYZE", "after ANALYZE"} {
			if when == "after ANALYZE" {
				if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
					t.Fatal(err)
				}
			}
			checkPlan(t, s, conn, explain, "rails order claim, "+when, s.dueOrdersQ(256), []any{now, now}, func(plan string) bool {
				return strings.Contains(plan, "rails_orders_due") && !sorts.MatchString(plan)
			})
			checkPlan(t, s, conn, explain, "callback claim, "+when, s.dueCallbacksQ(256), []any{now, now}, func(plan string) bool {
				return strings.Contains(plan, "callbacks_due") && !sorts.MatchString(plan)
			})
		}
		// And the claim takes them in that order: due time, then writing.
		orders, err := s.ClaimOrders(ctx, "t", time.UnixMilli(now), time.Minute, 256)
		if err != nil {
			t.Fatal(err)
		}
		if len(orders) != 256 {
			t.Fatalf("claimed %d orders, want 256", len(orders))
		}
		cbs, err := s.ClaimCallbacks(ctx, "t", time.UnixMilli(now), time.Minute, 256)
		if err != nil {
			t.Fatal(err)
		}
		if len(cbs) != 256 {
			t.Fatalf("claimed %d callbacks, want 256", len(cbs))
		}
	})
}

// TestOrderUpdatesReadTheirRows: marking orders delivered and releasing
// them read the rows they name by id, however many orders are pending. A
// backlog of pending orders (the connector away) once made each of these
// statements read the whole index of pending orders on PostgreSQL, its
// generic plan ANDing that index with the id lookups.
func TestOrderUpdatesReadTheirRows(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		insertMerchants(t, s, []string{"m0"})
		conn, err := s.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		explain := "EXPLAIN QUERY PLAN "
		if s.engine == Postgres {
			// As the driver's prepared statements run after five executions.
			if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			explain = "EXPLAIN "
		}
		txn, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ins, err := txn.PrepareContext(ctx, s.d.rebind(`INSERT INTO rails_orders (id, kind, merchant_id, object_id, data, state, next_attempt_at, created_at, lease_owner, lease_until)
			VALUES (?, 'rtp.send', 'm0', ?, '{}', 'pending', ?, ?, 't', ?)`))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20_000 {
			if _, err := ins.ExecContext(ctx, fmt.Sprintf("o%06d", i), fmt.Sprintf("r%06d", i), 1_000_000+i, 1_000_000+i, 2_000_000); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		in, list, err := s.d.idsIn([]string{"o000001", "o019999"})
		if err != nil {
			t.Fatal(err)
		}
		byID := regexp.MustCompile(`rails_orders_pkey|sqlite_autoindex_rails_orders_1|USING (INTEGER )?PRIMARY KEY`)
		for _, when := range []string{"before ANALYZE", "after ANALYZE"} {
			if when == "after ANALYZE" {
				if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				what, q, types, values string
				args                   []any
			}{
				{"mark delivered", markDelivered + in, "bigint, text, text[]", "3000000, 't', '{o000001,o019999}'", []any{int64(3_000_000), "t", list}},
				{"release", releaseOrders + in, "bigint, bigint, text, text[]", "3000000, 3000000, 't', '{o000001,o019999}'", []any{int64(3_000_000), int64(3_000_000), "t", list}},
				{"release leases", releaseOrderLeases + in, "text, text[]", "'t', '{o000001,o019999}'", []any{"t", list}},
			} {
				q, args := c.q, c.args
				if s.engine == Postgres {
					// The generic plan, prepared as the driver prepares it.
					name := strings.ReplaceAll(c.what+" "+when, " ", "_")
					if _, err := conn.ExecContext(ctx, "PREPARE "+name+"("+c.types+") AS "+s.d.rebind(c.q)); err != nil {
						t.Fatal(err)
					}
					q, args = "EXECUTE "+name+"("+c.values+")", nil
				}
				checkPlan(t, s, conn, explain, c.what+", "+when, q, args, func(plan string) bool {
					return byID.MatchString(plan) && !strings.Contains(plan, "rails_orders_due") && !strings.Contains(plan, "rails_orders_object")
				})
			}
		}
		// And they do what they say: two released, then one of them marked.
		orders := []*payd.RailsOrder{{ID: "o000001"}, {ID: "o019999"}}
		if err := s.ReleaseOrders(ctx, orders, "t", time.UnixMilli(3_000_000)); err != nil {
			t.Fatal(err)
		}
		var leased, due int
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(lease_owner), SUM(CASE WHEN next_attempt_at = 3000000 THEN 1 ELSE 0 END)
			FROM rails_orders WHERE id IN ('o000001', 'o019999')`).Scan(&leased, &due); err != nil {
			t.Fatal(err)
		}
		if leased != 0 || due != 2 {
			t.Errorf("released: %d still leased, %d due at the release's time (want 0, 2)", leased, due)
		}
		if n, err := s.OrdersDelivered(ctx, orders, "t", time.UnixMilli(3_000_000)); err != nil || n != 0 {
			t.Errorf("orders no longer leased to t marked: %d (%v), want 0", n, err)
		}
		if _, err := s.w.ExecContext(ctx, "UPDATE rails_orders SET lease_owner = 't' WHERE id = 'o000001'"); err != nil {
			t.Fatal(err)
		}
		if n, err := s.OrdersDelivered(ctx, orders, "t", time.UnixMilli(3_000_000)); err != nil || n != 1 {
			t.Errorf("marked %d (%v), want 1", n, err)
		}
	})
}
