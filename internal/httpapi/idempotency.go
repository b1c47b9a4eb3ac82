package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

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
	outcome, stored, err := c.s.store.BeginIdempotent(c.r.Context(), req, c.now)
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
	w := c.w
	c.w = rec
	defer func() { c.w = w }()
	err = h(c)
	ok := err == nil && (rec.status == 0 || rec.status == http.StatusOK)
	// Record the outcome even if the client went away: the work was done.
	if ferr := c.s.store.FinishIdempotent(context.WithoutCancel(c.r.Context()), req, ok, rec.body.Bytes()); ferr != nil && err == nil {
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
