package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loopbackOnly refuses a target that is not on this machine's loopback.
func loopbackOnly(target string) error {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("bad target %q", target)
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("refusing %s: it resolves to %s, which is not loopback", target, ip)
		}
	}
	return nil
}

// stats is what one scenario measured.
type stats struct {
	Name       string
	Requests   int
	Errors     map[string]int // by status (or "network")
	Elapsed    time.Duration
	Latencies  []time.Duration
	Callbacks  *callbackStats
	FloorRatio float64
	FloorName  string
	NetErrors  map[string]int // status 0: what the client's transport said, by message
	CPU        *cpuUse        // over the drive, per operation (cpu.go); nil where /proc is not
}

// netErrors counts the transport errors of the scenario running, by
// message, for its report: a status 0 alone does not tell a refused
// connection from one the server closed.
var netErrors struct {
	mu sync.Mutex
	m  map[string]int
}

func noteNetError(err error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the message without the method and URL
	}
	netErrors.mu.Lock()
	defer netErrors.mu.Unlock()
	if netErrors.m == nil {
		netErrors.m = map[string]int{}
	}
	netErrors.m[err.Error()]++
}

// takeNetErrors returns the errors counted since the last call.
func takeNetErrors() map[string]int {
	netErrors.mu.Lock()
	defer netErrors.mu.Unlock()
	m := netErrors.m
	netErrors.m = nil
	return m
}

type callbackStats struct {
	From       string // what the delays are measured from: "accept" (the API's answer) by default
	What       string // what arrives: "callbacks" by default
	Delays     []time.Duration
	Lost, Dups int
	Sustained  float64 // callbacks per second over the run
}

func (s *stats) Throughput() float64 { return float64(s.Requests) / s.Elapsed.Seconds() }

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds)-1) * p)
	return ds[i]
}

func (s *stats) String() string {
	sort.Slice(s.Latencies, func(i, j int) bool { return s.Latencies[i] < s.Latencies[j] })
	var errs []string
	for k, v := range s.Errors {
		errs = append(errs, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(errs)
	if len(errs) == 0 {
		errs = []string{"none"}
	}
	out := fmt.Sprintf("%-30s %8d req %9.0f req/s  p50 %7s  p95 %7s  p99 %7s  max %7s  errors: %s",
		s.Name, s.Requests, s.Throughput(), ms(pct(s.Latencies, .5)), ms(pct(s.Latencies, .95)), ms(pct(s.Latencies, .99)),
		ms(pct(s.Latencies, 1)), strings.Join(errs, " "))
	if s.FloorName != "" {
		out += fmt.Sprintf("  = %.0f%% of %s", s.FloorRatio*100, s.FloorName)
	}
	if len(s.NetErrors) > 0 {
		var ne []string
		for k, v := range s.NetErrors {
			ne = append(ne, fmt.Sprintf("%q×%d", k, v))
		}
		sort.Strings(ne)
		out += "\n" + fmt.Sprintf("%-30s network errors (status 0): %s", "", strings.Join(ne, " "))
	}
	if s.CPU != nil {
		out += fmt.Sprintf("\n%-30s %s", "", s.CPU)
	}
	if cb := s.Callbacks; cb != nil {
		sort.Slice(cb.Delays, func(i, j int) bool { return cb.Delays[i] < cb.Delays[j] })
		from, what := cb.From, cb.What
		if from == "" {
			from = "accept"
		}
		if what == "" {
			what = "callbacks"
		}
		out += fmt.Sprintf("\n%-30s %8d %-9s %6.0f/s  %s→arrival p50 %7s  p99 %7s  max %7s  lost %d  duplicated %d",
			"", len(cb.Delays), what, cb.Sustained, from, ms(pct(cb.Delays, .5)), ms(pct(cb.Delays, .99)), ms(pct(cb.Delays, 1)), cb.Lost, cb.Dups)
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// rateLimit, when above zero, caps every drive at that many operations a
// second (the -rate flag), for latency at a given load.
var rateLimit float64

// pace lets operations go through slots as they fall due, the k-th at
// start + k/rate, looking at each time looks sends (drive: a ticker of a
// millisecond). (A ticker at the rate itself lost ticks on the two busy
// cores: asked for 4,988 creates a second, it let 3,071 go.) An operation
// due while every worker is busy is skipped, not owed: the rate is a cap.
func pace(ctx context.Context, start time.Time, rate float64, looks <-chan time.Time, slots chan<- struct{}) {
	released := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-looks:
			due := int(now.Sub(start).Seconds() * rate)
			for released < due {
				select {
				case slots <- struct{}{}:
					released++
				default:
					released = due // every worker is busy: what fell due is not owed
				}
			}
		}
	}
}

// drive runs op from c workers until n operations or duration d, whichever
// comes first. op returns the HTTP status (0 for a network error).
func drive(ctx context.Context, name string, c, n int, d time.Duration, op func(ctx context.Context, i int) int) *stats {
	st := &stats{Name: name, Errors: map[string]int{}}
	takeNetErrors()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0, start := sampleCPU(), time.Now()
	var slots chan struct{}
	if rateLimit > 0 {
		slots = make(chan struct{}, c)
		looks := time.NewTicker(time.Millisecond)
		defer looks.Stop()
		go pace(ctx, start, rateLimit, looks.C, slots)
	}
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			errs := map[string]int{}
			for ctx.Err() == nil {
				if slots != nil {
					select {
					case <-slots:
					case <-ctx.Done():
						continue
					}
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				t0 := time.Now()
				status := op(ctx, i)
				if ctx.Err() != nil && status == 0 {
					break // cut off by the duration, not a failure
				}
				lat = append(lat, time.Since(t0))
				if status != 200 {
					errs[fmt.Sprint(status)]++
				}
			}
			mu.Lock()
			st.Latencies = append(st.Latencies, lat...)
			for k, v := range errs {
				st.Errors[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	st.Elapsed = time.Since(start)
	st.NetErrors = takeNetErrors()
	st.Requests = len(st.Latencies)
	st.CPU = cpuPerOp(cpu0, sampleCPU(), st.Requests, st.Elapsed.Seconds(), runtime.NumCPU())
	return st
}

func newHTTPClient(c int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: c * 2, MaxIdleConnsPerHost: c * 2, MaxConnsPerHost: c * 2, IdleConnTimeout: time.Minute,
	}}
}

// do sends a request and returns the status and body.
func do(ctx context.Context, hc *http.Client, method, url, token string, body []byte) (int, []byte) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	s, b, _ := send(ctx, hc, req)
	return s, b
}

// send sends a request and returns the status, body and headers; a
// network error is status 0, noted unless the scenario's end cut it off.
func send(ctx context.Context, hc *http.Client, req *http.Request) (int, []byte, http.Header) {
	res, err := hc.Do(req)
	if err != nil {
		if ctx.Err() == nil { // not cut off by the scenario's end
			noteNetError(err)
		}
		return 0, nil, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}
