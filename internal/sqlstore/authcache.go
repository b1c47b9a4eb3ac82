package sqlstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"payd"
	"payd/internal/sqlstore/postgres"
)

// The authenticated-merchant cache. Authenticating a request otherwise
// costs a database read (token joined with merchant, and the merchant's
// signature key unsealed): on PostgreSQL a round trip, on SQLite a quarter
// of the CPU of a GET. The cache keeps, by token hash, the merchant a live
// token acts for, and is trusted only while this process follows the
// changes that could make an entry wrong: any update or delete of a
// merchant (secret rotation, deactivation, the test clock, a key
// re-sealing) and any deleted token (revocation, a sign out). Changes made
// through this store are dropped here directly, before the call returns;
// changes made by other processes (operator commands, other instances)
// reach it through the database:
//
//   - PostgreSQL: triggers notify the channel authChannel in the changing
//     transaction; ListenAuth listens on a connection of its own
//     (postgres.Listener) and drops the merchant's entries as each change
//     commits. A connection can hang
//     without closing (a network that drops packets), and a hung listener
//     hears nothing: so the listener also notifies itself every authPing
//     through the store's pool, and entries are served only while such a
//     ping, sent less than authMaxAgePG ago, has come back.
//   - SQLite: triggers bump the one row of auth_version; ListenAuth reads it
//     every authPoll and drops every entry when it moved. Entries are served
//     only while the last read that found no change started less than
//     authMaxAge ago, so a stalled or failing poll turns the cache off by
//     itself.
//
// Either way a process that commits such a change waits authSettle before
// its call returns, longer than the notification or the poll takes to
// reach every process: once the caller (an operator, another instance's
// client) can act on the change, no instance answers from what it cached.
//
// A lookup that started before a change and finished after it must not
// install what it read: each invalidation bumps a generation, and an entry
// is installed only if the generation it was read under is still current.
// When the listening connection is lost or the poll fails, the cache
// empties and stays off until it follows changes again. A process that
// does not run ListenAuth (the command line) never caches.

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
	// Entries are served while the last confirmation (SQLite: a poll of
	// auth_version; PostgreSQL: a ping heard back) started within maxAge;
	// version is what SQLite's poll read.
	maxAge  time.Duration
	freshAt time.Time
	version int64
}

// get returns the cached merchant of a token hash, as a copy.
func (c *authCache) get(hash string, now time.Time) (*payd.Merchant, bool) {
	c.mu.Lock()
	e, ok := c.entries[hash]
	on := c.on && time.Since(c.freshAt) <= c.maxAge
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

// confirmAt records that a change committed before sent has been heard
// (PostgreSQL: the listener's ping sent then came back).
func (c *authCache) confirmAt(sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent.After(c.freshAt) {
		c.freshAt = sent
	}
}

// confirm records a poll of auth_version that started at start and read v
// (SQLite): a moved version empties the cache; either way the entries are
// good for commits made before start. It reports whether the cache turned
// on.
func (c *authCache) confirm(v int64, start time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	turnedOn := !c.on
	if turnedOn || v != c.version {
		c.gen++
		c.entries = map[string]authEntry{}
		c.version = v
		c.on = true
	}
	c.freshAt = start
	return turnedOn
}

// authSettle is how long a committed authentication change waits before
// its call returns: on PostgreSQL its notification reaches the listening
// instances within a millisecond or two; on SQLite a poll that starts after
// the commit ends within authPoll plus a read, and entries older than
// authMaxAge are not served, so any answer from a cache after authSettle
// reflects the change. Such changes are rare: a rotation, a deactivation, a
// sign out, a test clock move.
const (
	authSettle = 50 * time.Millisecond
	authPoll   = 10 * time.Millisecond
	authMaxAge = 30 * time.Millisecond
	// PostgreSQL: the listener's own ping, and how long after the last one
	// that came back entries are still served.
	authPing     = time.Second
	authMaxAgePG = 5 * time.Second
)

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
// lives: on PostgreSQL it listens for merchant and token changes and drops
// what they touch, reconnecting after a lost connection; on SQLite it polls
// auth_version. The cache is off while neither works. onListening, if
// set, is called each time the cache turns on.
func (s *Store) ListenAuth(ctx context.Context, log *slog.Logger, onListening func()) {
	if s.plain {
		return // no cache: every request authenticates from the database
	}
	if s.engine == SQLite {
		s.pollAuth(ctx, log, onListening)
		return
	}
	if s.url == "" {
		return
	}
	url := s.url
	if s.listenURL != "" {
		url = s.listenURL
	}
	// Listening: whatever changed before is not in the emptied cache,
	// whatever changes after is notified. Entries are served once the
	// first ping has come back.
	(&postgres.Listener{URL: url, Channel: authChannel, Pool: s.w, Ping: authPing,
		On: func(listening bool) {
			s.auth.setOn(listening)
			if listening && onListening != nil {
				onListening()
			}
		},
		Heard: s.auth.drop, Back: s.auth.confirmAt,
		Lost: func(err error) {
			log.Warn("auth cache off: lost its notification connection; authenticating from the database", "err", err)
		},
	}).Run(ctx)
}

// pollAuth is ListenAuth on SQLite.
func (s *Store) pollAuth(ctx context.Context, log *slog.Logger, onListening func()) {
	defer s.auth.setOn(false)
	tick := time.NewTicker(authPoll)
	defer tick.Stop()
	failing := false
	for {
		start := time.Now()
		var v int64
		err := s.queryRow(ctx, "SELECT v FROM auth_version").Scan(&v)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Not confirmed: past authMaxAge the entries are not served.
			if !failing {
				log.Warn("auth cache off: cannot read auth_version; authenticating from the database", "err", err)
			}
			failing = true
		default:
			failing = false
			if s.auth.confirm(v, start) && onListening != nil {
				onListening()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
