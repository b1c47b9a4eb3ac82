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
// and those due while every worker is busy are not owed.
func TestPace(t *testing.T) {
	const rate = 5000.0
	// The best of three 300 ms windows: on a loaded machine (CI runs
	// packages side by side under the race detector) one window can lose
	// the CPU; a pace that loses ticks loses them in every window.
	var n int
	var want float64
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		slots := make(chan struct{}, 4)
		go pace(ctx, start, rate, slots)
		n = 0
		for ctx.Err() == nil {
			select {
			case <-slots:
				n++
			case <-ctx.Done():
			}
		}
		cancel()
		want = rate * time.Since(start).Seconds()
		if float64(n) > want+1 {
			t.Fatalf("%d operations in a window that allows %.0f", n, want)
		}
		if float64(n) >= 0.8*want {
			break
		}
	}
	if float64(n) < 0.8*want {
		t.Errorf("%d operations where %.0f were due, in the best of three windows", n, want)
	}

	// Nobody takes the slots for 200 ms, then a worker drains them for
	// 50 ms: it gets the four waiting and those due in its 50 ms, not the
	// thousand that fell due while nobody took them.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel2()
	busy := make(chan struct{}, 4)
	go pace(ctx2, time.Now(), rate, busy)
	time.Sleep(200 * time.Millisecond)
	if len(busy) != 4 {
		t.Errorf("%d slots waiting, want the channel's 4", len(busy))
	}
	from, got := time.Now(), 0
	for ctx2.Err() == nil {
		select {
		case <-busy:
			got++
		case <-ctx2.Done():
		}
	}
	if owed := 4 + rate*time.Since(from).Seconds(); float64(got) > owed+1 {
		t.Errorf("drained %d operations in %v, want at most %.0f", got, time.Since(from), owed)
	}
}
