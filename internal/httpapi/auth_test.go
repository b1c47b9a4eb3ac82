package httpapi

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"payd"
)

// TestBearer: the token of an Authorization header, the scheme in any case,
// spaces and tabs around the two fields tolerated, anything else no token.
func TestBearer(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER   abc  ": "abc", " Bearer\tabc": "abc", "Bearer \u00a0abc": "abc",
		"": "", "Bearer": "", "Bearer ": "", "Basic abc": "", "Bearer a b": "", "Bearerabc": "", "Token abc": "", "abc": "",
	} {
		if got := bearer(h); got != want {
			t.Errorf("bearer(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestTokenClientIDNeverKept: a clientId that cannot be one (not a GUID, a
// body's worth of text) is refused as unknown before any limiter or query,
// so it is never kept; a GUID's buckets are kept under a fixed-size hash.
func TestTokenClientIDNeverKept(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		client, failed := e.api.limits.client.size(), e.api.limits.failed.size()
		big := strings.Repeat("x", 1<<19)
		for i, id := range []string{big + "1", big + "2", "not-a-guid", e.creds.ClientID + "x", strings.ToUpper(e.creds.ClientID) + " "} {
			e.call("POST", "/v2/auth/token", map[string]string{"clientId": id, "clientSecret": "s"}, "").wantError(401, "11000")
			if got := e.api.limits.client.size(); got != client {
				t.Errorf("request %d: the per-client limiter grew to %d buckets", i, got)
			}
		}
		if got := e.api.limits.failed.size(); got != failed {
			t.Errorf("the failures limiter grew from %d to %d buckets", failed, got)
		}
		// A GUID that is nobody's is still counted (it could be somebody's).
		e.call("POST", "/v2/auth/token", map[string]string{"clientId": payd.NewID(e.clock.Now()), "clientSecret": "s"}, "").wantError(401, "11000")
		if got := e.api.limits.failed.size(); got != failed+1 {
			t.Errorf("a wrong secret for a GUID: failures limiter %d buckets, want %d", got, failed+1)
		}
	})
}

// TestKeyedLimiterBounded: however many keys arrive, a limiter holds at
// most its bound, refilled buckets go at the next minute's sweep, and a key
// that is limited stays limited while the map is below its bound.
func TestKeyedLimiterBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k := newKeyedLimiter(2)
	k.max = 100
	for i := 0; i < 1000; i++ {
		if err := k.allow(limitKeyOf(strconv.Itoa(i)), now); err != nil {
			t.Fatal(err)
		}
	}
	if got := k.size(); got > 100 {
		t.Fatalf("%d buckets, bound 100", got)
	}
	key := limitKeyOf("one")
	k.allow(key, now)
	k.allow(key, now)
	if err := k.allow(key, now); err == nil {
		t.Error("third request within the burst of 2 allowed")
	}
	k.allow(limitKeyOf("later"), now.Add(sweepEvery))
	if got := k.size(); got != 1 {
		t.Errorf("after a minute's sweep %d buckets remain, want 1 (the new one)", got)
	}
}

// TestAddrKey: IPv4 addresses are limited one by one, IPv6 by /64.
func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1": "192.0.2.1", "::ffff:192.0.2.1": "192.0.2.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64", "2001:db8:1:2::ffff": "2001:db8:1:2::/64", "fe80::1%eth0": "fe80::/64",
		"pipe": "pipe",
	} {
		if got := addrKey(in); got != want {
			t.Errorf("addrKey(%q) = %q, want %q", in, got, want)
		}
	}
	if limitKeyOf("a b", "c") == limitKeyOf("a", "b c") {
		t.Error("two lists of parts share a key")
	}
}
