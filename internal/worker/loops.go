package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// Refunds is the sandbox refund processor: Created → Requested → the
// outcome the reason asks for (spec §5.3, §7.2).
type Refunds struct {
	Store *sqlstore.Store
	Clock payd.Clock
	Batch int // default 100
}

// RunOnce settles the refunds that are due.
func (r *Refunds) RunOnce(ctx context.Context) (int, error) {
	if r.Batch == 0 {
		r.Batch = 100
	}
	return r.Store.ProcessRefunds(ctx, r.Clock.Now(), r.Batch)
}

// Expiry writes the expired state of objects whose deadline has passed.
// Reads already show it (lazy expiry); this makes the rows agree.
type Expiry struct {
	Store *sqlstore.Store
	Clock payd.Clock
	Batch int // default 500
}

// RunOnce expires one batch.
func (e *Expiry) RunOnce(ctx context.Context) (int, error) {
	if e.Batch == 0 {
		e.Batch = 500
	}
	now := e.Clock.Now()
	n, err := e.Store.ExpireRTPs(ctx, now, e.Batch)
	if err != nil {
		return int(n), err
	}
	k, err := e.Store.ExpireQRs(ctx, now, e.Batch)
	if err != nil {
		return int(n + k), err
	}
	j, err := e.Store.ExpireCheckouts(ctx, now, e.Batch)
	return int(n + k + j), err
}

// AutoDecisions plays the payer of the sandbox's auto-accept and
// auto-reject test aliases.
type AutoDecisions struct {
	Store *sqlstore.Store
	Clock payd.Clock
	Log   *slog.Logger
}

// RunOnce takes every decision that is due.
func (a *AutoDecisions) RunOnce(ctx context.Context) (int, error) {
	now := a.Clock.Now()
	due, err := a.Store.DueRTPDecisions(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, d := range due {
		m, err := a.Store.Merchant(ctx, d.MerchantID)
		if err != nil {
			return done, err
		}
		if d.Action == "accept" {
			_, _, err = a.Store.AcceptRTP(ctx, m, d.RTPID, nil, now)
		} else {
			_, err = a.Store.RejectRTP(ctx, m.ID, d.RTPID, now)
		}
		var pe *payd.Error
		switch {
		case errors.As(err, &pe) || errors.Is(err, payd.ErrConflict):
			// Cancelled, expired or decided meanwhile: nothing left to decide.
			if err := a.Store.ClearRTPDecision(ctx, d.RTPID); err != nil {
				return done, err
			}
		case err != nil:
			return done, err
		}
		done++
	}
	return done, nil
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

// Intervals of the loops: well inside the contract's bounds (callbacks
// start within 5 s, expiry written within 10 s, sandbox refunds accepted
// within 5 s).
const (
	DeliveryInterval = 500 * time.Millisecond
	RefundInterval   = 250 * time.Millisecond
	ExpiryInterval   = 2 * time.Second
	AutoInterval     = 250 * time.Millisecond
	TokenInterval    = 10 * time.Minute
)
