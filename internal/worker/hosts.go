package worker

import (
	"strings"
	"sync"
	"time"

	"payd"
)

// One callback host takes at most PerHost of an instance's attempters
// (by default half of a loop's).
//
// Every loop's attempters (Delivery.attempters) took callbacks in the
// order they came, whatever their host, so a merchant whose endpoint
// accepted connections and never answered held each attempter it got for
// the whole attempt timeout (10 s). With 300 callbacks queued for such an
// endpoint, another merchant's callback committed after them arrived 30 s
// late (TestHungEndpointDoesNotHoldBackOthers). Now an instance has at most
// Delivery.PerHost attempts in flight to one host (the callback URL's
// scheme, host and port), across all its loops. A callback for a host at
// its limit is parked instead of taking an attempter, and the attempter
// that ends one of that host's attempts takes the oldest parked one next.
// One that could not start its attempt soon after it was leased
// (Delivery.Soon), or that finds the parking full, is not attempted here:
// it is given back (its lease released in one statement with the others),
// so that another instance's claim, or this one's next, takes it at once
// rather than after its lease. Those still parked when the instance stops
// are released too (Delivery.ReleaseParked).
// What is attempted, and when it is due, do not change: a parked callback
// is attempted as soon as its host has an attempt fewer in flight. The
// price: at the default limit of 32, a host that answers each callback in
// 500 ms gets at most 64 a second from an instance (each instance has its
// own limit); the operator raises it with PAYD_CALLBACK_PER_HOST.

// leased is a callback leased to this instance, with the lease's end and
// the time by which its attempt must start here (Delivery.Soon after it was
// leased), else it is given back.
type leased struct {
	c       *payd.Callback
	until   time.Time
	startBy time.Time
}

// hosts counts each host's attempts in flight and keeps the callbacks
// parked for it.
type hosts struct {
	mu    sync.Mutex
	limit int
	h     map[string]*host
}

type host struct {
	inFlight int
	parked   []leased // oldest first
}

// hostOf is the part of a callback URL that names where it connects:
// scheme, any user information, host and port.
func hostOf(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rawURL[:len(scheme)+3+len(rest)]
}

// parkedPerLimit bounds what is parked for one host: parkedPerLimit times
// the limit (256 with 64 attempters a loop), so that memory does not grow
// with a hung host's backlog; those past the bound are given back.
const parkedPerLimit = 8

// take reports whether l may be attempted now, counting the attempt; if
// its host is at the limit, l is parked and take reports false, or, with
// the parking full, giveBack: the caller releases its lease.
func (hs *hosts) take(l leased) (attempt, giveBack bool) {
	key := hostOf(l.c.URL)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.h == nil {
		hs.h = map[string]*host{}
	}
	h := hs.h[key]
	if h == nil {
		h = &host{}
		hs.h[key] = h
	}
	if h.inFlight >= hs.limit {
		if len(h.parked) < parkedPerLimit*hs.limit {
			h.parked = append(h.parked, l)
			return false, false
		}
		return false, true
	}
	h.inFlight++
	return true, false
}

// next ends an attempt of c's host and returns the callback parked for it
// to attempt next, counted in flight, if any: the oldest one still due to
// start by now; those past their startBy are returned to give back. With
// more false (the loop is stopping) nothing is taken; what stays parked is
// released at the stop (Delivery.ReleaseParked).
func (hs *hosts) next(c *payd.Callback, now time.Time, more bool) (l leased, ok bool, giveBack []leased) {
	key := hostOf(c.URL)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.h[key]
	h.inFlight--
	for more && len(h.parked) > 0 {
		l := h.parked[0]
		h.parked[0] = leased{}
		h.parked = h.parked[1:]
		if now.After(l.startBy) {
			giveBack = append(giveBack, l)
			continue
		}
		h.inFlight++
		return l, true, giveBack
	}
	if h.inFlight == 0 && len(h.parked) == 0 {
		delete(hs.h, key)
	}
	return leased{}, false, giveBack
}

// cancel ends the count of an attempt of c's host that will not be made
// (no attempter was free in time). When that leaves the host with none in
// flight, nothing would take what is parked for it: it is returned, to give
// back.
func (hs *hosts) cancel(c *payd.Callback) []leased {
	key := hostOf(c.URL)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.h[key]
	h.inFlight--
	if h.inFlight > 0 {
		return nil
	}
	out := h.parked
	delete(hs.h, key)
	return out
}

// drain takes every parked callback out of the parking, for every host:
// what a stopped instance gives up (Delivery.ReleaseParked).
func (hs *hosts) drain() []leased {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []leased
	for key, h := range hs.h {
		out = append(out, h.parked...)
		h.parked = nil
		if h.inFlight == 0 {
			delete(hs.h, key)
		}
	}
	return out
}

// parked is how many callbacks are parked, for every host.
func (hs *hosts) parked() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	n := 0
	for _, h := range hs.h {
		n += len(h.parked)
	}
	return n
}
