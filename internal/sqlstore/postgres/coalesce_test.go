package postgres

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestCoalescerWaves: a worker with a wave bound waits for as many as its
// last batch held, for no longer than that batch's statement took, so a
// wave that reaches the queue spread out shares one statement; a wave that
// does not fill goes once the wait ends. Without a bound it is Gather: the
// same stragglers go in batches of their own. Each statement here is held
// open by the test (release), which is what sets the wait.
func TestCoalescerWaves(t *testing.T) {
	for _, waveMax := range []time.Duration{time.Minute, 0} {
		closed := make(chan struct{})
		served := make(chan []int)
		release := make(chan struct{})
		var c Coalescer[int]
		c.Init(1, waveMax, closed, func(b []int) {
			served <- slices.Clone(b)
			<-release
		})
		enqueue := func(js ...int) {
			for _, j := range js {
				if err := c.Enqueue(context.Background(), j); err != nil {
					t.Fatal(err)
				}
			}
		}
		next := func(what string) []int {
			t.Helper()
			select {
			case b := <-served:
				return b
			case <-time.After(10 * time.Second):
				t.Fatalf("waveMax %v, %s: no batch after 10 s", waveMax, what)
				return nil
			}
		}

		// A wave of two: 1 alone (nothing served before), then 2 and 3,
		// queued while 1's statement ran, together.
		enqueue(1)
		if b := next("first"); !slices.Equal(b, []int{1}) {
			t.Fatalf("waveMax %v: first batch %v", waveMax, b)
		}
		enqueue(2, 3)
		release <- struct{}{}
		if b := next("second"); !slices.Equal(b, []int{2, 3}) {
			t.Fatalf("waveMax %v: second batch %v", waveMax, b)
		}
		// The next wave comes spread out, 20 ms apart, while the last
		// statement took 200 ms.
		time.Sleep(200 * time.Millisecond)
		release <- struct{}{}
		enqueue(4)
		time.Sleep(20 * time.Millisecond)
		enqueue(5)
		b := next("third")
		if waveMax > 0 && !slices.Equal(b, []int{4, 5}) {
			t.Fatalf("a wave that arrives spread out: %v, want [4 5] in one statement", b)
		}
		if waveMax == 0 {
			if !slices.Equal(b, []int{4}) {
				t.Fatalf("no wave bound: %v, want [4] alone", b)
			}
			release <- struct{}{}
			if b := next("straggler"); !slices.Equal(b, []int{5}) {
				t.Fatalf("no wave bound: straggler %v", b)
			}
		}

		// A wave that does not fill (one read, against two last time) goes
		// once the wait ends: it is not held for reads that never come.
		release <- struct{}{}
		enqueue(6)
		if b := next("lone"); !slices.Equal(b, []int{6}) {
			t.Fatalf("waveMax %v: a lone read %v", waveMax, b)
		}
		close(closed)
		close(release)
	}
}
