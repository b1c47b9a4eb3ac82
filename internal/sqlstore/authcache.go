package sqlstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"payd"
)

// The authenticated-merchant cache (PostgreSQL only). Authenticating a
// request otherwise costs a round trip: token joined with merchant. The
// cache keeps, by token hash, the merchant a live token acts for, and is
// trusted only while this process listens on the channel authChannel:
// triggers on merchants (any update or delete: secret rotation,
// deactivation, the test clock) and on tokens (delete: revocation) notify it
// in the changing transaction, so every instance, and every operator
// command run from another process, drops the merchant's entries when the
// change commits. Changes made through this store are also dropped here
// directly, before the call returns.
//
// A lookup that started before a change and finished after it must not
// install what it read: each invalidation bumps a generation, and an entry
// is installed only if the generation it was read under is still current.
// When the listening connection is lost the cache empties and stays off
// until it listens again.
//
// SQLite serves one process whose lookups are local and cheap, and an
// operator command on the same file could not notify it: no cache there.

const authChannel = "payd_auth"

// authCacheMax bounds the cache; past it the cache starts over.
const authCacheMax = 50_000

type authEntry struct {
	m       *payd.Merchant
	expires int64 // the token's expiry, in ms
}

type authCache struct {
	mu      sync.Mutex
	on      bool
	gen     uint64
	entries map[string]authEntry
}

// get returns the cached merchant of a token hash, as a copy.
func (c *authCache) get(hash string, now time.Time) (*payd.Merchant, bool) {
	c.mu.Lock()
	e, ok := c.entries[hash]
	on := c.on
	c.mu.Unlock()
	if !on || !ok || e.expires <= ms(now) {
		return nil, false
	}
	m := *e.m
	return &m, true
}

// generation is read before a lookup; put installs its result only if no
// invalidation happened since.
func (c *authCache) generation() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.on
}

func (c *authCache) put(hash string, m *payd.Merchant, expires int64, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || c.gen != gen {
		return
	}
	if len(c.entries) >= authCacheMax {
		c.entries = map[string]authEntry{}
	}
	cp := *m
	c.entries[hash] = authEntry{m: &cp, expires: expires}
}

// drop forgets every entry of a merchant ("" forgets all).
func (c *authCache) drop(merchantID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if merchantID == "" || e.m.ID == merchantID {
			delete(c.entries, h)
		}
	}
}

// setOn empties the cache and turns it on or off.
func (c *authCache) setOn(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.on = on
	c.entries = map[string]authEntry{}
}

// authSettle is how long a committed authentication change waits before
// its call returns, on PostgreSQL: its notification reaches the listening
// instances within a millisecond or two, so by the time the caller (an
// operator, the other instance's client) can act on the change, every
// instance has dropped what it cached. Such changes are rare: a rotation, a
// deactivation, a sign out, a test clock move.
const authSettle = 50 * time.Millisecond

// forgetMerchant drops a merchant's cached authentications ("" all of them)
// after a change this process committed, and lets the change settle on the
// other instances.
func (s *Store) forgetMerchant(merchantID string) {
	if s.auth == nil {
		return
	}
	s.auth.drop(merchantID)
	time.Sleep(authSettle)
}

// ListenAuth keeps the authenticated-merchant cache on for as long as ctx
// lives, on PostgreSQL: it listens for merchant and token changes and
// drops what they touch, reconnecting after a lost connection (the cache
// is off meanwhile). On SQLite it returns at once. onListening, if set, is
// called each time the listener is (re)established.
func (s *Store) ListenAuth(ctx context.Context, log *slog.Logger, onListening func()) {
	if s.engine != Postgres || s.url == "" {
		return
	}
	for ctx.Err() == nil {
		err := s.listenAuthOnce(ctx, onListening)
		s.auth.setOn(false)
		if ctx.Err() != nil {
			return
		}
		log.Warn("auth cache off: lost its notification connection; authenticating from the database", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenAuthOnce(ctx context.Context, onListening func()) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+authChannel); err != nil {
		return err
	}
	// Listening from here on: whatever changed before is not in the
	// emptied cache, whatever changes after is notified.
	s.auth.setOn(true)
	if onListening != nil {
		onListening()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.auth.drop(n.Payload)
	}
}
