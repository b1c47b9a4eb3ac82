package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"payd"
)

// Idempotency keys (spec §8), through faults. A key is claimed by a
// request with a token of its own; every write transaction the request
// runs marks the claim applied, in that transaction, under that token
// (the claim is a fence: a request whose claim was taken over writes
// nothing). So the key says whether the request's effect committed:
//
//   - a transaction whose commit was cut off (the database failed over
//     under it) is resolved by reading the mark once the database answers
//     again: committed, the request goes on and answers as if nothing had
//     happened; not committed, it fails and its retry runs it again;
//   - a claim that was never applied, and whose request is gone (released
//     when the database was away, or its instance died), is taken over by
//     a retry after IdemStale; it cannot have applied anything;
//   - the answer of a request that applied is kept for its retries, and
//     kept trying to be stored while the database is away.

// IdemRequest identifies a request made under an Idempotency-Key.
type IdemRequest struct {
	MerchantID, Key, Method, Path, BodyHash string
}

// IdemOutcome is what BeginIdempotent found.
type IdemOutcome int

const (
	IdemNew      IdemOutcome = iota // the key is ours: run the request
	IdemReplay                      // a stored 200 response to replay
	IdemMismatch                    // the key was used for a different request
	IdemBusy                        // the first request is still running
)

// IdemTTL is how long a key is kept; IdemStale is how long a claim that
// applied nothing holds before another request may take it over (its
// request is gone, or slower than any client waits: taking over is safe,
// the claim fences it).
const (
	IdemTTL   = 24 * time.Hour
	IdemStale = 10 * time.Second
)

// IdemClaim is a request's hold on its key.
type IdemClaim struct {
	IdemRequest
	Token string
	txs   int // the request's write transactions so far
}

type claimKey struct{}

// WithClaim is ctx carrying the claim: every write transaction of the
// request marks it (inTx).
func WithClaim(ctx context.Context, c *IdemClaim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

func claimOf(ctx context.Context) *IdemClaim {
	c, _ := ctx.Value(claimKey{}).(*IdemClaim)
	return c
}

// unclaimed is ctx without a claim: the key's own writes do not mark it.
func unclaimed(ctx context.Context) context.Context {
	if claimOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, claimKey{}, (*IdemClaim)(nil))
}

// IdemResolve bounds how long a request waits for the database to answer
// again, to learn whether its cut-off commit happened.
var IdemResolve = 30 * time.Second

// markClaim marks the claim applied by the request's next transaction
// (queued with the transaction's writes: no round trip of its own). It
// returns the transaction's number in the request.
func (t *tx) markClaim(ctx context.Context, c *IdemClaim) (int, error) {
	k := c.txs + 1
	// A claim taken over (its request too slow) writes nothing: busy.
	err := t.write(ctx, 1, payd.E(payd.CodeIdempotencyBusy, "key", c.Key), `UPDATE idempotency_keys SET applied = ? WHERE merchant_id = ? AND key = ? AND token = ?
		AND state = 'running' AND applied = ?`, k, c.MerchantID, c.Key, c.Token, k-1)
	return k, err
}

