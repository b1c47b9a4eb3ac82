package payd

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestParseMoney(t *testing.T) {
	tests := []struct {
		in   string
		want Money
		err  error
	}{
		{"50", 5000, nil},
		{"50.5", 5050, nil},
		{"50.500", 5050, nil},
		{"0.1", 10, nil},
		{"0.01", 1, nil},
		{"100000", 10000000, nil},
		{"5e1", 5000, nil},
		{"1.25E+2", 12500, nil},
		{"-0", 0, nil},
		{"-1.5", -150, nil},
		{"0", 0, nil},
		{"50.505", 0, ErrAmountPrecision},
		{"0.001", 0, ErrAmountPrecision},
		{"1e-3", 0, ErrAmountPrecision},
		{"1e400", 0, ErrAmountRange},
		{"99999999999999999999", 0, ErrAmountRange},
		{"", 0, ErrAmountFormat},
		{"abc", 0, ErrAmountFormat},
		{"1.", 0, ErrAmountFormat},
		{".5", 0, ErrAmountFormat},
		{"1e", 0, ErrAmountFormat},
		{"+1", 0, ErrAmountFormat},
		{"1,5", 0, ErrAmountFormat},
	}
	for _, tt := range tests {
		got, err := ParseMoney(tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestMoneyString(t *testing.T) {
	for m, want := range map[Money]string{0: "0.00", 10: "0.10", 5000: "50.00", 1: "0.01", 123456: "1234.56", -150: "-1.50"} {
		if got := m.String(); got != want {
			t.Errorf("Money(%d).String() = %q, want %q", m, got, want)
		}
	}
}

func TestCommission(t *testing.T) {
	tests := []struct {
		amount Money
		rate   int
		want   Money
	}{
		{5000, 0, 0}, {5000, 100, 50}, {3333, 150, 50}, {1005, 150, 15}, {10000000, 10000, 10000000},
	}
	for _, tt := range tests {
		if got := Commission(tt.amount, tt.rate); got != tt.want {
			t.Errorf("Commission(%v, %d) = %v, want %v", tt.amount, tt.rate, got, tt.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 3, 1, 10, 15, 30, 123000000, time.UTC)
	for _, in := range []string{
		"2026-03-01T10:15:30.123Z",
		"2026-03-01T10:15:30.123+00:00",
		"2026-03-01T12:15:30.123+02:00",
		"2026-03-01T12:15:30.123 02:00",
		"2026-03-01T10:15:30.123456789Z",
		"2026-03-01T10:15:30.123",
	} {
		got, err := ParseTime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2026-03-01", "2026-03-01 10:15:30Z", "2026-13-01T10:15:30Z", "2026-03-01T10:15:30.1234567891Z", "yesterday"} {
		if _, err := ParseTime(in); err == nil {
			t.Errorf("ParseTime(%q) succeeded, want error", in)
		}
	}
	if got := FormatTime(want); got != "2026-03-01T10:15:30.123+00:00" {
		t.Errorf("FormatTime = %q", got)
	}
}

func TestParseID(t *testing.T) {
	id := NewID(time.Now())
	if got, ok := ParseID(id); !ok || got != id {
		t.Fatalf("ParseID(NewID()) = %q, %v", got, ok)
	}
	if id[14] != '7' {
		t.Errorf("NewID() = %s, want version 7", id)
	}
	if got, ok := ParseID("123E4567-E89B-12D3-A456-426614174000"); !ok || got != "123e4567-e89b-12d3-a456-426614174000" {
		t.Errorf("ParseID upper = %q, %v", got, ok)
	}
	for _, bad := range []string{"", "extension", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"} {
		if _, ok := ParseID(bad); ok {
			t.Errorf("ParseID(%q) ok", bad)
		}
	}
}

func TestReferenceID(t *testing.T) {
	if got := ReferenceID(42); got != "MIA000000000042" {
		t.Errorf("ReferenceID(42) = %q", got)
	}
}

func TestValidIBAN(t *testing.T) {
	for in, want := range map[string]bool{
		"MD24AG000225100013104168": true, "md24 ag00 0225 1000 1310 4168": true, "MD88AG000000011621810140": true,
		"NL43RABO1438227787": true, "MD24AG000225100013104169": false, "MD24": false, "": false, "1D24AG000225100013104168": false,
	} {
		if got := ValidIBAN(NormalizeIBAN(in)); got != want {
			t.Errorf("ValidIBAN(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestMoneyJSON: an amount reads exactly from a JSON number, a null leaves
// the value as it was (as encoding/json does for its own types), and an
// amount with more than two decimals is refused.
func TestMoneyJSON(t *testing.T) {
	var v struct{ A, B Money }
	v.B = 7
	if err := json.Unmarshal([]byte(`{"A": 12.34, "B": null}`), &v); err != nil || v.A != 1234 || v.B != 7 {
		t.Errorf("decoded %+v, %v; want A 1234 and B left at 7", v, err)
	}
	if err := json.Unmarshal([]byte(`{"A": 1.234}`), &v); err == nil {
		t.Errorf("1.234 decoded as %d, want an error", v.A)
	}
}
