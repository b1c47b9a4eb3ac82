//go:build unix

package sqlite

import "syscall"

// newArena maps n bytes of anonymous memory, outside Go's heap (rtpring.go);
// where the mapping fails it falls back to the heap.
func newArena(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// freeArena unmaps an arena of newArena. One from the heap is no mapping
// syscall knows of: Munmap refuses it, and the collector takes it.
func freeArena(b []byte) { syscall.Munmap(b) }
