package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"payd"
)

const rtpCols = `id, merchant_id, alias, amount, currency, description, order_id, terminal_id, callback_url,
	redirect_url, status, cancel_reason, pay_id, auto_action, auto_at, created_at, updated_at, expires_at`

// rtpColsR is rtpCols of the table named r.
var rtpColsR = "r." + strings.Join(strings.Split(strings.Join(strings.Fields(rtpCols), " "), ", "), ", r.")

// rtpRow is what a row of rtpCols scans into: one allocation holds every
// destination, where separate variables escaped to the heap one by one (13
// allocations per RTP read, a sixth of rtp-get's allocations).
type rtpRow struct {
	r                                         payd.RTP
	order, term, cb, redir, reason, pay, auto sql.NullString
	autoAt                                    sql.NullInt64
	status                                    string
	created, updated, expires                 int64
}

func scanRTP(sc scanner) (*payd.RTP, error) {
	row := new(rtpRow)
	r := &row.r
	if err := sc.Scan(&r.ID, &r.MerchantID, &r.Alias, &r.Amount, &r.Currency, &r.Description, &row.order, &row.term, &row.cb,
		&row.redir, &row.status, &row.reason, &row.pay, &row.auto, &row.autoAt, &row.created, &row.updated, &row.expires); err != nil {
		return nil, notFound(err)
	}
	r.OrderID, r.TerminalID, r.CallbackURL, r.RedirectURL = row.order.String, row.term.String, row.cb.String, row.redir.String
	r.Status, r.CancelReason, r.PayID, r.AutoAction = payd.RTPStatus(row.status), row.reason.String, row.pay.String, row.auto.String
	r.AutoAt = fromNullMS(row.autoAt)
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = payd.UnixMilli(row.created), payd.UnixMilli(row.updated), payd.UnixMilli(row.expires)
	return r, nil
}

const insertRTP = "INSERT INTO rtps (" + rtpCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

func rtpArgs(r *payd.RTP) []any {
	return []any{r.ID, r.MerchantID, r.Alias, int64(r.Amount), r.Currency, r.Description, nullStr(r.OrderID), nullStr(r.TerminalID),
		nullStr(r.CallbackURL), nullStr(r.RedirectURL), string(r.Status), nullStr(r.CancelReason), nullStr(r.PayID),
		nullStr(r.AutoAction), nullMS(r.AutoAt), ms(r.CreatedAt), ms(r.UpdatedAt), ms(r.ExpiresAt)}
}

// CreateRTP stores a new RTP of m. With rails that take orders, the order
// delivering it to the payer's bank (its pain.013) is written with it, in
// its transaction, and handed to the orders loop once committed.
func (s *Store) CreateRTP(ctx context.Context, m *payd.Merchant, r *payd.RTP) error {
	var order *payd.RailsOrder
	if s.rails != "" {
		order = payd.SendRTPOrder(m, r, r.CreatedAt)
		s.route(order)
		s.held(order)
	}
	if err := s.insertRTP(ctx, r, order); err != nil {
		return fmt.Errorf("create rtp: %w", err)
	}
	if order != nil {
		s.handOrder(ctx, order) // to this instance's orders loop, or to the claims (handover.go)
	}
	return nil
}

// insertRTP writes r and its order (nil: none). With the RTP inserter
// (PostgreSQL), r joins the concurrent creates in one statement
// (coalesce.go), unless its request's key claim must be marked, which takes
// a transaction of its own (idempotency.go). Otherwise it is a transaction
// (on SQLite shared with others by group commit), and the new record goes
// into the RTP cache (sqlite/rtpcache.go): a merchant polls an RTP from
// the moment it is created.
func (s *Store) insertRTP(ctx context.Context, r *payd.RTP, order *payd.RailsOrder) error {
	if s.inserts.On() && claimOf(ctx) == nil {
		return s.inserts.insert(ctx, r, order)
	}
	gen := s.rtpc.Generation()
	err := s.inTx(ctx, func(t *tx) error {
		if _, err := t.exec(ctx, insertRTP, rtpArgs(r)...); err != nil {
			return err
		}
		if order == nil {
			return nil
		}
		return t.insertOrder(ctx, order)
	})
	if err == nil {
		s.rtpc.Put(r, gen)
	}
	return err
}

