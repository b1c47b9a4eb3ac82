package sqlite

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"payd"
)

// RTPCache is the RTP record cache, on SQLite. A merchant polls GET /v2/rtp/{id} until
// the payer decides, and on SQLite that read was a third of payd's CPU: the
// pure-Go engine spends more on a statement (a read transaction, the WAL
// index's locks, a B-tree descent, the row's decoding) than PostgreSQL's
// round trip costs payd. Stored RTP records are therefore kept in memory
// by id (ring.go: the RTPs created and read last), and a read answers
// from there while the record cannot have changed. A new RTP goes in when
// its insert commits. Expiry is applied as of the request (RTP.Observe),
// as on a read from the table.
//
// A record can change in two ways, and the cache follows both:
//
//   - Through this store. Every write goes through the one writer
//     connection, and SQLite calls a pre-update hook there for each row a
//     statement is about to change (any statement: a use case, the expiry
//     loop, a migration). An updated or deleted RTP is dropped at once and
//     marked dirty; a dirty record is not cached again until the
//     transaction that changed it has ended, when the group committer
//     settles it. Settling also moves a generation, and a read installs
//     what it read only if the generation it started under is still
//     current: a read that started before a commit and finished after it
//     must not install the old row. Ids not found are not cached.
//   - Through another connection: another process (or another store on the
//     same file) that writes the database. The group committer reads
//     PRAGMA data_version on the writer connection every RTPPoll; it moves
//     only when another connection has committed, and then the whole cache
//     is dropped. Records are served only while the last poll that found no
//     such change started less than RTPMaxAge ago, so a foreign change is
//     seen within RTPMaxAge, and a stalled committer turns the cache off by
//     itself. payd's own commands do not write RTPs, and SQLite's shell
//     cannot (the table's indexes call payd_lower); a second payd serving
//     the same SQLite file would see the first one's RTP changes that late.
//
// PostgreSQL reads every RTP from the database (sqlstore/coalesce.go): several
// instances write it, and nothing tells one of another's change in time.

const (
	RTPPoll   = 10 * time.Millisecond
	RTPMaxAge = 30 * time.Millisecond
)

type RTPCache struct {
	// fresh is when the last poll that confirmed the cache started, on
	// the monotonic clock (mono); 0: never.
	fresh atomic.Int64
	// seq numbers the marks; settle clears the marks up to a number.
	seq atomic.Uint64

	mu      sync.Mutex
	records rtpRing // rtpring.go
	gen     uint64
	dirty   map[string]uint64 // id → its last mark; allDirty: every id
	version int64             // data_version at the last poll
	polled  bool              // version has been read
	closed  bool              // the store closed: the arena is gone
	hits    atomic.Int64      // reads answered from the cache (metrics)
}

// allDirty marks every record at once, when a change's RTP cannot be told.
const allDirty = ""

func NewRTPCache() *RTPCache {
	return &RTPCache{dirty: map[string]uint64{}}
}

// Get returns a copy of the record of id while the cache is fresh.
func (c *RTPCache) Get(id string) (*payd.RTP, bool) {
	if fresh := c.fresh.Load(); fresh == 0 || mono(time.Now())-fresh > int64(RTPMaxAge) {
		return nil, false
	}
	c.mu.Lock()
	r, ok := c.records.get(id)
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	c.hits.Add(1)
	return r, true
}

// Hits are the reads answered from the cache so far.
func (c *RTPCache) Hits() int64 { return c.hits.Load() }

// Generation is read before a read of the table; Put installs what the
// read found only if nothing was settled or dropped since. A nil cache
// (PostgreSQL) keeps nothing.
func (c *RTPCache) Generation() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *RTPCache) Put(r *payd.RTP, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.closed {
		return
	}
	if _, ok := c.dirty[r.ID]; ok {
		return
	}
	if _, ok := c.dirty[allDirty]; ok {
		return
	}
	c.records.put(r)
}

