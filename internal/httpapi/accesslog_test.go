package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
	"payd/internal/web"
)

// slogLine is the line slog's handler of the format writes for e.
func slogLine(t testing.TB, e *accessEntry, json bool) string {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if json {
		h = slog.NewJSONHandler(&buf, nil)
	}
	if err := h.Handle(context.Background(), e.record()); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// FuzzAccessLine: whenever AccessLog writes a line itself, it is the line
// slog's handler writes for the same record, byte for byte, in both formats.
func FuzzAccessLine(f *testing.F) {
	f.Add("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "GET", "/v2/rtp/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "GET /v2/rtp/{id}", "127.0.0.1", 200, int64(1234567), int64(1764108000123456789), "0190a1b2-0000-7000-8000-000000000001")
	f.Add("x", "POST", "/v2/rtp", "unmatched", "2001:db8::1", 404, int64(999), int64(0), "")
	f.Add("id", "GET", "/a=b", "GET /", "", 200, int64(-1), int64(1), "m")
	f.Add("id", "GET", "/é", "GET  /x", "10.0.0.1", 499, int64(3_600_000_000_000), int64(-62135596800000000), "")
	f.Add("", "GET", "/\\", "", "a b", 0, int64(1), int64(1764108000999999999), " ")
	f.Add("id", "GET", "/", "GET /", "1.2.3.4", 200, int64(1), int64(1764108000123456790), "")
	f.Add("id", "GET", "/", "GET /", "1.2.3.4", 200, int64(1), int64(1764108000123456811), "") // an offset of 115 h
	f.Fuzz(func(t *testing.T, id, method, path, route, client string, status int, d, at int64, merchant string) {
		// The offset of the time's zone comes from its low bits: UTC, a
		// whole or half hour either way, or any number of seconds.
		loc := time.UTC
		switch z := int(at % 7919); {
		case z%3 == 1:
			loc = time.FixedZone("", (z%29-14)*1800)
		case z%3 == 2:
			loc = time.FixedZone("", z*int(at%97))
		}
		e := &accessEntry{at: time.Unix(0, at).In(loc), requestID: id, method: method, path: path, route: route, client: client,
			status: status, duration: time.Duration(d), merchantID: merchant}
		for _, json := range []bool{false, true} {
			a := NewAccessLog(nil, json)
			got, ok := a.appendLine(nil, e)
			if !ok {
				continue // logged through slog
			}
			if want := slogLine(t, e, json); string(got) != want {
				t.Fatalf("json=%v\n got %q\nwant %q", json, got, want)
			}
		}
	})
}

// TestAccessLineWrittenOnce: through the server, a request's access line
// is written once, by AccessLog when its values allow and by slog when
// they do not, and the two lines read the same way.
func TestAccessLineWrittenOnce(t *testing.T) {
	e := accessEntry{at: time.Date(2026, 11, 25, 22, 0, 0, 123456789, time.UTC), requestID: "r-1", method: "GET",
		path: "/v2/rtp/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", route: "GET /v2/rtp/{id}", client: "192.0.2.7", status: 200, duration: 1500 * time.Microsecond,
		merchantID: "0190a1b2-0000-7000-8000-000000000001"}
	for _, json := range []bool{false, true} {
		var buf bytes.Buffer
		if !NewAccessLog(&buf, json).write(&e) {
			t.Fatalf("json=%v: an RTP read's line went to slog", json)
		}
		if got, want := buf.String(), slogLine(t, &e, json); got != want {
			t.Fatalf("json=%v\n got %q\nwant %q", json, got, want)
		}
	}
	escapedPath := e
	escapedPath.path = "/v2/rtp/a=b"
	var buf bytes.Buffer
	if NewAccessLog(&buf, false).write(&escapedPath) || buf.Len() != 0 {
		t.Fatalf("a path slog quotes was written by AccessLog: %q", buf.String())
	}

	// The middleware: one line per request, whichever writes it.
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	store, _ := storetest.SQLite(t)
	clock := payd.NewFakeClock(storetest.Epoch)
	cfg := Config{AccessLog: NewAccessLog(&out, false)}
	s := New(cfg, store, clock, log, web.New(web.Config{}, store, clock, log))
	for _, path := range []string{"/nowhere", "/nowhere=1"} {
		out.Reset()
		s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "msg=request") || !strings.Contains(lines[0], " status=404 ") {
			t.Fatalf("%s: %q", path, out.String())
		}
		wantPath := "path=" + path
		if strings.Contains(path, "=") {
			wantPath = `path="` + path + `"`
		}
		if !strings.Contains(lines[0], wantPath) {
			t.Fatalf("%s: %q has no %s", path, lines[0], wantPath)
		}
	}
}
