package webhook

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"payd"
)

func TestAllowed(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
	}
	for _, s := range refused {
		if Allowed(netip.MustParseAddr(s), false) {
			t.Errorf("production allows %s", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:93.184.216.34"} {
		if !Allowed(netip.MustParseAddr(s), false) {
			t.Errorf("production refuses public %s", s)
		}
	}
	// The sandbox allows loopback, and only loopback, of the private ranges.
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		if !Allowed(netip.MustParseAddr(s), true) {
			t.Errorf("sandbox refuses loopback %s", s)
		}
	}
	for _, s := range []string{"10.0.0.1", "169.254.169.254", "192.168.0.1"} {
		if Allowed(netip.MustParseAddr(s), true) {
			t.Errorf("sandbox allows %s", s)
		}
	}
}

func newCallback(url string) *payd.Callback {
	m := &payd.Merchant{ID: "m", SignatureKey: "key"}
	return payd.NewCallback(payd.EventRTPAccepted, m, "pay", url, []byte(`{"result":{},"signature":"s"}`), time.UnixMilli(1700000000000))
}

func TestSendRefusesLoopbackInProductionAtDialTime(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	// By IP and by a name that resolves to loopback.
	for _, u := range []string{srv.URL, "http://localhost:" + srv.Listener.Addr().(interface{ String() string }).String()[len("127.0.0.1:"):]} {
		res := Send(t.Context(), NewClient(false), newCallback(u), 1)
		if res.OK() || res.StatusCode != 0 || res.Error == "" {
			t.Errorf("production send to %s = %+v", u, res)
		}
	}
	if hits != 0 {
		t.Errorf("receiver was reached %d times", hits)
	}
	if res := Send(t.Context(), NewClient(true), newCallback(srv.URL), 1); !res.OK() || hits != 1 {
		t.Errorf("sandbox send = %+v, hits %d", res, hits)
	}
}

func TestSendRefusesRedirectToForbiddenAddress(t *testing.T) {
	// A public-looking redirect is not followed either: 3xx is a failure.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
	}))
	defer srv.Close()
	res := Send(t.Context(), NewClient(true), newCallback(srv.URL), 1)
	if res.OK() || res.StatusCode != http.StatusFound {
		t.Errorf("redirect = %+v, want a failed attempt with status 302", res)
	}
}

func TestSendHeadersAndSuccessRule(t *testing.T) {
	var got http.Header
	status := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := newCallback(srv.URL)
	if res := Send(t.Context(), NewClient(true), c, 3); !res.OK() {
		t.Fatalf("send = %+v", res)
	}
	want := map[string]string{
		"Content-Type": "application/json", "User-Agent": UserAgent, "X-Callback-Id": c.ID,
		"X-Callback-Event": "rtp.accepted", "X-Callback-Attempt": "3", "X-Signature": c.Signature,
		"X-Signature-Timestamp": "1700000000000",
	}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v)
		}
	}
	if c.Signature != "sha256="+payd.HMACSignature("key", c.Body, 1700000000000) {
		t.Errorf("X-Signature = %s", c.Signature)
	}
	for _, s := range []int{201, 204, 400, 500} {
		status = s
		if res := Send(t.Context(), NewClient(true), c, 1); res.OK() || res.StatusCode != s {
			t.Errorf("status %d counted as %+v", s, res)
		}
	}
}

// TestBurstsReuseConnections: a second burst of as many attempts as payd
// makes to one host at once finds the first burst's connections open.
func TestBurstsReuseConnections(t *testing.T) {
	var dialed, arrived atomic.Int64
	all := make(chan struct{}) // closed when a burst's attempts are all in
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		wait := all
		if arrived.Add(1)%MaxIdlePerHost == 0 {
			close(all)
			all = make(chan struct{})
		}
		mu.Unlock()
		select { // every attempt of the burst holds its connection at once
		case <-wait:
		case <-time.After(10 * time.Second):
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client, c := NewClient(true), newCallback(srv.URL)
	burst := func() {
		var wg sync.WaitGroup
		for range MaxIdlePerHost {
			wg.Go(func() {
				if res := Send(t.Context(), client, c, 1); !res.OK() {
					t.Errorf("send = %+v", res)
				}
			})
		}
		wg.Wait()
	}
	burst()
	if first := dialed.Load(); first != MaxIdlePerHost {
		t.Fatalf("the first burst of %d attempts held %d connections", MaxIdlePerHost, first)
	}
	burst()
	if again := dialed.Load() - MaxIdlePerHost; again != 0 {
		t.Errorf("the second burst of %d attempts dialed %d connections anew", MaxIdlePerHost, again)
	}
}

// TestSendTimesOut: an attempt ends at the client's timeout, 10 s for
// callbacks (spec §6.7); the slow receiver is tried with a client whose
// timeout is shorter, so the test does not wait ten real seconds.
func TestSendTimesOut(t *testing.T) {
	if c := NewClient(true); c.Timeout != 10*time.Second || Timeout != 10*time.Second {
		t.Fatalf("attempt timeout %v (Timeout %v), want 10s", c.Timeout, Timeout)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	client := NewClient(true)
	client.Timeout = 200 * time.Millisecond
	start := time.Now()
	res := Send(t.Context(), client, newCallback(srv.URL), 1)
	if took := time.Since(start); res.OK() || res.Error == "" || took < client.Timeout || took > 5*time.Second {
		t.Errorf("slow receiver = %+v after %v, want an error after %v", res, took, client.Timeout)
	}
}

// TestSendKeepsATextExcerpt: the answer's first 4 KiB are kept as valid
// text without NUL bytes (a binary answer must not make the attempt's
// record fail on PostgreSQL).
func TestSendKeepsATextExcerpt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		w.Write(append([]byte("bad\x00\xff"), bytes.Repeat([]byte("x"), 10000)...))
	}))
	defer srv.Close()
	res := Send(context.Background(), NewClient(true), &payd.Callback{ID: "c", URL: srv.URL, Body: []byte("{}")}, 1)
	if res.StatusCode != 500 || !strings.HasPrefix(res.Body, "bad\uFFFD\uFFFD") || strings.ContainsRune(res.Body, 0) || !utf8.ValidString(res.Body) ||
		len(res.Body) > ResponseExcerpt+8 {
		t.Errorf("excerpt: %d, %q…", res.StatusCode, res.Body[:min(len(res.Body), 20)])
	}
}
