package callback

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Dedup remembers which callbacks were handled, by X-Callback-Id. Seen
// reports whether id was already handled; Done records that it was. A
// database table with a unique key is the usual implementation.
type Dedup interface {
	Seen(ctx context.Context, id string) (bool, error)
	Done(ctx context.Context, id string) error
}

// MemoryDedup is a Dedup in memory, for one process (tests, demos). It
// forgets ids older than its TTL.
type MemoryDedup struct {
	mu  sync.Mutex
	ids map[string]time.Time
	TTL time.Duration // default 7 days: longer than payd's redelivery schedule
}

// NewMemoryDedup returns an empty MemoryDedup.
func NewMemoryDedup() *MemoryDedup { return &MemoryDedup{ids: map[string]time.Time{}} }

// Seen reports whether id was recorded.
func (m *MemoryDedup) Seen(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[id]
	return ok, nil
}

// Done records id, dropping ids past the TTL.
func (m *MemoryDedup) Done(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ttl := m.TTL
	if ttl == 0 {
		ttl = 7 * 24 * time.Hour
	}
	now := time.Now()
	for k, at := range m.ids {
		if now.Sub(at) > ttl {
			delete(m.ids, k)
		}
	}
	m.ids[id] = now
	return nil
}

// MaxBody is the largest callback body the handler reads.
const MaxBody = 1 << 20

// Handler verifies each callback, skips one already handled (answering
// 200 so payd stops redelivering it), and calls handle. It answers 200
// only after handle returned nil and the id was recorded; 401 for a
// callback that does not verify, 500 when handle fails, so that payd
// delivers it again later.
func (v *Verifier) Handler(dedup Dedup, handle func(ctx context.Context, e *Event) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		if err != nil || len(body) > MaxBody {
			http.Error(w, "body too large or unreadable", http.StatusBadRequest)
			return
		}
		e, err := v.Verify(r.Header, body)
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrSignature) || errors.Is(err, ErrBodySignature) || errors.Is(err, ErrTimestamp) {
				status = http.StatusUnauthorized
			}
			http.Error(w, err.Error(), status)
			return
		}
		ctx := r.Context()
		if e.ID != "" {
			seen, err := dedup.Seen(ctx, e.ID)
			if err != nil {
				http.Error(w, "dedup: "+err.Error(), http.StatusInternalServerError)
				return
			}
			if seen {
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		if err := handle(ctx, e); err != nil {
			http.Error(w, "not handled: "+err.Error(), http.StatusInternalServerError)
			return
		}
		if e.ID != "" {
			if err := dedup.Done(ctx, e.ID); err != nil {
				http.Error(w, "dedup: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}
