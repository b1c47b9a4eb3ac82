package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"payd"
	"payd/internal/sqlstore/sqlite"
)

// CoalescedStatements is how many statements have served RTP reads by id
// on PostgreSQL (coalesce.go).
func (s *Store) CoalescedStatements() int64 { return s.rtps.Statements.Load() }

// PreparedWrites is the text of every write statement SQLite keeps
// prepared (sqlite/stmt.go).
func (s *Store) PreparedWrites() []string { return s.wstmts.Prepared() }

// WriteTx is a write transaction as the store's use cases see it, for
// testing the writes sent together (postgres/writes.go).
type WriteTx struct{ t *tx }

// InWriteTx runs f in a write transaction.
func (s *Store) InWriteTx(ctx context.Context, f func(WriteTx) error) error {
	return s.inTx(ctx, func(t *tx) error { return f(WriteTx{t}) })
}

// Write runs or queues a write that must affect want rows (-1: any), or
// end the transaction with payd.ErrConflict.
func (w WriteTx) Write(ctx context.Context, want int64, q string, args ...any) error {
	return w.t.write(ctx, want, payd.ErrConflict, q, args...)
}

// Queued is how many writes wait to be sent.
func (w WriteTx) Queued() int {
	if w.t.pg == nil {
		return 0
	}
	return w.t.pg.Queued()
}

// Count runs a statement answering one number, in the transaction.
func (w WriteTx) Count(ctx context.Context, q string, args ...any) (n int64, err error) {
	err = w.t.queryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// NextReference draws the next payment reference number in the transaction.
func (w WriteTx) NextReference(ctx context.Context) (int64, error) { return w.t.nextSequence(ctx) }

// CoalescedInserts is how many statements have served RTP creation on
// PostgreSQL (coalesce.go), a failed batch's retries included.
func (s *Store) CoalescedInserts() int64 { return s.inserts.Statements.Load() }

// InsertRTPsTogether serves rs as one batch of the insert coalescer, as if
// they had queued together, and returns each one's outcome.
func (s *Store) InsertRTPsTogether(rs []*payd.RTP) []error {
	ins := make([]rtpInsert, len(rs))
	for i, r := range rs {
		ins[i] = rtpInsert{r: r, done: make(chan error, 1)}
		if err := ins[i].prepare(); err != nil {
			panic(err) // every RTP a test makes has rtpCols' types
		}
	}
	s.inserts.serve(ins)
	errs := make([]error, len(rs))
	for i, q := range ins {
		errs[i] = <-q.done
	}
	return errs
}

// BatchJob is a use case for RunBatch, with the context it came with.
type BatchJob struct {
	Ctx context.Context
	F   func(WriteTx) error
}

// RunBatch runs jobs as SQLite's group committer runs use cases that
// queued together (sqlite/group.go): one transaction, a savepoint each, one
// commit. It returns each job's outcome.
func (s *Store) RunBatch(jobs ...BatchJob) []error {
	ctxs, fs := make([]context.Context, len(jobs)), make([]func(*tx) error, len(jobs))
	for i, j := range jobs {
		ctxs[i], fs[i] = j.Ctx, func(t *tx) error { return j.F(WriteTx{t}) }
	}
	return s.group.RunBatch(ctxs, fs)
}

// OnKeptTotal calls f for each RTP search answered from a kept total
// (totals.go) until the returned function is called.
func OnKeptTotal(f func()) (stop func()) {
	totalsHit = f
	return func() { totalsHit = nil }
}

// OnSearchRead calls f in each reading of a search that found no kept
// total (totals.go), before it reads, until the returned function is
// called.
func OnSearchRead(f func()) (stop func()) {
	searchRead = f
	return func() { searchRead = nil }
}

// RTPCacheMaxAge is how late a change made through another connection may
// be seen (sqlite/rtpcache.go).
const RTPCacheMaxAge = sqlite.RTPMaxAge

// SetListenURL makes ListenAuth connect to u (a proxy a test can hang).
func (s *Store) SetListenURL(u string) { s.listenURL = u }

// AuthCached is the merchant the authentication cache serves for token,
// nil when it would not serve one.
func (s *Store) AuthCached(token string, now time.Time) *payd.Merchant {
	m, _ := s.auth.get(payd.HashSecret(token), now)
	return m
}

// RTPStatusAt is rtpStatusExpr evaluated by the engine for one row.
func (s *Store) RTPStatusAt(ctx context.Context, status string, expiresAt, now time.Time) (string, error) {
	var out string
	err := s.queryRow(ctx, "SELECT "+rtpStatusExpr+" FROM (SELECT CAST(? AS TEXT) AS status, CAST(? AS BIGINT) AS expires_at) rtps",
		ms(now), status, ms(expiresAt)).Scan(&out)
	return out, err
}

// DueAt is expiryDue evaluated by the engine for one row: whether the
// expirers move an object of status (asked as of) with that deadline.
func (s *Store) DueAt(ctx context.Context, status, asked string, expiresAt, now time.Time) (bool, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM (SELECT CAST(? AS TEXT) AS status, CAST(? AS BIGINT) AS expires_at) x WHERE "+expiryDue,
		status, ms(expiresAt), asked, ms(now)).Scan(&n)
	return n == 1, err
}

