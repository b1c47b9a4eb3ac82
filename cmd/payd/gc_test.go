package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: serve's collector defaults apply only where the operator set
// neither GOGC nor GOMEMLIMIT.
func TestTuneGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 40)
	tuneGC(env(nil))
	if got := debug.SetGCPercent(100); got != defaultGOGC {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGOGC)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultMemLimit {
		t.Errorf("GOMEMLIMIT unset: memory limit %d, want %d", got, defaultMemLimit)
	}

	debug.SetGCPercent(150)
	debug.SetMemoryLimit(1 << 40)
	tuneGC(env(map[string]string{"GOGC": "150", "GOMEMLIMIT": "1TiB"}))
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("GOGC set: GC percent %d, want the operator's 150", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT set: memory limit %d, want the operator's", got)
	}
}
