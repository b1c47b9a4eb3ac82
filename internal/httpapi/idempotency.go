package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// validIdemKey: 1–255 printable ASCII characters.
func validIdemKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idemBusyWait is how long a request whose key is busy asks again before
// it answers 409.
const idemBusyWait = 2 * time.Second

// idempotent runs h under the request's Idempotency-Key (spec §8): the first
// 200 response is stored in the database for 24 hours and replayed byte for
// byte to the same request; a different request with the key gets 422, and
// one made while the first still runs gets 409.
func (c *call) idempotent(h func(*call) error) error {
	key := c.r.Header.Get("Idempotency-Key")
	if key == "" || c.m == nil || c.r.Method != http.MethodPost {
		return h(c)
	}
	if !validIdemKey(key) {
		return payd.Invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters")
	}
	sum := sha256.Sum256(c.body)
	req := sqlstore.IdemRequest{MerchantID: c.m.ID, Key: key, Method: c.r.Method, Path: c.r.URL.Path, BodyHash: hex.EncodeToString(sum[:])}
	outcome, stored, claim, err := c.s.store.BeginIdempotent(c.r.Context(), req, c.now)
	// A key busy may be a first request just ending, or one a fault left
	// whose release or answer is on its way once the database is back:
	// asked again for a moment before 409.
	for wait := time.Now().Add(idemBusyWait); err == nil && outcome == sqlstore.IdemBusy && time.Now().Before(wait); {
		select {
		case <-c.r.Context().Done():
			return c.r.Context().Err()
		case <-time.After(100 * time.Millisecond):
		}
		outcome, stored, claim, err = c.s.store.BeginIdempotent(c.r.Context(), req, c.now)
	}
	if err != nil {
		return err
	}
	switch outcome {
	case sqlstore.IdemMismatch:
		return payd.E(payd.CodeIdempotencyMismatch, "key", key)
	case sqlstore.IdemBusy:
		return payd.E(payd.CodeIdempotencyBusy, "key", key)
	case sqlstore.IdemReplay:
		c.w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(c.w, http.StatusOK, stored)
		return nil
	}
	rec := &recorder{ResponseWriter: c.w}
	w, r := c.w, c.r
	// The request's writes mark the claim in their transactions, so a
	// commit the database cut off is resolved, not guessed
	// (sqlstore/idempotency.go).
	c.w, c.r = rec, c.r.WithContext(sqlstore.WithClaim(c.r.Context(), claim))
	defer func() { c.w, c.r = w, r }()
	err = h(c)
	ok := err == nil && (rec.status == 0 || rec.status == http.StatusOK)
	// Record the outcome even if the client went away: the work was done.
	if ferr := c.s.store.FinishIdempotent(context.WithoutCancel(r.Context()), claim, ok, rec.body.Bytes()); ferr != nil && err == nil {
		c.s.log.Error("store idempotent response", "err", ferr)
	}
	return err
}

// recorder passes a response through while keeping a copy of its body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
