package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// bufferedLog batches log lines into few writes: the access log otherwise
// costs a write system call per request. Lines reach the output within
// flushEvery, at once when the buffer fills, and on Close.
type bufferedLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

const flushEvery = 100 * time.Millisecond

func newBufferedLog(out io.Writer) *bufferedLog {
	b := &bufferedLog{w: bufio.NewWriterSize(out, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.flush()
			case <-b.stop:
				b.flush()
				return
			}
		}
	}()
	return b
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bufferedLog) flush() {
	b.mu.Lock()
	b.w.Flush()
	b.mu.Unlock()
}

// Close flushes what is buffered and stops the flusher.
func (b *bufferedLog) Close() {
	close(b.stop)
	<-b.done
}
