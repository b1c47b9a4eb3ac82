package worker

import (
	"slices"
	"testing"
	"time"

	"payd"
)

func TestHostOf(t *testing.T) {
	for url, want := range map[string]string{
		"https://shop.example/callbacks?x=1": "https://shop.example",
		"https://shop.example:8443/a/b":      "https://shop.example:8443",
		"http://127.0.0.1:9000":              "http://127.0.0.1:9000",
		"https://u:p@shop.example#frag":      "https://u:p@shop.example",
		"http://[::1]:80/x":                  "http://[::1]:80",
	} {
		if got := hostOf(url); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestHostsParkAndTakeInOrder: past the limit a host's callbacks are
// parked; each attempt that ends takes the oldest parked one still due to
// start, returning those past their start-by to give back; a stopping loop
// takes none; another host is never held by the first.
func TestHostsParkAndTakeInOrder(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	cb := func(id, url string) *payd.Callback { return &payd.Callback{ID: id, URL: url} }
	fresh := func(c *payd.Callback) leased {
		return leased{c: c, until: now.Add(30 * time.Second), startBy: now.Add(5 * time.Second)}
	}
	hs := hosts{limit: 2}
	hung := "https://hung.example/cb"
	for i, id := range []string{"a1", "a2"} {
		if ok, _ := hs.take(fresh(cb(id, hung))); !ok {
			t.Fatalf("callback %d of the hung host parked below the limit", i+1)
		}
	}
	late := leased{c: cb("a3", hung), until: now.Add(30 * time.Second), startBy: now.Add(-time.Second)} // past its start-by when a slot frees
	for _, l := range []leased{late, fresh(cb("a4", hung+"?second")), fresh(cb("a5", hung))} {
		if ok, give := hs.take(l); ok || give {
			t.Fatalf("%s attempted (%v) or given back (%v) with its host at the limit", l.c.ID, ok, give)
		}
	}
	if ok, _ := hs.take(fresh(cb("b1", "https://other.example/cb"))); !ok {
		t.Fatal("another host's callback parked behind the hung host")
	}
	l, ok, back := hs.next(cb("a1", hung), now, true)
	if !ok || l.c.ID != "a4" || len(back) != 1 || back[0].c.ID != "a3" {
		t.Fatalf("after a1 ended: %v %v, back %v; want a4, a3 given back", l.c, ok, back)
	}
	if _, ok, _ := hs.next(cb("a2", hung), now, false); ok {
		t.Fatal("a stopping loop took a parked callback")
	}
	l, ok, _ = hs.next(cb("a4", hung), now, true)
	if !ok || l.c.ID != "a5" {
		t.Fatalf("after a4 ended: %v %v, want a5", l.c, ok)
	}
	if _, ok, _ := hs.next(cb("a5", hung), now, true); ok {
		t.Fatal("a callback taken from an empty parking")
	}
	if _, ok, _ := hs.next(cb("b1", "https://other.example/x"), now, true); ok {
		t.Fatal("a callback taken for the other host")
	}
	if len(hs.h) != 0 {
		t.Errorf("hosts with nothing in flight or parked are kept: %d", len(hs.h))
	}
}

// TestHostsParkingIsBounded: past parkedPerLimit times the limit, a busy
// host's callbacks are given back, not kept.
func TestHostsParkingIsBounded(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hs := hosts{limit: 2}
	url := "https://hung.example/cb"
	given := 0
	for i := range 2 + parkedPerLimit*2 + 5 {
		if _, give := hs.take(leased{c: &payd.Callback{ID: string(rune('a' + i)), URL: url}, until: now.Add(time.Minute), startBy: now.Add(time.Minute)}); give {
			given++
		}
	}
	if got, want := len(hs.h[hostOf(url)].parked), parkedPerLimit*2; got != want || given != 5 {
		t.Errorf("%d parked, %d given back; want the bound %d, 5", got, given, want)
	}
}

// TestHostsCancel: an attempt that will not be made ends its count; when
// it was its host's last in flight, what is parked for the host comes back
// to be given back (nothing else would take it).
func TestHostsCancel(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hs := hosts{limit: 1}
	l := func(id string) leased {
		return leased{c: &payd.Callback{ID: id, URL: "https://a.example/cb"}, until: now.Add(time.Minute), startBy: now.Add(time.Minute)}
	}
	hs.take(l("a1"))
	hs.take(l("a2"))
	if back := hs.cancel(l("a1").c); len(back) != 1 || back[0].c.ID != "a2" || len(hs.h) != 0 {
		t.Errorf("cancel of the host's last attempt: back %v, hosts %v", back, hs.h)
	}
}

// TestHostsDrain: drain returns what is parked for every host and leaves
// the attempts in flight counted (a host with none is forgotten).
func TestHostsDrain(t *testing.T) {
	until := time.Date(2026, 11, 28, 12, 1, 0, 0, time.UTC)
	hs := hosts{limit: 1}
	l := func(id string) leased {
		return leased{c: &payd.Callback{ID: id, URL: "https://" + id[:1] + ".example/cb"}, until: until, startBy: until}
	}
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2"} {
		hs.take(l(id))
	}
	var got []string
	for _, l := range hs.drain() {
		got = append(got, l.c.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a2", "a3", "b2"}) || hs.parked() != 0 {
		t.Errorf("drained %v, %d left parked; want [a2 a3 b2], 0", got, hs.parked())
	}
	if ok, _ := hs.take(l("a4")); ok {
		t.Error("a host with an attempt in flight took another past its limit after the drain")
	}
	hs.next(&payd.Callback{URL: "https://b.example/cb"}, until, true)
	if len(hs.drain()) != 1 || hs.h["https://b.example"] != nil {
		t.Errorf("after b's attempt ended and a second drain: hosts %v", hs.h)
	}
}
