package main

import (
	"context"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatTicks(t *testing.T) {
	// The command may hold spaces and parentheses; utime is 7, stime 5.
	line := []byte("4242 (pay d) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 7 5 0 0 20 0 9 0 100 0 0\n")
	if n, ok := statTicks(line); !ok || n != 12 {
		t.Fatalf("statTicks = %d, %v; want 12, true", n, ok)
	}
	for _, bad := range []string{"", "4242 pay S 1", "4242 (payd) S 1 2 3"} {
		if _, ok := statTicks([]byte(bad)); ok {
			t.Errorf("statTicks(%q) read a time", bad)
		}
	}
}

func TestMachineTicks(t *testing.T) {
	stat := []byte("cpu  100 2 30 500 40 6 7 8 0 0\ncpu0 50 1 15 250 20 3 3 4 0 0\n")
	busy, ok := machineTicks(stat)
	if !ok || busy != 100+2+30+6+7+8 {
		t.Fatalf("machineTicks = %d, %v", busy, ok)
	}
	if _, ok := machineTicks([]byte("intr 1 2 3\n")); ok {
		t.Error("read a line that is not the cpu total")
	}
}

func TestCPUPerOp(t *testing.T) {
	a := cpuSample{busy: 1000, payd: 300, self: 200, ok: true}
	b := cpuSample{busy: 1200, payd: 380, self: 250, ok: true} // 2 s of ticks over 1 s on 2 cores
	u := cpuPerOp(a, b, 1000, 1, 2)
	// 200 ticks = 2 s = 2,000,000 µs over 1,000 operations.
	if u == nil || u.All != 2000 || u.Payd != 800 || u.Load != 500 || u.Rest != 700 || u.Busy != 1 || !u.HasPayd {
		t.Fatalf("cpuPerOp = %+v", u)
	}
	if !strings.Contains(u.String(), "2000 µs (payd 800, payd-load 500, the rest 700), cores 100% busy") {
		t.Errorf("report %q", u)
	}
	a.payd, b.payd = -1, -1
	if u := cpuPerOp(a, b, 1000, 1, 2); u.HasPayd || u.Rest != 1500 || strings.Contains(u.String(), "payd ") {
		t.Errorf("without payd: %+v, %q", u, u)
	}
	// Processes counted a little above the machine's ticks: no negative rest.
	a.payd = 300
	over := cpuSample{busy: 1100, payd: 380, self: 250, ok: true}
	if u := cpuPerOp(a, over, 1000, 1, 2); u.Rest != 0 || u.All != 1000 {
		t.Errorf("processes above the machine: %+v", u)
	}
	if cpuPerOp(cpuSample{}, b, 1000, 1, 2) != nil || cpuPerOp(a, b, 0, 1, 2) != nil {
		t.Error("a failed sample or no operations gave a figure")
	}
}

// TestDriveReportsCPU: a drive whose operations each spin for 5 ms
// reports this process's CPU over it, as getrusage counts it, as
// payd-load's, and as payd's too when -server-pid names this process.
func TestDriveReportsCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	spin := func(context.Context, int) int {
		for t0 := time.Now(); time.Since(t0) < 5*time.Millisecond; {
		}
		return 200
	}
	defer func(p int) { serverPID = p }(serverPID)
	serverPID = 0
	r0 := rusage(t)
	st := drive(context.Background(), "spin", 2, 40, time.Minute, spin)
	used := float64(rusage(t)-r0) / 40 // µs an operation
	u := st.CPU
	if u == nil || u.HasPayd {
		t.Fatalf("CPU %+v", u)
	}
	// /proc counts in ticks of 10 ms: two of them over 40 operations are
	// 500 µs an operation.
	if math.Abs(u.Load-used) > 500 || u.Load < 500 || u.All+500 < u.Load {
		t.Errorf("payd-load %.0f µs an operation, getrusage %.0f, the machine %.0f", u.Load, used, u.All)
	}
	serverPID = os.Getpid()
	st = drive(context.Background(), "spin", 2, 40, time.Minute, spin)
	if u := st.CPU; u == nil || !u.HasPayd || math.Abs(u.Payd-u.Load) > 500 || !strings.Contains(st.String(), "CPU an operation") {
		t.Errorf("with -server-pid this process: %+v\n%s", u, st)
	}
}

// rusage is this process's user and system time, in microseconds.
func rusage(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Utime.Nano()/1e3 + ru.Stime.Nano()/1e3
}