// RTPExpiring are the RTP statuses the expirers look at.
func RTPExpiring() []string { return rtpExpiring }

// CheckoutDeadlines are the checkout moves the expirers make: from, to.
func CheckoutDeadlines() [][2]string { return checkoutDeadlines }

// CheckoutStatusAt is checkoutStatusExpr evaluated by the engine for one row.
func (s *Store) CheckoutStatusAt(ctx context.Context, status string, expiresAt, now time.Time) (string, error) {
	var out string
	err := s.queryRow(ctx, "SELECT "+checkoutStatusExpr+" FROM (SELECT CAST(? AS TEXT) AS status, CAST(? AS BIGINT) AS expires_at) c",
		ms(now), ms(now), status, ms(expiresAt)).Scan(&out)
	return out, err
}

// SeedPayments writes n rails payments of merchantID spread evenly over
// span from start (every tenth with an accepted refund of half), in bulk,
// for the reports' benchmarks.
func (s *Store) SeedPayments(ctx context.Context, merchantID string, n int, start time.Time, span time.Duration) error {
	step := span / time.Duration(n)
	for i := 0; i < n; i += 500 {
		err := s.inTx(ctx, func(t *tx) error {
			var pv, rv []string
			var pa, ra []any
			for k := i; k < min(i+500, n); k++ {
				at := ms(start.Add(time.Duration(k) * step))
				id := seedID(1, k)
				amount := int64(100 + k%100000)
				pv = append(pv, "(?, ?, 'qr', ?, ?, ?, 'MDL', ?, ?)")
				pa = append(pa, id, merchantID, "SEED"+id[len(id)-12:], amount, amount/100, "TX"+id, at)
				if k%10 == 0 {
					rv = append(rv, "(?, ?, ?, ?, 'MDL', 'seed', NULL, 'Accepted', 0, ?, ?, ?, ?)")
					ra = append(ra, seedID(2, k), merchantID, id, amount/2, at, at, at+60_000, at)
				}
			}
			if _, err := t.exec(ctx, "INSERT INTO payments (id, merchant_id, kind, reference_number, amount, commission, currency, network_ref, executed_at) VALUES "+
				strings.Join(pv, ", "), pa...); err != nil {
				return err
			}
			if len(rv) == 0 {
				return nil
			}
			_, err := t.exec(ctx, "INSERT INTO refunds ("+refundCols+") VALUES "+strings.Join(rv, ", "), ra...)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// seedID is a distinct id for the k-th seeded row of a kind.
func seedID(kind, k int) string {
	return fmt.Sprintf("5eed%04x-0000-7000-8000-%012x", kind, k)
}

// ForgetSettlement drops a merchant's kept settlement sums.
func (s *Store) ForgetSettlement(ctx context.Context, merchantID string) error {
	return s.inTx(ctx, func(t *tx) error { return t.forgetSettlement(ctx, merchantID) })
}

// KeptSettlementDays lists the days (YYYY-MM-DD) whose settlement sums are
// kept for the merchant.
func (s *Store) KeptSettlementDays(ctx context.Context, merchantID string) ([]string, error) {
	rows, err := s.query(ctx, "SELECT DISTINCT day FROM settlement_days WHERE merchant_id = ? ORDER BY day", merchantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, dayOf(d*dayMS))
	}
	return out, rows.Err()
}

// AfterSettlementSum runs f between the settlement keeper's sum and its
// insert, until the test ends.
func AfterSettlementSum(t interface{ Cleanup(func()) }, f func()) {
	afterSettlementSum = f
	t.Cleanup(func() { afterSettlementSum = nil })
}

// HandCallbacksUpTo is HandCallbacks with a queue of capacity callbacks.
func (s *Store) HandCallbacksUpTo(owner string, lease time.Duration, clock payd.Clock, capacity int) {
	s.handCallbacks = newHand[*payd.Callback](owner, lease, clock, capacity)
}

// ClaimFaults makes the claimed transactions fail as a database fault
// does, each as next says ("before" its commit, "after" it, "" none),
// for the rest of t.
func ClaimFaults(t interface{ Cleanup(func()) }, next func() string) {
	claimFault = next
	t.Cleanup(func() { claimFault = nil })
}
