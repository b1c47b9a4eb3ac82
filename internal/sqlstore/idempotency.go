package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

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

// IdemTTL is how long a key is kept; IdemStale is how long a "running"
// claim holds before another request may take it over (its instance died).
const (
	IdemTTL   = 24 * time.Hour
	IdemStale = 2 * time.Minute
)

// BeginIdempotent claims the key for r, or reports what the key already holds.
func (s *Store) BeginIdempotent(ctx context.Context, r IdemRequest, now time.Time) (IdemOutcome, []byte, error) {
	var outcome IdemOutcome
	var response []byte
	err := s.inTx(ctx, func(t *tx) error {
		var method, path, hash, state string
		var resp sql.NullString
		var created, expires int64
		err := t.queryRow(ctx, `SELECT method, path, body_hash, state, response, created_at, expires_at FROM idempotency_keys
			WHERE merchant_id = ? AND key = ?`+s.forUpdate(), r.MerchantID, r.Key).Scan(&method, &path, &hash, &state, &resp, &created, &expires)
		var res sql.Result
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Of two first requests racing, the insert lets exactly one in.
			res, err = t.exec(ctx, `INSERT INTO idempotency_keys (merchant_id, key, method, path, body_hash, state, created_at, expires_at)
				VALUES (?, ?, ?, ?, ?, 'running', ?, ?) ON CONFLICT (merchant_id, key) DO NOTHING`,
				r.MerchantID, r.Key, r.Method, r.Path, r.BodyHash, ms(now), ms(now.Add(IdemTTL)))
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
		case expires > ms(now) && created > ms(now.Add(-IdemStale)):
			outcome = IdemBusy
			return nil
		default:
			// Expired, or claimed by a request whose instance died: take it over.
			res, err = t.exec(ctx, `UPDATE idempotency_keys SET method = ?, path = ?, body_hash = ?, state = 'running', response = NULL,
				created_at = ?, expires_at = ? WHERE merchant_id = ? AND key = ? AND created_at = ?`,
				r.Method, r.Path, r.BodyHash, ms(now), ms(now.Add(IdemTTL)), r.MerchantID, r.Key, created)
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
	return outcome, response, err
}

// FinishIdempotent stores the 200 response of a claimed key, or releases
// the key when the request did not succeed (only 200s are kept, so a retry
// after an error runs again).
// A stored response is sealed: it may carry a signature key (test-pay).
func (s *Store) FinishIdempotent(ctx context.Context, r IdemRequest, ok bool, response []byte) error {
	sealed := ""
	if ok {
		var err error
		if sealed, err = s.seal(string(response)); err != nil {
			return err
		}
	}
	return s.inTx(ctx, func(t *tx) error {
		if ok {
			_, err := t.exec(ctx, `UPDATE idempotency_keys SET state = 'done', response = ? WHERE merchant_id = ? AND key = ? AND state = 'running'`,
				sealed, r.MerchantID, r.Key)
			return err
		}
		_, err := t.exec(ctx, "DELETE FROM idempotency_keys WHERE merchant_id = ? AND key = ? AND state = 'running'", r.MerchantID, r.Key)
		return err
	})
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
