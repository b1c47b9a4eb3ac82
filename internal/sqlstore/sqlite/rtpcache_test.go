package sqlite

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
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
	x, y := testID(0xaaa), testID(0xbbb)
	old := &payd.RTP{ID: x, Status: payd.RTPActive}
	served := func(c *RTPCache, id string) bool {
		_, ok := c.Get(id)
		return ok
	}
	fresh := func() *RTPCache {
		c := NewRTPCache()
		c.Confirm(1, time.Now())
		return c
	}

	c := fresh()
	gen := c.Generation()
	c.Put(old, gen)
	if !served(c, x) {
		t.Fatal("a read with no change beside it was not installed")
	}
	c.Mark(x)
	if served(c, x) {
		t.Error("a record about to change is still served")
	}

	// Read before the change, installed after its commit was settled.
	c = fresh()
	gen = c.Generation()
	c.Mark(x)
	c.Settle(c.Marked())
	c.Put(old, gen)
	if served(c, x) {
		t.Error("a read that started before a settled change installed the old record")
	}

	// Read after the mark (the change not yet committed, so the read
	// finds the old row), installed after the settle.
	c = fresh()
	c.Mark(x)
	gen = c.Generation()
	c.Settle(c.Marked())
	c.Put(old, gen)
	if served(c, x) {
		t.Error("a read that started before a change committed installed the old record after the settle")
	}

	// Read after the mark, installed before the settle.
	c = fresh()
	c.Mark(x)
	gen = c.Generation()
	c.Put(old, gen)
	if served(c, x) {
		t.Error("a record changing in an open transaction was installed")
	}
	c.Settle(c.Marked())
	gen = c.Generation()
	c.Put(old, gen)
	if !served(c, x) {
		t.Error("after the settle a new read was not installed")
	}

	// A mark made after the committer read its number (another writer's,
	// once the connection was free) is not settled with it.
	c = fresh()
	upto := c.Marked()
	c.Mark(y)
	c.Settle(upto)
	gen = c.Generation()
	c.Put(&payd.RTP{ID: y}, gen)
	if served(c, y) {
		t.Error("a change of a later transaction was settled early")
	}
	c.Settle(c.Marked())

	// A change whose RTP could not be told keeps every record out.
	c.Mark(allDirty)
	gen = c.Generation()
	c.Put(old, gen)
	if served(c, x) {
		t.Error("a record was installed while every record was dirty")
	}
	c.Settle(c.Marked())

	// Another connection's commit (data_version moved) drops everything;
	// the same version keeps it.
	gen = c.Generation()
	c.Put(old, gen)
	c.Confirm(1, time.Now())
	if !served(c, x) {
		t.Error("a poll that found no change dropped the records")
	}
	c.Confirm(2, time.Now())
	if served(c, x) {
		t.Error("another connection's commit did not drop the records")
	}

	// Unconfirmed for longer than RTPMaxAge: nothing is served.
	gen = c.Generation()
	c.Put(old, gen)
	c.Confirm(2, time.Now().Add(-RTPMaxAge-time.Millisecond))
	if served(c, x) {
		t.Error("records were served with no recent poll")
	}

	// Closed: nothing is kept.
	c.Close()
	c.Put(old, c.Generation())
	if served(c, x) {
		t.Error("a closed cache served a record")
	}
}