// Close frees the records' arena; the cache keeps nothing afterwards.
func (c *RTPCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.records.free()
}

// Mark drops the record of id, about to change in a transaction not yet
// ended, and keeps it out until Settle (allDirty: every record).
func (c *RTPCache) Mark(id string) {
	n := c.seq.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.dirty[id] = n
	if id == allDirty {
		c.records.clear()
	} else {
		c.records.drop(id)
	}
}

// Marked is the number of the last mark. The group committer reads it
// before its commit: the marks up to it are its own transaction's or those
// of writes that ended before the transaction began (the writer is one
// connection).
func (c *RTPCache) Marked() uint64 {
	if c == nil {
		return 0
	}
	return c.seq.Load()
}

// Settle clears the marks up to upto, once the transaction that made them
// has ended: their records may be cached again from reads that start from
// here on. There is nothing to drop: Mark dropped the records, and Put
// refused them while marked. The generation moves, so that a read that
// started before the commit does not install what it found.
func (c *RTPCache) Settle(upto uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dirty) == 0 {
		return
	}
	c.gen++
	for id, n := range c.dirty {
		if n <= upto {
			delete(c.dirty, id)
		}
	}
}

// Confirm records a poll of data_version that started at start and read v:
// a moved version (another connection committed) drops every record;
// either way the records are good as of start.
func (c *RTPCache) Confirm(v int64, start time.Time) {
	c.mu.Lock()
	if !c.polled || v != c.version {
		c.gen++
		c.records.clear()
		c.version, c.polled = v, true
	}
	c.mu.Unlock()
	c.fresh.Store(mono(start))
}

// monoBase anchors mono: a wall clock set back must not make old polls
// look recent.
var monoBase = time.Now()

// mono is t on the monotonic clock, in nanoseconds after monoBase (> 0).
func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) + 1 }

// preUpdate is the writer connection's pre-update hook: it marks each RTP
// a statement is about to update or delete.
func (c *RTPCache) preUpdate(d driver.SQLitePreUpdateData) {
	if d.TableName != "rtps" || d.Op == sqlite3.SQLITE_INSERT {
		return
	}
	// Old fills the elements of the slice it is given (one: id, the
	// table's first column).
	old := make([]any, 1)
	if err := d.Old(old...); err == nil {
		switch id := old[0].(type) {
		case string:
			c.Mark(id)
			return
		case []byte:
			c.Mark(string(id))
			return
		}
	}
	c.Mark(allDirty)
}

// The writer connections whose writes a cache follows, by the store
// number their DSN carries (writerParam). A connection hook, run for every
// connection the driver opens, installs the pre-update hook on them, on
// the first connection and on any that replaces it.
var (
	writerCaches sync.Map // store number → *RTPCache
	writerSeq    atomic.Int64
)

const writerParam = "_payd_writer"

// FollowWrites registers c for the writer connections opened with the DSN
// parameter it returns.
func FollowWrites(c *RTPCache) (param string, forget func()) {
	n := strconv.FormatInt(writerSeq.Add(1), 10)
	writerCaches.Store(n, c)
	return writerParam + "=" + n, func() { writerCaches.Delete(n) }
}

func init() {
	driver.RegisterConnectionHook(func(conn driver.ExecQuerierContext, dsn string) error {
		i := strings.IndexByte(dsn, '?')
		if i < 0 {
			return nil
		}
		q, err := url.ParseQuery(dsn[i+1:])
		if err != nil {
			return nil
		}
		v, ok := writerCaches.Load(q.Get(writerParam))
		if !ok {
			return nil
		}
		h, ok := conn.(driver.HookRegisterer)
		if !ok {
			return errors.New("the SQLite driver offers no pre-update hook: the RTP cache could not follow writes")
		}
		h.RegisterPreUpdateHook(v.(*RTPCache).preUpdate)
		return nil
	})
}
