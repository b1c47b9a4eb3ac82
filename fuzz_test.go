package payd

import (
	"strings"
	"testing"
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
