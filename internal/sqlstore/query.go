package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// where builds the WHERE clause of a list query from optional filters.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// opt adds cond when v is not empty.
func (w *where) opt(cond, v string) {
	if v != "" {
		w.add(cond, v)
	}
}

// like adds a case-insensitive substring match of col against v, both
// lowered by the engine's search lowering (dialect.lower).
func (w *where) like(d dialect, col, v string) { w.likeLowered(d.lower(col), v) }

// likeLowered is like on a column (or expression) already holding lowered
// text.
func (w *where) likeLowered(col, v string) {
	if v != "" {
		w.add(col+" LIKE ? ESCAPE '\\'", "%"+escapeLike(strings.ToLower(v))+"%")
	}
}

// timeRange adds inclusive bounds on a millisecond column.
func (w *where) timeRange(col string, from, to *time.Time) {
	if from != nil {
		w.add(col+" >= ?", ms(*from))
	}
	if to != nil {
		w.add(col+" <= ?", ms(*to))
	}
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// orderBy sorts by col, then by the tie-breakers ascending, as the
// contract's lists require. A missing value of a nullable column sorts
// before any present one, in either direction (NULLS FIRST, which both
// engines understand and which SQLite serves from an ascending index).
func orderBy(col string, nullable, desc bool, ties ...string) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	var b strings.Builder
	b.WriteString(" ORDER BY ")
	b.WriteString(col)
	b.WriteString(dir)
	if nullable {
		b.WriteString(" NULLS FIRST")
	}
	for _, t := range ties {
		if t == col {
			continue
		}
		b.WriteString(", ")
		b.WriteString(t)
		b.WriteString(" ASC")
	}
	return b.String()
}

// rowLimit is a LIMIT clause with its number written in: SQLite plans a
// statement whose LIMIT is a bound parameter again at every run. A polling
// loop's statement took 11.2 µs with LIMIT ? and 4.5 µs with the number
// written in. The loops that claim due work (callbacks, rails orders,
// refunds, RTP decisions) each run with one number, so their texts stay
// few; the expiry passes and pruning, once a pass, still bind theirs.
func rowLimit(n int) string { return " LIMIT " + strconv.Itoa(n) }

func (s *Store) limit(count, offset int) string {
	if count <= 0 {
		if offset == 0 {
			return ""
		}
		return s.d.noLimit() + " OFFSET " + strconv.Itoa(offset)
	}
	return rowLimit(count) + " OFFSET " + strconv.Itoa(offset)
}

func (s *Store) count(ctx context.Context, q string, args []any) (int, error) {
	var n int
	err := s.queryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// scanner is what a row scanner reads from: a row (*sql.Row, postgres.Row) or rows.
type scanner interface{ Scan(...any) error }

// scanAll reads every row of rows with scan and closes rows.
func scanAll[T any](rows rowSet, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanWith reads a row's leading columns with the scanner's caller and the
// trailing ones into extra.
func scanWith(sc scanner, extra ...any) scanner { return extraScanner{sc, extra} }

type extraScanner struct {
	sc    scanner
	extra []any
}

func (e extraScanner) Scan(dest ...any) error { return e.sc.Scan(append(dest, e.extra...)...) }
