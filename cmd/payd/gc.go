package main

import "runtime/debug"

// Go's collector, as serve sets it unless the operator's GOGC or GOMEMLIMIT
// says otherwise (the runtime has applied those already).
//
// payd keeps little live memory and every request allocates its own, so at
// Go's default GOGC=100 the heap doubles in milliseconds and the collector
// runs many times a second, its marking and write barriers taking CPU from
// the requests. Letting the heap grow to five times the live memory
// instead measured, on 1M rows: rtp-get +19% on SQLite and +14% on
// PostgreSQL, rtp-flow (64 connections, SQLite) +16%, the overload scenario
// +15%, for a peak RSS of 83 MB instead of 72 (BENCHMARKS.md).
// The memory limit keeps a larger live heap from growing RSS past it: near
// the limit the collector runs as often as it must.
const (
	defaultGOGC     = 400
	defaultMemLimit = 128 << 20
)

// tuneGC applies the defaults above where getenv (the process environment)
// sets neither GOGC nor GOMEMLIMIT.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemLimit)
	}
}
