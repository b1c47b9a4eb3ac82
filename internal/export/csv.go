// Package export writes the files payd hands people: CSV downloads that
// open in a spreadsheet. Every cell that a spreadsheet would run as a
// formula is neutralised (OWASP's rule for CSV injection), whatever wrote
// it: a payer's name from the bank, an acquirer's client name, an orderId,
// a description or a refund reason all come from outside.
package export

import (
	"encoding/csv"
	"io"
)

// CSV is a csv.Writer whose cells are made safe to open (Cell).
type CSV struct{ w *csv.Writer }

// NewCSV writes CSV to w.
func NewCSV(w io.Writer) *CSV { return &CSV{w: csv.NewWriter(w)} }

// Write writes one record, each cell through Cell.
func (c *CSV) Write(record []string) error {
	safe := make([]string, len(record))
	for i, v := range record {
		safe[i] = Cell(v)
	}
	return c.w.Write(safe)
}

// Flush writes what is buffered; Error reports a failed write.
func (c *CSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// Cell is v as a cell no spreadsheet runs: one starting with '=', '+',
// '-', '@', a tab or a carriage return gets a leading apostrophe (shown
// as text, the value kept), unless it is a plain number such as an
// amount "-5.00", which a spreadsheet reads as the number it is.
func Cell(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if v[0] == '-' && plainNumber(v[1:]) {
			return v
		}
		return "'" + v
	}
	return v
}

// plainNumber: digits with at most one decimal point, nothing else.
func plainNumber(s string) bool {
	if s == "" {
		return false
	}
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return true
}
