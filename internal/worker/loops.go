package worker

import (
	"context"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// Expiry writes the expired state of objects whose deadline has passed.
// Reads already show it (lazy expiry); this makes the rows agree.
type Expiry struct {
	Store *sqlstore.Store
	Clock payd.Clock
	Batch int // per kind of object and transaction; default ExpiryBatch(the store's engine)
}

// ExpiryBatch is how many overdue objects of a kind (RTPs: of each open
// status) one expiry transaction moves. SQLite's writes share one
// connection, and every API write waits behind that transaction: with 500
// it held the writer 120 ms, with 100 it holds it 31 ms
// (BenchmarkExpireRTPs, a backlog of 100,000 seeded RTPs). Under Paced the
// loop takes the same share of the writer either way; the smaller batch
// clears a backlog about a fifth slower, in waits a quarter as long.
// PostgreSQL's expiry locks only the rows it moves, so it keeps 500.
func ExpiryBatch(e sqlstore.Engine) int {
	if e == sqlstore.SQLite {
		return 100
	}
	return 500
}

// RunOnce expires one batch.
func (e *Expiry) RunOnce(ctx context.Context) (int, error) {
	if e.Batch == 0 {
		e.Batch = ExpiryBatch(e.Store.Engine())
	}
	now := e.Clock.Now()
	ctx = payd.WithCause(ctx, payd.CauseExpiry)
	n, err := e.Store.ExpireRTPs(ctx, now, e.Batch)
	if err != nil {
		return int(n), err
	}
	k, err := e.Store.ExpireQRs(ctx, now, e.Batch)
	if err != nil {
		return int(n + k), err
	}
	j, err := e.Store.ExpireCheckouts(ctx, now, e.Batch)
	if err != nil {
		return int(n + k + j), err
	}
	// The status counts the expiries and every other change appended.
	if _, err := e.Store.CompactRTPCounts(ctx); err != nil {
		return int(n + k + j), err
	}
	// Merchants on the sandbox's test clock: their own time's expiries.
	clocked, err := e.Store.ClockedMerchants(ctx)
	if err != nil {
		return int(n + k + j), err
	}
	for _, m := range clocked {
		c, err := e.Store.ExpireForMerchant(payd.WithCause(ctx, payd.CauseClock), m.ID, m.Now(now), e.Batch)
		j += c
		if err != nil {
			return int(n + k + j), err
		}
	}
	return int(n + k + j), nil
}

// Tokens deletes expired access tokens and idempotency keys.
type Tokens struct {
	Store *sqlstore.Store
	Clock payd.Clock
}

// RunOnce deletes the tokens and idempotency keys that have expired.
func (t *Tokens) RunOnce(ctx context.Context) (int, error) {
	n, err := t.Store.DeleteExpiredTokens(ctx, t.Clock.Now())
	if err != nil {
		return int(n), err
	}
	k, err := t.Store.DeleteExpiredIdempotencyKeys(ctx, t.Clock.Now())
	return int(n + k), err
}

// Retention prunes what payd no longer needs once it is older than Keep
// (PAYD_RETENTION): delivered callbacks and their attempts, delivered rails
// orders and the rails inbox. Expired tokens and idempotency keys are
// Tokens' work. It deletes in small batches so the API never waits.
type Retention struct {
	Store *sqlstore.Store
	Clock payd.Clock
	Keep  time.Duration
	Batch int // default 500
}

// RunOnce prunes everything past the retention.
func (r *Retention) RunOnce(ctx context.Context) (int, error) {
	if r.Batch == 0 {
		r.Batch = 500
	}
	n, err := r.Store.Prune(ctx, r.Clock.Now().Add(-r.Keep), r.Batch)
	return int(n), err
}

// Settlement keeps each merchant's settlement sums of the days that have
// stopped being live (sqlstore.KeepSettlement), so a merchant's report of
// past days never sums their payments at the moment it is asked.
type Settlement struct {
	Store *sqlstore.Store
	Clock payd.Clock
}

// RunOnce keeps the ended days of every merchant, in its own time.
func (k *Settlement) RunOnce(ctx context.Context) (int, error) {
	ms, err := k.Store.Merchants(ctx)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if err := k.Store.KeepSettlement(ctx, m.ID, m.Now(k.Clock.Now())); err != nil {
			return 0, err
		}
	}
	return len(ms), nil
}

// Intervals of the loops: well inside the contract's bounds (callbacks
// start within 5 s, expiry written within 10 s, sandbox refunds accepted
// within 5 s).
const (
	DeliveryInterval  = 500 * time.Millisecond
	RefundInterval    = 250 * time.Millisecond
	ExpiryInterval    = 2 * time.Second
	AutoInterval      = 250 * time.Millisecond
	TokenInterval     = 10 * time.Minute
	RetentionInterval = time.Hour
	// A day stops being live at midnight UTC; within the hour its sums are kept.
	SettlementInterval = time.Hour
)
