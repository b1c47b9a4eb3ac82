package batch

import (
	"slices"
	"testing"
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