// resolveClaim learns, once the database answers, whether the request's
// k'th transaction committed: the claim's mark says. It waits up to
// IdemResolve.
func (s *Store) resolveClaim(ctx context.Context, c *IdemClaim, k int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), IdemResolve)
	defer cancel()
	for {
		var applied int
		// On the writer's pool: the primary, never a standby behind it.
		err := s.w.QueryRowContext(ctx, s.d.rebind("SELECT applied FROM idempotency_keys WHERE merchant_id = ? AND key = ? AND token = ?"),
			c.MerchantID, c.Key, c.Token).Scan(&applied)
		switch {
		case err == nil:
			return applied >= k, nil
		case errors.Is(err, sql.ErrNoRows):
			return false, nil
		case !Unavailable(err) || ctx.Err() != nil:
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// claimedTx runs f as inTx does, under the request's claim: marked, and a
// commit cut off resolved by the mark.
func (s *Store) claimedTx(ctx context.Context, c *IdemClaim, run func(func(*tx) error) error, f func(*tx) error) error {
	var k int
	fault := ""
	if claimFault != nil {
		fault = claimFault()
	}
	err := run(func(t *tx) error {
		var err error
		if k, err = t.markClaim(ctx, c); err != nil {
			return err
		}
		if err := f(t); err != nil {
			return err
		}
		if fault == "before" {
			return errFault
		}
		return nil
	})
	if err == nil && fault == "after" {
		err = errFault
	}
	if err != nil && k > 0 && Unavailable(err) {
		// The outcome of the commit is unknown: the mark tells.
		if applied, rerr := s.resolveClaim(ctx, c, k); rerr == nil && applied {
			err = nil
		}
	}
	if err == nil {
		c.txs = k
	}
	return err
}

// claimFault, set by tests, makes claimed transactions fail as a database
// fault does: "before" their commit (nothing committed) or "after" it
// (committed, its answer lost).
var claimFault func() string

var errFault = fmt.Errorf("commit: %w (a fault)", io.ErrUnexpectedEOF)

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// BeginIdempotent claims the key for r, or reports what the key already
// holds. A claim that a fault may have left written is released by itself
// once the database answers.
func (s *Store) BeginIdempotent(ctx context.Context, r IdemRequest, now time.Time) (IdemOutcome, []byte, *IdemClaim, error) {
	ctx = unclaimed(ctx)
	claim := &IdemClaim{IdemRequest: r, Token: newToken()}
	var outcome IdemOutcome
	var response []byte
	err := s.inTx(ctx, func(t *tx) error {
		var method, path, hash, state string
		var resp, token sql.NullString
		var created, expires int64
		var applied int
		err := t.queryRow(ctx, `SELECT method, path, body_hash, state, response, created_at, expires_at, token, applied FROM idempotency_keys
			WHERE merchant_id = ? AND key = ?`+s.d.forUpdate(), r.MerchantID, r.Key).Scan(&method, &path, &hash, &state, &resp, &created, &expires,
			&token, &applied)
		var res sql.Result
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Of two first requests racing, the insert lets exactly one in.
			res, err = t.exec(ctx, `INSERT INTO idempotency_keys (merchant_id, key, method, path, body_hash, state, created_at, expires_at,
				token, applied) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, 0) ON CONFLICT (merchant_id, key) DO NOTHING`,
				r.MerchantID, r.Key, r.Method, r.Path, r.BodyHash, ms(now), ms(now.Add(IdemTTL)), claim.Token)
		case err != nil:
			return err
		case expires > ms(now) && (method != r.Method || path != r.Path || hash != r.BodyHash):
			outcome = IdemMismatch
			return nil
		case expires > ms(now) && state == "done":
			plain, err := s.open(resp.String)
			if err != nil {
				return err
			}
			outcome, response = IdemReplay, []byte(plain)
			return nil
		case expires > ms(now) && (applied > 0 || created > ms(now.Add(-IdemStale))):
			// Running, or applied and its answer on its way.
			outcome = IdemBusy
			return nil
		default:
			// Expired, or claimed by a request that applied nothing and is
			// gone: take it over (the old claim can no longer write).
			res, err = t.exec(ctx, `UPDATE idempotency_keys SET method = ?, path = ?, body_hash = ?, state = 'running', response = NULL,
				created_at = ?, expires_at = ?, token = ?, applied = 0 WHERE merchant_id = ? AND key = ? AND created_at = ?
				AND COALESCE(token, '') = ? AND (applied = 0 OR expires_at <= ?)`,
				r.Method, r.Path, r.BodyHash, ms(now), ms(now.Add(IdemTTL)), claim.Token, r.MerchantID, r.Key, created, token.String, ms(now))
		}
		if err != nil {
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			outcome = IdemBusy
			return nil
		}
		outcome = IdemNew
		return nil
	})
	if err != nil {
		if Unavailable(err) {
			go s.releaseLater(claim) // the claim may have committed
		}
		return 0, nil, nil, err
	}
	if outcome != IdemNew {
		claim = nil
	}
	return outcome, response, claim, nil
}

// FinishIdempotent stores the 200 response of a claim, or releases the
// key when the request did not succeed and applied nothing (only 200s are
// kept, so a retry after an error runs again; a key whose request applied
// is kept). A stored response is sealed: it may carry a signature key
// (test-pay). While the database is away, a response is kept trying to
// be stored, a release likewise.
func (s *Store) FinishIdempotent(ctx context.Context, c *IdemClaim, ok bool, response []byte) error {
	ctx = unclaimed(ctx)
	if !ok {
		err := s.release(ctx, c)
		if Unavailable(err) {
			go s.releaseLater(c)
		}
		return err
	}
	sealed, err := s.seal(string(response))
	if err != nil {
		return err
	}
	store := func(ctx context.Context) error {
		return s.write1(ctx, `UPDATE idempotency_keys SET state = 'done', response = ? WHERE merchant_id = ? AND key = ? AND token = ?
			AND state = 'running'`, sealed, c.MerchantID, c.Key, c.Token)
	}
	if err := store(ctx); !Unavailable(err) {
		return err
	}
	go s.retryUntil(IdemTTL, store)
	return nil
}

func (s *Store) release(ctx context.Context, c *IdemClaim) error {
	return s.write1(ctx, "DELETE FROM idempotency_keys WHERE merchant_id = ? AND key = ? AND token = ? AND state = 'running' AND applied = 0",
		c.MerchantID, c.Key, c.Token)
}

// releaseLater releases c once the database answers (for up to IdemStale,
// after which a retry takes the claim over anyway).
func (s *Store) releaseLater(c *IdemClaim) {
	deadline := time.Now().Add(IdemStale)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.release(ctx, c)
		cancel()
		if !Unavailable(err) || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond) // a retry of the request waits for it (httpapi: idemBusyWait)
	}
}

// retryUntil runs f until it succeeds or fails for another reason than
// the database being away, for up to d.
func (s *Store) retryUntil(d time.Duration, f func(context.Context) error) {
	deadline := time.Now().Add(d)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := f(ctx)
		cancel()
		if !Unavailable(err) || time.Now().Add(wait).After(deadline) {
			if err != nil {
				slog.Warn("idempotency key not settled", "err", err)
			}
			return
		}
		time.Sleep(wait)
	}
}

// DeleteExpiredIdempotencyKeys removes keys past their 24 hours.
func (s *Store) DeleteExpiredIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, "DELETE FROM idempotency_keys WHERE expires_at <= ?", ms(now))
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	return n, err
}
