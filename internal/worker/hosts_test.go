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
// parked; each attempt that ends takes the oldest parked one whose lease
// leaves room, skipping stale ones; a stopping loop takes none; another
// host is never held by the first.
func TestHostsParkAndTakeInOrder(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const lease = 30 * time.Second
	cb := func(id, url string) *payd.Callback { return &payd.Callback{ID: id, URL: url} }
	fresh := now.Add(lease)
	hs := hosts{limit: 2}
	hung := "https://hung.example/cb"
	for i, id := range []string{"a1", "a2"} {
		if !hs.take(leased{cb(id, hung), fresh}) {
			t.Fatalf("callback %d of the hung host parked below the limit", i+1)
		}
	}
	for _, l := range []leased{
		{cb("a3", hung), now.Add(lease / 4)}, // stale by the time a slot frees
		{cb("a4", hung+"?second"), fresh},
		{cb("a5", hung), fresh},
	} {
		if hs.take(l) {
			t.Fatalf("%s attempted with its host at the limit", l.c.ID)
		}
	}
	if !hs.take(leased{cb("b1", "https://other.example/cb"), fresh}) {
		t.Fatal("another host's callback parked behind the hung host")
	}
	l, ok := hs.next(cb("a1", hung), now, lease, true)
	if !ok || l.c.ID != "a4" {
		t.Fatalf("after a1 ended: %v %v, want a4 (a3's lease leaves no room)", l.c, ok)
	}
	if _, ok := hs.next(cb("a2", hung), now, lease, false); ok {
		t.Fatal("a stopping loop took a parked callback")
	}
	l, ok = hs.next(cb("a4", hung), now, lease, true)
	if !ok || l.c.ID != "a5" {
		t.Fatalf("after a4 ended: %v %v, want a5", l.c, ok)
	}
	if _, ok := hs.next(cb("a5", hung), now, lease, true); ok {
		t.Fatal("a callback taken from an empty parking")
	}
	if _, ok := hs.next(cb("b1", "https://other.example/x"), now, lease, true); ok {
		t.Fatal("a callback taken for the other host")
	}
	if len(hs.h) != 0 {
		t.Errorf("hosts with nothing in flight or parked are kept: %d", len(hs.h))
	}
}

// TestHostsParkingIsBounded: past parkedPerLimit times the limit, a busy
// host's callbacks are not kept.
func TestHostsParkingIsBounded(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hs := hosts{limit: 2}
	url := "https://hung.example/cb"
	for i := range 2 + parkedPerLimit*2 + 5 {
		hs.take(leased{&payd.Callback{ID: string(rune('a' + i)), URL: url}, now.Add(time.Minute)})
	}
	if got, want := len(hs.h[hostOf(url)].parked), parkedPerLimit*2; got != want {
		t.Errorf("%d parked, want the bound %d", got, want)
	}
}

// TestHostsDrain: drain returns what is parked for every host and leaves
// the attempts in flight counted (a host with none is forgotten).
func TestHostsDrain(t *testing.T) {
	until := time.Date(2026, 11, 28, 12, 1, 0, 0, time.UTC)
	hs := hosts{limit: 1}
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2"} {
		hs.take(leased{&payd.Callback{ID: id, URL: "https://" + id[:1] + ".example/cb"}, until})
	}
	var got []string
	for _, l := range hs.drain() {
		got = append(got, l.c.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a2", "a3", "b2"}) || hs.parked() != 0 {
		t.Errorf("drained %v, %d left parked; want [a2 a3 b2], 0", got, hs.parked())
	}
	if hs.take(leased{&payd.Callback{ID: "a4", URL: "https://a.example/cb"}, until}) {
		t.Error("a host with an attempt in flight took another past its limit after the drain")
	}
	hs.next(&payd.Callback{URL: "https://b.example/cb"}, until, 0, true)
	if len(hs.drain()) != 1 || hs.h["https://b.example"] != nil {
		t.Errorf("after b's attempt ended and a second drain: hosts %v", hs.h)
	}
}