// TestRTPRingKeepsTheNewest: the ring, made small so that it wraps many
// times, answers every id with the record last put for it or not at all,
// always holds the newest records, and drops the oldest first.
func TestRTPRingKeepsTheNewest(t *testing.T) {
	g := &rtpRing{size: 16 << 10}
	defer g.free()
	last := map[string]*payd.RTP{}
	var ids []string
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20_000; i++ {
		var id string
		if len(ids) > 0 && rnd.IntN(4) == 0 {
			id = ids[rnd.IntN(len(ids))] // a record put again, changed
		} else {
			id = testID(i)
			ids = append(ids, id)
		}
		r := &payd.RTP{ID: id, MerchantID: "m", Alias: "37369112221", Amount: payd.Money(i), Currency: "MDL",
			Description: strings.Repeat("d", rnd.IntN(600)), Status: payd.RTPActive, PayID: fmt.Sprint(i),
			CreatedAt: payd.UnixMilli(int64(i)), UpdatedAt: payd.UnixMilli(int64(i) + 1), ExpiresAt: payd.UnixMilli(int64(i) + 2)}
		if i%3 == 0 {
			r.AutoAction, r.AutoAt = "accept", payd.UnixMilli(int64(i)+3)
		}
		g.put(r)
		last[id] = r
		if got, ok := g.get(id); !ok || !reflect.DeepEqual(got, r) {
			t.Fatalf("put %d: the newest record reads %+v, %v", i, got, ok)
		}
		if i%97 == 0 {
			for _, id := range ids {
				if got, ok := g.get(id); ok && !reflect.DeepEqual(got, last[id]) {
					t.Fatalf("after put %d: %s reads %+v, last put %+v", i, id, got, last[id])
				}
			}
		}
	}
	// Records put and never read again leave the index with their bytes,
	// oldest first: those still held are the newest ones, without a gap.
	const late = 5000
	for i := 0; i < late; i++ {
		g.put(&payd.RTP{ID: testID(100_000 + i), Status: payd.RTPActive})
	}
	if n := g.len(); n < 20 || n > 16<<10/ringHeader {
		t.Errorf("the ring's index holds %d records", n)
	}
	held := 0
	for i := late - 1; i >= 0; i-- {
		if _, ok := g.get(testID(100_000 + i)); !ok {
			break
		}
		held++
	}
	if held != g.len() {
		t.Errorf("the ring holds %d records, of which the newest %d in a row", g.len(), held)
	}
	// An id not canonical is not kept; nor is a record over the limit.
	upper := strings.ToUpper(testID(0xabcdef))
	g.put(&payd.RTP{ID: upper})
	g.put(&payd.RTP{ID: testID(-1), Description: strings.Repeat("x", rtpRecordMax)})
	if _, ok := g.get(upper); ok {
		t.Error("an id in upper case was kept")
	}
	if _, ok := g.get(testID(-1)); ok {
		t.Error("a record over the limit was kept")
	}
}

// testID is a canonical UUID numbered n.
func testID(n int) string {
	return fmt.Sprintf("%08x-0000-7000-8000-%012x", uint32(n), uint64(n)&0xffffffffffff)
}

// TestRTPRingKeepsEveryField: the ring (which lists payd.RTP's fields by
// hand) gives back every field of an RTP as it was put, each set to a
// value of its own by reflection: a field added to payd.RTP and not to
// the ring comes back as its zero value and fails here.
func TestRTPRingKeepsEveryField(t *testing.T) {
	var want payd.RTP
	v := reflect.ValueOf(&want).Elem()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case name == "ID":
			f.SetString("01a1fd38-56fa-7f9d-ba9b-1038a64df444")
		case f.Kind() == reflect.String:
			f.SetString(name + " value é")
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + i))
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(base.Add(time.Duration(i)*time.Hour + time.Duration(i)*time.Millisecond)))
		default:
			t.Fatalf("payd.RTP.%s is a %s: teach the ring (rtpring.go) and this test to keep it", name, f.Type())
		}
	}
	var g rtpRing
	g.size = 1 << 16
	defer g.free()
	g.put(&want)
	got, ok := g.get(want.ID)
	if !ok {
		t.Fatal("the record was not kept")
	}
	gv := reflect.ValueOf(got).Elem()
	for i := 0; i < v.NumField(); i++ {
		if a, b := v.Field(i).Interface(), gv.Field(i).Interface(); !reflect.DeepEqual(a, b) {
			t.Errorf("payd.RTP.%s: put %v, got %v back", v.Type().Field(i).Name, a, b)
		}
	}
}
