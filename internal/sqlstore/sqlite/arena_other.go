//go:build !unix

package sqlite

// newArena allocates n bytes on the heap (rtpring.go maps them outside it
// on Unix).
func newArena(n int) []byte { return make([]byte, n) }

func freeArena([]byte) {}
