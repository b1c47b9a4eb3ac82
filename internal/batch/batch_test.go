package batch

import (
	"slices"
	"testing"
	"time"
)

func TestGather(t *testing.T) {
	ch := make(chan int, 10)
	for i := 2; i <= 6; i++ {
		ch <- i
	}
	if got := Gather(nil, 1, ch, 4); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("up to max: %v", got)
	}
	if got := Gather(nil, 0, ch, 10); !slices.Equal(got, []int{0, 5, 6}) {
		t.Fatalf("what is queued, without waiting: %v", got)
	}
	ch <- 7
	close(ch)
	if got := Gather(make([]int, 0, 8), 0, ch, 10); !slices.Equal(got, []int{0, 7}) {
		t.Fatalf("a closed channel ends the batch: %v", got)
	}
}

// within runs f and fails the test if it has not returned in 10 s.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10 s", what)
		panic("unreachable")
	}
}

func TestWave(t *testing.T) {
	ch := make(chan int, 10)
	ch <- 2
	ch <- 3
	got := within(t, "want met", func() []int { return Wave(nil, 1, ch, 10, 3, time.Hour) })
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("as many as wanted had queued: %v", got)
	}
	got = within(t, "no wait", func() []int { return Wave(nil, 1, ch, 10, 5, 0) })
	if !slices.Equal(got, []int{1}) {
		t.Fatalf("no wait is Gather: %v", got)
	}

	// Stragglers of a wave arrive while it waits: one batch.
	ch <- 2
	go func() {
		time.Sleep(5 * time.Millisecond)
		ch <- 3
		time.Sleep(5 * time.Millisecond)
		ch <- 4
	}()
	got = within(t, "stragglers", func() []int { return Wave(nil, 1, ch, 10, 4, time.Hour) })
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("the wave's stragglers: %v", got)
	}

	// Fewer come than wanted: the wait ends it with what had queued.
	ch <- 2
	start := time.Now()
	got = within(t, "the wait ends", func() []int { return Wave(nil, 1, ch, 10, 8, 20*time.Millisecond) })
	if !slices.Equal(got, []int{1, 2}) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("fewer than wanted: %v after %v, want [1 2] after the 20 ms wait", got, time.Since(start))
	}

	// Never more than max, whatever is wanted.
	for i := 2; i <= 6; i++ {
		ch <- i
	}
	got = within(t, "max", func() []int { return Wave(nil, 1, ch, 3, 8, time.Hour) })
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("up to max: %v", got)
	}
	for len(ch) > 0 {
		<-ch
	}

	// A closed channel ends the wait.
	ch <- 2
	close(ch)
	got = within(t, "closed", func() []int { return Wave(nil, 1, ch, 10, 8, time.Hour) })
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("a closed channel ends the batch: %v", got)
	}
}