// RTP reads one of the merchant's RTPs as of now (expiry applied).
// merchantID "" reads any merchant's (the public payer page).
func (s *Store) RTP(ctx context.Context, merchantID, id string, now time.Time) (*payd.RTP, error) {
	r, err := s.storedRTP(ctx, id)
	if err != nil {
		return nil, err
	}
	if merchantID != "" && r.MerchantID != merchantID {
		return nil, payd.ErrNotFound
	}
	r.Observe(now)
	return r, nil
}

// storedRTP is the RTP of id as stored: from the RTP cache (SQLite) or
// coalesced with the concurrent reads (PostgreSQL), else from the table.
func (s *Store) storedRTP(ctx context.Context, id string) (*payd.RTP, error) {
	switch {
	case s.rtpc != nil:
		return s.cachedRTP(ctx, id)
	case s.rtps.On():
		return s.rtps.read(ctx, id)
	}
	return scanRTP(s.queryRow(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id = ?", id))
}

// cachedRTP is the stored RTP of id, from the cache while it holds the
// record (sqlite/rtpcache.go), else from the table into the cache.
func (s *Store) cachedRTP(ctx context.Context, id string) (*payd.RTP, error) {
	if r, ok := s.rtpc.Get(id); ok {
		return r, nil
	}
	gen := s.rtpc.Generation()
	r, err := scanRTP(s.queryRow(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id = ?", id))
	if err != nil {
		return nil, err
	}
	s.rtpc.Put(r, gen)
	return r, nil
}

// lockRTP loads an RTP under its row lock; merchantID "" loads any merchant's.
func (t *tx) lockRTP(ctx context.Context, merchantID, id string) (*payd.RTP, error) {
	if merchantID == "" {
		return scanRTP(t.queryRow(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id = ?"+t.s.d.forUpdate(), id))
	}
	return scanRTP(t.queryRow(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id = ? AND merchant_id = ?"+t.s.d.forUpdate(), id, merchantID))
}

// saveRTP writes an RTP's transition, guarded by the status it was loaded
// with, so that of concurrent transitions exactly one takes effect.
func (t *tx) saveRTP(ctx context.Context, r *payd.RTP, from payd.RTPStatus) error {
	err := t.write(ctx, 1, payd.ErrConflict, `UPDATE rtps SET status = ?, cancel_reason = ?, pay_id = ?, auto_action = ?, updated_at = ?
		WHERE id = ? AND status = ?`, string(r.Status), nullStr(r.CancelReason), nullStr(r.PayID), nullStr(r.AutoAction),
		ms(r.UpdatedAt), r.ID, string(from))
	if err != nil {
		return fmt.Errorf("save rtp %s: %w", r.ID, err)
	}
	return t.event(ctx, r.MerchantID, payd.ObjectRTP, r.ID, string(from), string(r.Status), r.UpdatedAt)
}

// CancelRTP cancels an RTP; cancelling a cancelled one succeeds unchanged.
func (s *Store) CancelRTP(ctx context.Context, merchantID, id, reason string, now time.Time) (*payd.RTP, error) {
	var r *payd.RTP
	err := s.inTx(ctx, func(t *tx) error {
		var err error
		if r, err = t.lockRTP(ctx, merchantID, id); err != nil {
			return err
		}
		from := r.Status
		changed, err := r.Cancel(now, reason)
		if err != nil || !changed {
			return err
		}
		if err := t.saveRTP(ctx, r, from); err != nil {
			return err
		}
		if s.rails == "" {
			return nil
		}
		m, err := t.merchant(ctx, r.MerchantID)
		if err != nil {
			return err
		}
		return t.insertOrder(ctx, payd.CancelRTPOrder(m, r, now))
	})
	if err == nil && s.rails != "" {
		s.queuedOrders()
	}
	return r, err
}

// dueRTPs selects up to a number of open RTPs of a status whose deadline
// has passed, earliest first. The open statuses are spelled as in the
// partial index of open RTPs by deadline (rtps_open_expiry): with only
// "status = ?" neither engine can tell that the index covers the row, and
// SQLite scanned another index over every RTP (30 ms at 1M rows, twice
// per expiry pass, every 2 s, on the single writer).
const dueRTPs = `SELECT id FROM rtps WHERE status IN ('Created','Active') AND ` + expiryDue + ` ORDER BY expires_at LIMIT ?`

// expiryDue is the store's statement of the domain's expiry rule (RTP,
// Checkout Observe): an object of a status that expires (? the status)
// whose deadline (? now) has come, the deadline itself included.
// TestExpiryRulesAgree holds it, rtpStatusExpr, rtpExpiring and
// checkoutDeadlines to the Go rules on both engines.
const expiryDue = "status = ? AND expires_at <= ?"

// rtpExpiring are the RTP statuses that expire (payd.RTPStatus.Open).
var rtpExpiring = []string{string(payd.RTPCreated), string(payd.RTPActive)}

// ExpireRTPs writes Expired on up to limit open RTPs whose deadline has
// passed, dated at their deadline, and returns how many it moved.
func (s *Store) ExpireRTPs(ctx context.Context, now time.Time, limit int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		for _, from := range rtpExpiring {
			k, err := t.transitions(ctx, payd.ObjectRTP, from, "Expired", `UPDATE rtps SET status = 'Expired', updated_at = expires_at, auto_action = NULL
				WHERE id IN (`+dueRTPs+`) AND status = ? RETURNING id, merchant_id, updated_at`, from, ms(now), limit, from)
			if err != nil {
				return fmt.Errorf("expire rtps: %w", err)
			}
			n += k
		}
		return nil
	})
	return n, err
}

// countsLock is the PostgreSQL advisory lock key held by the instance
// folding the kept status counts, so that instances take turns.
const countsLock = 0x70617965

// CompactRTPCounts folds, on PostgreSQL, each merchant's appended rows of
// a status in rtp_status_counts into one (017), in one transaction: the
// rows it reads are the ones it deletes, and rows appended meanwhile stay
// for the next pass, so every change is counted once. SQLite keeps one row
// per merchant and status already.
func (s *Store) CompactRTPCounts(ctx context.Context) (int64, error) {
	if !s.d.appendsCounts() {
		return 0, nil
	}
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		var mine bool
		if err := t.queryRow(ctx, "SELECT pg_try_advisory_xact_lock(?)", countsLock).Scan(&mine); err != nil || !mine {
			return err
		}
		res, err := t.exec(ctx, `WITH many AS (SELECT merchant_id, status FROM rtp_status_counts GROUP BY merchant_id, status HAVING COUNT(*) > 1),
			gone AS (DELETE FROM rtp_status_counts c USING many WHERE c.merchant_id = many.merchant_id AND c.status = many.status
				RETURNING c.merchant_id, c.status, c.n)
			INSERT INTO rtp_status_counts (merchant_id, status, n)
				SELECT merchant_id, status, SUM(n) FROM gone GROUP BY merchant_id, status HAVING SUM(n) <> 0`)
		if err != nil {
			return fmt.Errorf("compact rtp counts: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// DueRTPDecisions lists auto-alias RTPs whose decision is due.
// merchantID, when given, limits them to one merchant (the test clock's pass).
func (s *Store) DueRTPDecisions(ctx context.Context, now time.Time, limit int, merchantID ...string) ([]payd.DueRTPDecision, error) {
	scope, args := merchantScope(merchantID, ms(now))
	rows, err := s.query(ctx, `SELECT merchant_id, id, auto_action FROM rtps WHERE auto_action IS NOT NULL AND auto_at <= ?`+scope+`
		ORDER BY auto_at`+rowLimit(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("due rtp decisions: %w", err)
	}
	defer rows.Close()
	var out []payd.DueRTPDecision
	for rows.Next() {
		var d payd.DueRTPDecision
		if err := rows.Scan(&d.MerchantID, &d.RTPID, &d.Action); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ClearRTPDecision drops the pending auto decision of an RTP that can no
// longer take it (it expired or was cancelled first).
func (s *Store) ClearRTPDecision(ctx context.Context, id string) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "UPDATE rtps SET auto_action = NULL WHERE id = ?", id)
		return err
	})
}

// rtpStatusExpr is the status as of :now, expiry applied (see expiryDue).
const rtpStatusExpr = "CASE WHEN status IN ('Created','Active') AND expires_at <= ? THEN 'Expired' ELSE status END"

var rtpSortCols = map[string]string{
	"orderId": "order_id", "amount": "amount", "createdAt": "created_at", "expiresAt": "expires_at",
}

// rtpListQueries builds the count and page queries of the RTP list. When
// counted, each row of the page also carries the count of every match, and
// countQ is needed only for a page past the last match. known says the
// total is known already (searchTotals): the page then counts nothing.
func (s *Store) rtpListQueries(f payd.RTPFilter, now time.Time, known bool) (countQ string, countArgs []any, listQ string, listArgs []any, counted bool) {
	var w where
	w.add("merchant_id = ?", f.MerchantID)
	w.opt("id = ?", f.RTPID)
	w.opt("order_id = ?", f.OrderID)
	w.opt("terminal_id = ?", f.TerminalID)
	s.d.rtpDescriptionLike(&w, f.Description)
	if f.Amount != nil {
		w.add("amount = ?", int64(*f.Amount))
	}
	w.timeRange("created_at", f.CreatedFrom, f.CreatedTo)
	w.timeRange("expires_at", f.ExpiresFrom, f.ExpiresTo)
	switch {
	case len(f.Statuses) == 0 && len(w.conds) == 1: // the merchant's every RTP: its counters (015)
		countQ, countArgs = merchantRTPsQ, w.args
	case len(f.Statuses) == 0:
		countQ, countArgs = "SELECT COUNT(*) FROM rtps"+w.sql(), w.args
	default:
		// Each status as of now is one or more stored statuses, each part
		// with the stored status alone in its condition: the count adds up
		// one count per part, each a range of the status index, where one
		// OR over them read every index entry of the merchant (Expired is
		// stored Expired or open past its deadline). With no other filter
		// the kept counts answer instead (keptStatusCount).
		var statuses []payd.RTPStatus
		var parts []segment
		for _, st := range f.Statuses {
			if !slices.Contains(statuses, st) {
				statuses = append(statuses, st)
				parts = append(parts, rtpStatusParts(st, ms(now))...)
			}
		}
		if len(w.conds) == 1 {
			countQ, countArgs = keptStatusCount(f.MerchantID, statuses, ms(now))
		} else {
			counts := make([]string, len(parts))
			for i, p := range parts {
				counts[i] = "SELECT COUNT(*) AS n FROM rtps" + w.sql() + " AND " + p.cond
				countArgs = append(append(countArgs, w.args...), p.args...)
			}
			countQ = "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM (" + strings.Join(counts, " UNION ALL ") + ") AS counts"
		}
		ors := make([]string, len(parts))
		var orArgs []any
		for i, p := range parts {
			ors[i] = "(" + p.cond + ")"
			orArgs = append(orArgs, p.args...)
		}
		w.add("("+strings.Join(ors, " OR ")+")", orArgs...)
	}
	// A deferred join: the page's ids come from the indexes alone, then
	// only those rows are read. Selecting every column in one query made
	// SQLite's planner pick an index that forces a full sort.
	if f.SortBy == "status" {
		order := orderBy(rtpStatusExpr, false, f.Desc, "created_at", "id")
		ids, args := s.rtpStatusPage(w, f, now)
		return countQ, countArgs, "SELECT " + rtpCols + " FROM rtps WHERE id IN (" + ids + ")" + order, append(args, ms(now)), false
	}
	col := rtpSortCols[f.SortBy]
	if col == "" {
		col = "created_at"
	}
	order := orderBy(col, col == "order_id", f.Desc, "created_at", "id")
	if s.d.countsInPage() && f.Description != "" && f.Count > 0 && col != "order_id" && !known {
		// A substring search rechecks every candidate row of the merchant
		// whatever the page: the page counts the matches in that same scan
		// (dialect.countsInPage).
		return countQ, countArgs, "WITH p AS (SELECT id AS pid, COUNT(*) OVER () AS total FROM " + s.rtpsFor(f) + w.sql() + order +
			s.limit(f.Count, f.Offset) + ") SELECT " + rtpCols + ", total FROM p JOIN rtps ON id = pid" + order, w.args, true
	}
	ids, args := "SELECT id FROM "+s.rtpsFor(f)+w.sql()+order+s.limit(f.Count, f.Offset), w.args
	if col == "order_id" && f.Count > 0 {
		ids, args = s.segmentPage(w, f, []segment{{cond: "order_id IS NULL", key: "order_id"}, {cond: "order_id IS NOT NULL", key: "order_id"}})
	}
	return countQ, countArgs, "SELECT " + rtpCols + " FROM rtps WHERE id IN (" + ids + ")" + order, args, false
}

// rtpsFor is the table a page's ids are read from. A description search
// on SQLite reads the description index, which holds the lowered text:
// given the choice the planner walks the creation index instead, reading
// the table for every row of the merchant.
// Likewise a range of deadlines: with bound values the planner cannot
// tell how narrow the range is and walks the creation index to save a
// sort.
func (s *Store) rtpsFor(f payd.RTPFilter) string {
	switch {
	case f.Description != "":
		return s.d.indexedBy("rtps", "rtps_merchant_description")
	case (f.ExpiresFrom != nil || f.ExpiresTo != nil) && f.SortBy != "status":
		return s.d.indexedBy("rtps", "rtps_merchant_expires")
	}
	return "rtps"
}

// A segment is a part of a list that comes whole before the next in the
// list's order: the rows meeting cond, ordered by key (if any) in the
// list's direction, then by creation ascending. A page of segments reads
// from each at most offset+count entries of an index, where one ORDER BY
// over an expression (a status as of now, a nullable column with its
// missing values first in both directions) would sort every row of the
// merchant.
type segment struct {
	cond string
	args []any
	key  string // a column sorted in the list's direction; "" none
	rank int    // segments of equal rank merge by creation
}

// segmentPage is the query of a page's ids, given its segments in order.
func (s *Store) segmentPage(w where, f payd.RTPFilter, segs []segment) (string, []any) {
	k := strconv.Itoa(f.Offset + f.Count)
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	var parts []string
	var args []any
	for i, sg := range segs {
		key, order := "0", " ORDER BY created_at, id"
		if sg.key != "" {
			key, order = sg.key, " ORDER BY "+sg.key+dir+", created_at, id"
		}
		rank := sg.rank
		if rank == 0 {
			rank = i + 1
		}
		sw := where{conds: append(append([]string{}, w.conds...), sg.cond), args: append(append([]any{}, w.args...), sg.args...)}
		parts = append(parts, fmt.Sprintf("SELECT * FROM (SELECT id, %d AS seg, %s AS k, created_at FROM %s%s%s LIMIT %s) AS s%d",
			rank, key, s.rtpsFor(f), sw.sql(), order, k, i))
		args = append(args, sw.args...)
	}
	return "SELECT id FROM (" + strings.Join(parts, " UNION ALL ") + ") AS segs ORDER BY seg, k" + dir + ", created_at, id" +
		s.limit(f.Count, f.Offset), args
}

// keptStatusCount is the query of how many of a merchant's RTPs have one of
// these statuses as of now, from the counts kept per stored status (017):
// the stored statuses' counts, with the open RTPs past their deadline that
// the expiry loop has not yet written (a range of the partial index of open
// RTPs, empty in steady state) moved from their stored status to Expired.
func keptStatusCount(merchantID string, statuses []payd.RTPStatus, now int64) (string, []any) {
	stored := make([]string, len(statuses))
	args := []any{merchantID}
	for i, st := range statuses {
		stored[i] = "?"
		args = append(args, string(st))
	}
	parts := []string{"SELECT COALESCE(SUM(n), 0) AS n FROM rtp_status_counts WHERE merchant_id = ? AND status IN (" + strings.Join(stored, ", ") + ")"}
	for _, open := range []payd.RTPStatus{payd.RTPCreated, payd.RTPActive} {
		// Each overdue open RTP counts once for Expired, and not for its
		// stored status.
		var sign int
		if slices.Contains(statuses, payd.RTPExpired) {
			sign++
		}
		if slices.Contains(statuses, open) {
			sign--
		}
		if sign != 0 {
			// Both status conditions: SQLite uses a partial index only for
			// a query that repeats its condition.
			parts = append(parts, "SELECT "+strconv.Itoa(sign)+" * COUNT(*) AS n FROM rtps WHERE merchant_id = ? AND status IN ('Created','Active') AND status = '"+
				string(open)+"' AND expires_at <= ?")
			args = append(args, merchantID, now)
		}
	}
	return "SELECT CAST(SUM(n) AS BIGINT) FROM (" + strings.Join(parts, " UNION ALL ") + ") AS counts", args
}

// rtpStatusParts is an RTP status as of now as the stored statuses it
// covers, each part with one stored status in its condition (a range of
// the status index): Created and Active only before their deadline,
// Expired also Created or Active past it.
func rtpStatusParts(st payd.RTPStatus, now int64) []segment {
	switch st {
	case payd.RTPCreated, payd.RTPActive:
		return []segment{{cond: "status = ? AND expires_at > ?", args: []any{string(st), now}}}
	case payd.RTPExpired:
		return []segment{{cond: "status = 'Expired'"}, {cond: "status = 'Created' AND expires_at <= ?", args: []any{now}},
			{cond: "status = 'Active' AND expires_at <= ?", args: []any{now}}}
	}
	return []segment{{cond: "status = ?", args: []any{string(st)}}}
}

// rtpStatusPage is the page of a list sorted by status as of now: one
// segment per status in the list's order, Expired merging the stored ones
// with the open ones whose deadline has passed.
func (s *Store) rtpStatusPage(w where, f payd.RTPFilter, now time.Time) (string, []any) {
	if f.Count <= 0 { // the whole list: one sort is as good
		return "SELECT id FROM " + s.rtpsFor(f) + w.sql() + orderBy(rtpStatusExpr, false, f.Desc, "created_at", "id") + s.limit(f.Count, f.Offset),
			append(append([]any{}, w.args...), ms(now))
	}
	// Alphabetical, as the contract's status sort is.
	ranks := []payd.RTPStatus{payd.RTPAccepted, payd.RTPActive, payd.RTPCancelled, payd.RTPCreated,
		payd.RTPExpired, payd.RTPRefunded, payd.RTPRejected}
	var segs []segment
	for i, st := range ranks {
		rank := i + 1
		if f.Desc {
			rank = len(ranks) - i
		}
		for _, p := range rtpStatusParts(st, ms(now)) {
			p.rank = rank
			segs = append(segs, p)
		}
	}
	// Direction lives in the ranks; within a status rows go by creation.
	asc := f
	asc.Desc = false
	return s.segmentPage(w, asc, segs)
}

// listRTPs lists the RTPs matching f as of now and counts all matches.
func (s *Store) listRTPs(ctx context.Context, f payd.RTPFilter, now time.Time) ([]*payd.RTP, int, error) {
	if q := s.descriptionWalk(f); q != nil {
		return s.walkedRTPs(ctx, f, q, now)
	}
	countQ, countArgs, listQ, listArgs, counted := s.rtpListQueries(f, now, false)
	if f.Description != "" {
		countArgs, listArgs = s.d.planned(countArgs), s.d.planned(listArgs)
	}
	if counted {
		return s.countedRTPs(ctx, countQ, countArgs, listQ, listArgs, f.Offset, now)
	}
	total, err := s.count(ctx, countQ, countArgs)
	if err != nil {
		return nil, 0, fmt.Errorf("count rtps: %w", err)
	}
	if total <= f.Offset {
		// No match can be on the page. Reading it could cost what the count
		// did: for a filter that matches none of the merchant's RTPs, the
		// page walks an index of all of them again to find none.
		return nil, total, nil
	}
	out, err := s.rtpsByID(ctx, listQ, listArgs, now)
	return out, total, err
}

// countedRTPs reads a page whose rows carry the count of every match. A
// page past the last match has no row to carry it, and counts apart.
func (s *Store) countedRTPs(ctx context.Context, countQ string, countArgs []any, listQ string, listArgs []any, offset int, now time.Time) ([]*payd.RTP, int, error) {
	rows, err := s.query(ctx, listQ, listArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("list rtps: %w", err)
	}
	total := 0
	out, err := scanAll(rows, func(sc scanner) (*payd.RTP, error) {
		return scanRTP(scanFunc(func(dest ...any) error { return sc.Scan(append(dest, &total)...) }))
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list rtps: %w", err)
	}
	if len(out) == 0 && offset > 0 {
		if total, err = s.count(ctx, countQ, countArgs); err != nil {
			return nil, 0, fmt.Errorf("count rtps: %w", err)
		}
	}
	for _, r := range out {
		r.Observe(now)
	}
	return out, total, nil
}

// A walk pages a description search on SQLite by the list's own order
// instead of by the description index. That index answers which rows
// match only by reading every description of the merchant, and the page
// then sorts every match; walking an index in the list's order reads rows
// until the page is full, few when the word is common. The count says
// how many matches there are among how many rows, so the walk is taken
// only when it should end within walkRows rows.
type walk struct {
	countQ, walkQ string
	args          []any // the pattern, the merchant
	order         string
}

// walkRows bounds a walk: past it a page reads the description index.
var walkRows = 2000

// walked, when set (by tests), learns how each walk ended: "walked",
// "long" (not taken) or "short" (came up short).
var walked func(how string)

func walkEnded(how string) {
	if walked != nil {
		walked(how)
	}
}

// descriptionWalk is the walk of f, nil when f is not a description
// search of one merchant's RTPs in an order an index of the merchant
// serves.
func (s *Store) descriptionWalk(f payd.RTPFilter) *walk {
	others := f.RTPID != "" || f.OrderID != "" || f.TerminalID != "" || f.Amount != nil || len(f.Statuses) > 0 ||
		f.CreatedFrom != nil || f.CreatedTo != nil || f.ExpiresFrom != nil || f.ExpiresTo != nil
	col := rtpSortCols[f.SortBy]
	if col == "" {
		col = "created_at"
	}
	if !s.d.walksDescriptions() || f.Description == "" || others || f.Count <= 0 || f.SortBy == "status" || col == "order_id" {
		return nil
	}
	var w where
	w.like(s.d, "description", f.Description)
	order := orderBy(col, false, f.Desc, "created_at", "id")
	return &walk{
		countQ: "SELECT COUNT(*), TOTAL(" + w.conds[0] + ") FROM rtps INDEXED BY rtps_merchant_description WHERE merchant_id = ?",
		walkQ:  "SELECT id, " + w.conds[0] + " FROM rtps WHERE merchant_id = ?" + order + " LIMIT ?",
		args:   []any{w.args[0], f.MerchantID},
		order:  order,
	}
}

// walkedRTPs reads f's page and count through the walk q, or through the
// description index when the walk would be long or came up short.
func (s *Store) walkedRTPs(ctx context.Context, f payd.RTPFilter, q *walk, now time.Time) ([]*payd.RTP, int, error) {
	var rows int
	var matches float64
	if err := s.queryRow(ctx, q.countQ, q.args...).Scan(&rows, &matches); err != nil {
		return nil, 0, fmt.Errorf("count rtps: %w", err)
	}
	return s.walkPage(ctx, f, q, rows, int(matches), now)
}

// walkPage reads f's page through the walk q, given how many RTPs the
// merchant has (rows) and how many of them match (total).
func (s *Store) walkPage(ctx context.Context, f payd.RTPFilter, q *walk, rows, total int, now time.Time) ([]*payd.RTP, int, error) {
	want := min(f.Count, total-f.Offset)
	if want <= 0 {
		return nil, total, nil
	}
	// Rows to read to reach the page's last match, were matches spread
	// evenly; twice that allows for unevenness.
	reach := min(rows, 2*(f.Offset+f.Count)*rows/total+f.Count)
	if reach > walkRows {
		walkEnded("long")
		return s.pagedRTPs(ctx, f, total, now)
	}
	ids, err := s.walkIDs(ctx, q, reach, f.Offset, want)
	if err != nil {
		return nil, 0, err
	}
	if len(ids) < want { // the matches lie further on than the walk went
		walkEnded("short")
		return s.pagedRTPs(ctx, f, total, now)
	}
	walkEnded("walked")
	// One statement text whatever the page's size, so the walk's reads
	// stay among the prepared statements.
	in, list, err := s.d.idsIn(ids)
	if err != nil {
		return nil, 0, err
	}
	out, err := s.rtpsByID(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id"+in+q.order, []any{list}, now)
	return out, total, err
}

// walkIDs walks at most reach rows and returns the ids of matches offset
// to offset+want.
func (s *Store) walkIDs(ctx context.Context, q *walk, reach, offset, want int) ([]string, error) {
	rows, err := s.query(ctx, q.walkQ, append(append([]any{}, q.args...), reach)...)
	if err != nil {
		return nil, fmt.Errorf("list rtps: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() && len(ids) < want {
		var id string
		var hit bool
		if err := rows.Scan(&id, &hit); err != nil {
			return nil, fmt.Errorf("list rtps: %w", err)
		}
		if !hit {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pagedRTPs reads f's page by the list's page query, its count known (on
// SQLite a description search's page reads the description index).
func (s *Store) pagedRTPs(ctx context.Context, f payd.RTPFilter, total int, now time.Time) ([]*payd.RTP, int, error) {
	_, _, listQ, listArgs, _ := s.rtpListQueries(f, now, true)
	if f.Description != "" {
		listArgs = s.d.planned(listArgs)
	}
	out, err := s.rtpsByID(ctx, listQ, listArgs, now)
	return out, total, err
}

// rtpsByID reads the RTPs of a page query.
func (s *Store) rtpsByID(ctx context.Context, q string, args []any, now time.Time) ([]*payd.RTP, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list rtps: %w", err)
	}
	out, err := scanAll(rows, scanRTP)
	if err != nil {
		return nil, fmt.Errorf("list rtps: %w", err)
	}
	for _, r := range out {
		r.Observe(now)
	}
	return out, nil
}
