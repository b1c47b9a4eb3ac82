package payd

import (
	"math"
	"strings"
	"testing"
	"time"
)

func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"50", "50.5", "50.500", "0.01", "1e400", "-0", "5e1", "1.25E+2", "99999999999999999", "0.001", "", ".", "-", "1e-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMoney(s)
		if err != nil {
			return
		}
		// What parses renders as two decimals and parses back to itself.
		out := m.String()
		if i := strings.IndexByte(out, '.'); i < 0 || len(out)-i != 3 {
			t.Fatalf("%q rendered as %q", s, out)
		}
		back, err := ParseMoney(out)
		if err != nil || back != m {
			t.Fatalf("%q → %d → %q → %d, %v", s, m, out, back, err)
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-03-01T10:15:30.123Z", "2026-03-01T12:15:30+02:00", "2026-03-01T10:15:30", "2026-03-01T10:15:30.123456789 02:00", "2026-13-01T00:00:00Z", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTime(s)
		if err != nil {
			return
		}
		back, err := ParseTime(FormatTime(tm))
		if err != nil || !back.Equal(tm) {
			t.Fatalf("%q → %v → %q → %v, %v", s, tm, FormatTime(tm), back, err)
		}
	})
}

// FuzzAppendTime: the datetimes payd writes digit by digit are the ones
// time.Time.AppendFormat writes for the same layouts, in any zone and any
// year (outside 0–9999 AppendTime hands the work to AppendFormat).
func FuzzAppendTime(f *testing.F) {
	for _, ns := range []int64{0, 1, -1, 1764108000123456789, 951782400000000000, math.MinInt64, math.MaxInt64} {
		f.Add(ns, int32(0))
		f.Add(ns, int32(-9000))
		f.Add(ns, int32(5*3600+45*60))
	}
	f.Fuzz(func(t *testing.T, ns int64, off int32) {
		tm := time.Unix(0, ns).In(time.FixedZone("", int(off%(15*3600))))
		if got, want := string(AppendTime([]byte("x"), tm)), "x"+tm.UTC().Format(TimeLayout); got != want {
			t.Fatalf("AppendTime(%v) = %q, want %q", tm, got, want)
		}
		// Years past 9999 arrive through a date far from ns's.
		far := tm.AddDate(int(ns%12000), 0, 0)
		if got, want := string(AppendTime(nil, far)), far.UTC().Format(TimeLayout); got != want {
			t.Fatalf("AppendTime(%v) = %q, want %q", far, got, want)
		}
		if y := tm.Year(); y >= 0 && y <= 9999 {
			if got, want := string(AppendWallMillis(nil, tm)), tm.Format("2006-01-02T15:04:05.000"); got != want {
				t.Fatalf("AppendWallMillis(%v) = %q, want %q", tm, got, want)
			}
		}
	})
}
