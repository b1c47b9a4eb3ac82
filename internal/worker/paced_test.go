package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPacedRestsAfterFullPasses: after a pass that did a full batch, the
// next waits at least rest times as long as that pass took (and gives up
// if its context ends meanwhile); after a partial or failed pass the next
// runs at once.
func TestPacedRestsAfterFullPasses(t *testing.T) {
	var calls int
	var n int
	var fail error
	var ran time.Time
	const took = 10 * time.Millisecond
	p := Paced(5, 3, func(context.Context) (int, error) {
		calls++
		ran = time.Now()
		time.Sleep(took)
		return n, fail
	})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	n = 5 // a full batch
	if _, err := p(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p(cancelled); !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("after a full pass, with the context ended: %v, %d calls; want it to give up waiting", err, calls)
	}
	start := time.Now()
	n = 2 // partial
	if _, err := p(ctx); err != nil || calls != 2 {
		t.Fatalf("%v, %d calls", err, calls)
	}
	if waited := ran.Sub(start); waited < 3*took {
		t.Errorf("the pass after a full one ran after %v, want at least %v", waited, 3*took)
	}
	if _, err := p(cancelled); err != nil || calls != 3 {
		t.Errorf("after a partial pass: %v, %d calls; want it to run at once", err, calls)
	}
	n, fail = 5, errors.New("database down")
	p(ctx)
	if _, err := p(cancelled); calls != 5 || err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("after a failed pass: %v, %d calls; want it to run at once", err, calls)
	}
}
