package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Where the CPU of a scenario went, an operation at a time. A rate and its
// ratio to its floor move with the machine's hour, and the figures alone
// do not say why: each drive therefore also reports what an operation
// cost in CPU, from Linux's counters: the whole machine's busy time
// (/proc/stat), payd's (-server-pid), payd-load's own, and the rest (the
// database, the kernel's work for them all, anything else running), with
// how busy the cores were. A change that makes an operation cheaper shows
// there even in an hour that hides it in the rate, and cores left idle
// show a rate bound by waiting rather than by CPU. The machine's counters
// are sampled in ticks and the processes' are not, so where nothing else
// runs (SQLite, in payd's process) the rest comes out a little either
// side of zero: it is shown as zero when below.

// serverPID is payd's pid (-server-pid): drive reports its share.
var serverPID int

// clockTicks is the unit of /proc's times: USER_HZ, which Linux fixes at
// 100 on x86 and arm64 whatever its own tick.
const clockTicks = 100

type cpuSample struct {
	busy, payd, self int64 // in clock ticks; payd is -1 when not known
	ok               bool
}

// cpuUse is what a drive cost, per operation, in microseconds.
type cpuUse struct {
	All, Payd, Load, Rest float64
	Busy                  float64 // the share of the machine's cores busy over the drive, 0 to 1
	HasPayd               bool
}

func sampleCPU() cpuSample {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}
	}
	busy, ok := machineTicks(stat)
	if !ok {
		return cpuSample{}
	}
	self, ok := pidTicks("self")
	if !ok {
		return cpuSample{}
	}
	s := cpuSample{busy: busy, self: self, payd: -1, ok: true}
	if serverPID > 0 {
		if p, ok := pidTicks(strconv.Itoa(serverPID)); ok {
			s.payd = p
		}
	}
	return s
}

// machineTicks reads /proc/stat's first line: the ticks all cores spent
// busy (user, nice, system, irq, softirq, steal).
func machineTicks(stat []byte) (busy int64, ok bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return 0, false
		}
		v[i] = n
	}
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], true // not idle (3) nor iowait (4)
}

// pidTicks is a process's user and system time, from /proc/PID/stat.
func pidTicks(pid string) (int64, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	return statTicks(b)
}

// statTicks reads utime and stime (the 14th and 15th fields) from a
// /proc/PID/stat line; the 2nd, the command in parentheses, may itself
// hold spaces and parentheses, so the count starts after its last ')'.
func statTicks(b []byte) (int64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:])) // from the 3rd field on
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + s, err1 == nil && err2 == nil
}

// cpuPerOp is the CPU between two samples, per operation, over elapsed
// seconds of a machine with cores cores; nil when either sample failed or
// nothing ran.
func cpuPerOp(a, b cpuSample, ops int, elapsed float64, cores int) *cpuUse {
	if !a.ok || !b.ok || ops == 0 || elapsed <= 0 {
		return nil
	}
	us := func(ticks int64) float64 { return float64(ticks) * 1e6 / clockTicks / float64(ops) }
	u := &cpuUse{All: us(b.busy - a.busy), Load: us(b.self - a.self)}
	u.Busy = float64(b.busy-a.busy) / clockTicks / elapsed / float64(cores)
	u.Rest = u.All - u.Load
	if a.payd >= 0 && b.payd >= 0 {
		u.HasPayd, u.Payd = true, us(b.payd-a.payd)
		u.Rest -= u.Payd
	}
	u.Rest = max(u.Rest, 0) // the counters' rounding (above)
	return u
}

func (u *cpuUse) String() string {
	if u.HasPayd {
		return fmt.Sprintf("CPU an operation: %.0f µs (payd %.0f, payd-load %.0f, the rest %.0f), cores %.0f%% busy",
			u.All, u.Payd, u.Load, u.Rest, u.Busy*100)
	}
	return fmt.Sprintf("CPU an operation: %.0f µs (payd-load %.0f, the rest %.0f), cores %.0f%% busy", u.All, u.Load, u.Rest, u.Busy*100)
}
