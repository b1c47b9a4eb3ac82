package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestNetErrorsReported: a request the server drops without an answer
// counts as status 0, and the report says what the client's transport
// saw; a request cut off by the scenario's end counts as neither.
func TestNetErrorsReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drop" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	hc := newHTTPClient(2)
	st := drive(context.Background(), "drop", 2, 10, 5*time.Second, func(ctx context.Context, i int) int {
		path := "/ok"
		if i%2 == 1 {
			path = "/drop"
		}
		s, _ := do(ctx, hc, "POST", srv.URL+path, "", []byte("{}"))
		return s
	})
	if st.Requests != 10 || st.Errors["0"] != 5 {
		t.Fatalf("requests %d, errors %v; want 10 with 5 of status 0", st.Requests, st.Errors)
	}
	n := 0
	for msg, c := range st.NetErrors {
		if !strings.Contains(msg, "EOF") && !strings.Contains(msg, "reset") {
			t.Errorf("network error %q: want the transport's EOF or reset", msg)
		}
		n += c
	}
	if n != 5 || !strings.Contains(st.String(), "network errors (status 0)") {
		t.Fatalf("%d network errors counted (%v), report:\n%s", n, st.NetErrors, st)
	}
	st = drive(context.Background(), "cut", 2, 1000, 200*time.Millisecond, func(ctx context.Context, i int) int {
		s, _ := do(ctx, hc, "GET", srv.URL+"/slow", "", nil)
		return s
	})
	if len(st.Errors) != 0 || len(st.NetErrors) != 0 || strings.Contains(st.String(), "network errors") {
		t.Fatalf("requests cut off by the end counted: %v %v", st.Errors, st.NetErrors)
	}
}

// TestFlowWaitsForEveryAcceptedCallback: rtp-flow stops waiting only when
// every accepted payment's callback has arrived, whatever else arrived.
func TestFlowWaitsForEveryAcceptedCallback(t *testing.T) {
	now := time.Now()
	accepted := map[string]time.Time{"p1": now, "p2": now}
	arrived := map[string]time.Time{"p1": now, "cut-off": now} // an acceptance the drive's end abandoned
	if allArrived(accepted, arrived) {
		t.Error("done with p2's callback still on its way")
	}
	arrived["p2"] = now
	if !allArrived(accepted, arrived) {
		t.Error("not done with every accepted callback in")
	}
}

// TestPace: operations go at the asked rate, catching up on late looks,
// and those due while every worker is busy are not owed. The looks are
// sent by the test, so that the figures are exact on a loaded machine.
func TestPace(t *testing.T) {
	const rate = 5000.0 // one due every 200 µs
	start := time.Now()
	at := func(d time.Duration) time.Time { return start.Add(d) }
	run := func(slots chan struct{}) (look func(time.Time), stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		looks := make(chan time.Time)
		ended := make(chan struct{})
		go func() { pace(ctx, start, rate, looks, slots); close(ended) }()
		// A look is taken once pace has dealt with the one before: a
		// second look at the same time releases nothing more.
		return func(now time.Time) { looks <- now; looks <- now }, func() { cancel(); <-ended }
	}

	// Workers always free (room for all): every look releases what fell
	// due since the last, however late it comes, and never more.
	slots := make(chan struct{}, 2000)
	look, stop := run(slots)
	for _, c := range []struct {
		at   time.Duration
		want int
	}{
		// Looks fall between due times (k × 200 µs), where a float's
		// rounding decides nothing.
		{1100 * time.Microsecond, 5},
		{1150 * time.Microsecond, 5},     // the 6th is due at 1.2 ms
		{1300 * time.Microsecond, 6},     // now it is
		{100100 * time.Microsecond, 500}, // a late look catches up
		{300100 * time.Microsecond, 1500},
	} {
		look(at(c.at))
		if len(slots) != c.want {
			t.Errorf("at %v: %d released, want %d", c.at, len(slots), c.want)
		}
	}
	stop()

	// Nobody takes the slots: at 200 ms the four a channel holds wait, not
	// the thousand that fell due. Drained, the next look releases only
	// what fell due after the last, up to the room there is.
	busy := make(chan struct{}, 4)
	look, stop = run(busy)
	defer stop()
	drain := func() {
		for len(busy) > 0 {
			<-busy
		}
	}
	look(at(200100 * time.Microsecond))
	if len(busy) != 4 {
		t.Errorf("%d slots waiting, want the channel's 4", len(busy))
	}
	drain()
	look(at(200500 * time.Microsecond)) // 2 more due
	if len(busy) != 2 {
		t.Errorf("%d released after the busy spell, want the 2 due since", len(busy))
	}
	drain()
	look(at(210100 * time.Microsecond)) // 48 due, room for 4: the rest are skipped
	if len(busy) != 4 {
		t.Errorf("%d released, want 4", len(busy))
	}
	drain()
	look(at(210300 * time.Microsecond))
	if len(busy) != 1 {
		t.Errorf("%d released after the skipped ones, want the 1 due since", len(busy))
	}
}
