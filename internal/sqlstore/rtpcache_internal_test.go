package sqlstore

import (
	"testing"
	"time"

	"payd"
)

// TestRTPCacheInstallsNothingOverwritten plays the interleavings of a read
// of the table (generation, then the read, then put) with a change's mark
// (pre-update hook), its commit and settle, one at a time, and the polls
// of data_version: a record is served only when no change can have
// overtaken the read that installed it.
func TestRTPCacheInstallsNothingOverwritten(t *testing.T) {
	old := &payd.RTP{ID: "x", Status: payd.RTPActive}
	served := func(c *rtpCache, id string) bool {
		_, ok := c.get(id)
		return ok
	}
	fresh := func() *rtpCache {
		c := newRTPCache()
		c.confirm(1, time.Now())
		return c
	}

	c := fresh()
	gen := c.generation()
	c.put(old, gen)
	if !served(c, "x") {
		t.Fatal("a read with no change beside it was not installed")
	}
	c.mark("x")
	if served(c, "x") {
		t.Error("a record about to change is still served")
	}

	// Read before the change, installed after its commit was settled.
	c = fresh()
	gen = c.generation()
	c.mark("x")
	c.settle(c.marked())
	c.put(old, gen)
	if served(c, "x") {
		t.Error("a read that started before a settled change installed the old record")
	}

	// Read after the mark (the change not yet committed, so the read
	// finds the old row), installed after the settle.
	c = fresh()
	c.mark("x")
	gen = c.generation()
	c.settle(c.marked())
	c.put(old, gen)
	if served(c, "x") {
		t.Error("a read that started before a change committed installed the old record after the settle")
	}

	// Read after the mark, installed before the settle.
	c = fresh()
	c.mark("x")
	gen = c.generation()
	c.put(old, gen)
	if served(c, "x") {
		t.Error("a record changing in an open transaction was installed")
	}
	c.settle(c.marked())
	gen = c.generation()
	c.put(old, gen)
	if !served(c, "x") {
		t.Error("after the settle a new read was not installed")
	}

	// A mark made after the committer read its number (another writer's,
	// once the connection was free) is not settled with it.
	c = fresh()
	upto := c.marked()
	c.mark("y")
	c.settle(upto)
	gen = c.generation()
	c.put(&payd.RTP{ID: "y"}, gen)
	if served(c, "y") {
		t.Error("a change of a later transaction was settled early")
	}
	c.settle(c.marked())

	// A change whose RTP could not be told keeps every record out.
	c.mark(allDirty)
	gen = c.generation()
	c.put(old, gen)
	if served(c, "x") {
		t.Error("a record was installed while every record was dirty")
	}
	c.settle(c.marked())

	// Another connection's commit (data_version moved) drops everything;
	// the same version keeps it.
	gen = c.generation()
	c.put(old, gen)
	c.confirm(1, time.Now())
	if !served(c, "x") {
		t.Error("a poll that found no change dropped the records")
	}
	c.confirm(2, time.Now())
	if served(c, "x") {
		t.Error("another connection's commit did not drop the records")
	}

	// Unconfirmed for longer than rtpMaxAge: nothing is served.
	gen = c.generation()
	c.put(old, gen)
	c.confirm(2, time.Now().Add(-rtpMaxAge-time.Millisecond))
	if served(c, "x") {
		t.Error("records were served with no recent poll")
	}

	// Bounded.
	c = fresh()
	for i := 0; i < rtpCacheMax+10; i++ {
		c.put(&payd.RTP{ID: string(rune('a'+i%26)) + time.Duration(i).String()}, c.generation())
	}
	if n := len(c.records); n != rtpCacheMax {
		t.Errorf("%d records kept, want at most %d", n, rtpCacheMax)
	}
}
