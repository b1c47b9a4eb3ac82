package export

import (
	"bytes"
	"testing"
)

// TestCell: OWASP's leading characters are neutralised, a plain negative
// amount is not, and nothing else changes.
func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://evil.example","x")`: `'=HYPERLINK("http://evil.example","x")`,
		"+1+2":                                  "'+1+2", "-2+3": "'-2+3", "@SUM(A1)": "'@SUM(A1)", "\tx": "'\tx", "\rx": "'\rx",
		"-cmd|' /C calc'!A0": "'-cmd|' /C calc'!A0", "-": "'-", "-1e5": "'-1e5", "-0x10": "'-0x10",
		"-5.00": "-5.00", "-12": "-12", "12.50": "12.50", "Ion Popescu": "Ion Popescu", "": "", "a=b": "a=b",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCSVWritesSafeCells(t *testing.T) {
	var b bytes.Buffer
	w := NewCSV(&b)
	w.Write([]string{"name", "amount"})
	w.Write([]string{"=1+1", "-3.00"})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "name,amount\n'=1+1,-3.00\n"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
