package httpapi

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"payd"
)

// query reads list parameters: the first value of a repeated parameter
// counts, an empty value is absent, and problems are collected.
type query struct {
	v    url.Values
	a    area
	errs payd.Errors
	read map[string]bool // the parameters the list looked at
}

func newQuery(c *call) *query { return &query{v: c.r.URL.Query(), a: c.a, read: map[string]bool{}} }

func (q *query) str(name string) string {
	q.read[name] = true
	vs := q.v[name]
	if len(vs) == 0 {
		return ""
	}
	return strings.TrimSpace(vs[0])
}

func (q *query) bad(name, reason string) {
	if !q.errs.Has(name) {
		q.errs = append(q.errs, q.a.invalidField(name, reason))
	}
}

// text reads a string filter of at most max characters.
func (q *query) text(name string, max int) string {
	s := q.str(name)
	if payd.TextLen(s) > max {
		q.bad(name, "must be at most "+strconv.Itoa(max)+" characters")
		return ""
	}
	return s
}

func (q *query) id(name string) string {
	s := q.str(name)
	if s == "" {
		return ""
	}
	id, ok := payd.ParseID(s)
	if !ok {
		q.bad(name, "must be a GUID")
	}
	return id
}

func (q *query) money(name string) *payd.Money {
	s := q.str(name)
	if s == "" {
		return nil
	}
	m, err := payd.ParseMoney(s)
	if err != nil {
		q.bad(name, err.Error())
		return nil
	}
	return &m
}

func (q *query) time(name string) *time.Time {
	s := q.str(name)
	if s == "" {
		return nil
	}
	t, err := payd.ParseTime(s)
	if err != nil {
		q.bad(name, "must be an ISO 8601 datetime")
		return nil
	}
	return &t
}

// paging reads count and offset: count 1–1000, offset ≥ 0, both optional.
// An absent count is def (lists.go: defaultPage, or 0 for "every match");
// an absent offset is 0.
func (q *query) paging(def int, bad func(string) *payd.Error) (count, offset int) {
	check := func(name string, min, max, def int) int {
		s := q.str(name)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > max {
			q.errs = append(q.errs, bad(name))
			return 0
		}
		return n
	}
	return check("count", 1, 1000, def), check("offset", 0, 1<<31-1, 0)
}

// sorting reads sortBy (one of fields, any case) and order (asc or desc,
// any case). It returns the canonical field name.
func (q *query) sorting(fields []string, def string, bad func(string) *payd.Error) (sortBy string, desc bool) {
	sortBy = def
	if s := q.str("sortBy"); s != "" {
		sortBy = ""
		for _, f := range fields {
			if strings.EqualFold(f, s) {
				sortBy = f
			}
		}
		if sortBy == "" {
			q.errs = append(q.errs, bad("sortBy"))
			sortBy = def
		}
	}
	switch strings.ToLower(q.str("order")) {
	case "", "asc":
	case "desc":
		desc = true
	default:
		q.errs = append(q.errs, bad("order"))
	}
	return sortBy, desc
}

// err is every problem of the query. A parameter the list never looked at
// is one too: a filter the list does not have (qrId on /v2/payments, a
// misspelt name) would otherwise be ignored and the list would answer
// every record as if it matched.
func (q *query) err() error {
	var unknown []string
	for name := range q.v {
		if !q.read[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		q.bad(name, "is not a filter of this list")
	}
	return q.errs.Err()
}

// pagingParam is the 12000 error for a bad count or offset.
func pagingParam(name string) *payd.Error {
	if name == "count" {
		return payd.Invalid(name, "must be an integer from 1 to 1000")
	}
	return payd.Invalid(name, "must be an integer of at least 0")
}
