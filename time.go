package payd

import (
	"errors"
	"strings"
	"sync"
	"time"
)

// Clock is the only source of time in payd. cmd/payd injects the wall clock;
// tests and the sandbox inject a clock they control.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the wall clock, truncated to milliseconds, the precision
// at which payd stores time.
type SystemClock struct{}

// Now returns the current UTC time at millisecond precision.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// FakeClock is a settable clock for tests.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a clock stopped at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t.UTC().Truncate(time.Millisecond)} }

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t.UTC().Truncate(time.Millisecond)
	c.mu.Unlock()
}

// TimeLayout is how every datetime leaves payd: UTC with milliseconds and an
// explicit +00:00 offset.
const TimeLayout = "2006-01-02T15:04:05.000+00:00"

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return string(AppendTime(nil, t)) }

// AppendTime appends FormatTime(t) to b.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	return append(AppendWallMillis(b, t), "+00:00"...)
}

// AppendWallMillis appends t's date and time of day in t's location, with
// exactly three digits of milliseconds, truncated, and no offset:
// 2006-01-02T15:04:05.000. The year must lie within 0–9999. It writes the
// digits itself: time.Time.AppendFormat reads its layout on every call, and
// a record payd answers carries up to six datetimes, an access log line one.
func AppendWallMillis(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(b,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
}

// ErrTimeFormat is returned for a datetime that is not ISO 8601 / RFC 3339.
var ErrTimeFormat = errors.New("must be an ISO 8601 datetime")

// ParseTime reads an ISO 8601 / RFC 3339 datetime with 'Z' or ±hh:mm and 0–9
// fraction digits; without an offset the time is UTC. A space where the
// offset's '+' should be (a '+' decoded from a query string) counts as '+'.
// The result is UTC, truncated to milliseconds.
func ParseTime(s string) (time.Time, error) {
	if len(s) < 19 || len(s) > 40 {
		return time.Time{}, ErrTimeFormat
	}
	if i := strings.LastIndexByte(s, ' '); i >= 19 {
		s = s[:i] + "+" + s[i+1:]
	}
	if len(s) > 19 && s[19] == '.' {
		n := 20
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n-20 > 9 {
			return time.Time{}, ErrTimeFormat
		}
	}
	layout := "2006-01-02T15:04:05.999999999"
	if strings.HasSuffix(s, "Z") || strings.ContainsAny(s[19:], "+-") {
		layout += "Z07:00"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, ErrTimeFormat
	}
	t = t.UTC().Truncate(time.Millisecond)
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, ErrTimeFormat // an offset pushed it out of what can be rendered back
	}
	return t, nil
}

// UnixMilli converts stored milliseconds back into a UTC time.
func UnixMilli(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
