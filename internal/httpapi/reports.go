package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"

	"payd"
	"payd/internal/console"
)

// The reports: a merchant's settlement (what it was paid, day by day) and
// the operator's reconciliation of payd's ledger with the bank's
// statements.

// FailedOperatorAttempts is how many wrong operator tokens one source
// address (an IPv6 client's /64) may send a minute; past it a wrong one
// answers 429, the right one still passes.
const FailedOperatorAttempts = 10

// operatorToken checks that the request carries the operator's token
// (compared by its hash, in constant time), or, from the console in
// process, an operator session the console started with it (the console
// never keeps the token itself). Wrong tokens are counted per source
// address (FailedOperatorAttempts).
func (s *Server) operatorToken(r *http.Request, now time.Time) error {
	tok := bearer(r.Header.Get("Authorization"))
	if s.operatorHash == nil || tok == "" || len(tok) > 256 {
		return payd.E(payd.CodeUnauthorized)
	}
	if strings.HasPrefix(tok, console.OperatorPrefix) {
		if !console.InProcess(r.Context()) {
			return payd.E(payd.CodeUnauthorized)
		}
		ok, err := s.store.OperatorSession(r.Context(), tok, now)
		if err != nil || ok {
			return err
		}
		return payd.E(payd.CodeUnauthorized)
	}
	h := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(h[:], s.operatorHash) == 1 {
		return nil
	}
	if err := s.limits.operator.allow(limitKeyOf(addrKey(clientOf(r))), now); err != nil {
		return err
	}
	return payd.E(payd.CodeUnauthorized)
}

// MaxReportDays is the longest range a settlement report covers.
const MaxReportDays = 366

// SettlementLine is one day and currency of a settlement report, or a
// currency's total (date null).
type SettlementLine struct {
	Date        *string    `json:"date"`
	Currency    string     `json:"currency"`
	Payments    int        `json:"payments"`
	Gross       payd.Money `json:"gross"`
	Commission  payd.Money `json:"commission"`
	Refunds     int        `json:"refunds"`
	Refunded    payd.Money `json:"refunded"`
	Net         payd.Money `json:"net"`
	PaymentsURL *string    `json:"paymentsUrl"`
}

// SettlementReport is GET /v2/reports/settlement's result.
type SettlementReport struct {
	DateFrom string           `json:"dateFrom"`
	DateTo   string           `json:"dateTo"`
	Days     []SettlementLine `json:"days"`
	Totals   []SettlementLine `json:"totals"`
}

// NewSettlementReport is the report of days (payd.SettlementDay) between
// two dates; each day links to its payments in the API.
func NewSettlementReport(from, to string, days []payd.SettlementDay) SettlementReport {
	line := func(d payd.SettlementDay) SettlementLine {
		l := SettlementLine{Currency: d.Currency, Payments: d.Payments, Gross: d.Gross, Commission: d.Commission,
			Refunds: d.Refunds, Refunded: d.Refunded, Net: d.Net}
		if d.Date != "" {
			date := d.Date
			l.Date = &date
			u := "/v2/payments?" + url.Values{"executedAtFrom": {d.Date + "T00:00:00.000+00:00"},
				"executedAtTo": {d.Date + "T23:59:59.999+00:00"}, "currency": {d.Currency}}.Encode()
			l.PaymentsURL = &u
		}
		return l
	}
	out := SettlementReport{DateFrom: from, DateTo: to, Days: []SettlementLine{}, Totals: []SettlementLine{}}
	for _, d := range days {
		out.Days = append(out.Days, line(d))
	}
	for _, t := range payd.SettlementTotals(days) {
		out.Totals = append(out.Totals, line(t))
	}
	return out
}

// reportDates reads dateFrom and dateTo (YYYY-MM-DD, both required, at
// most MaxReportDays apart).
func reportDates(q *query) (from, to string) {
	read := func(name string) (string, time.Time) {
		v := q.str(name)
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			q.bad(name, "is required, a date such as 2026-11-25")
			return "", t
		}
		return v, t
	}
	from, f := read("dateFrom")
	to, t := read("dateTo")
	switch {
	case from == "" || to == "":
	case t.Before(f):
		q.bad("dateTo", "must not be before dateFrom")
	case t.Sub(f) >= MaxReportDays*24*time.Hour:
		q.bad("dateTo", "must be within 366 days of dateFrom")
	}
	return from, to
}

// handleSettlement is GET /v2/reports/settlement.
func (s *Server) handleSettlement(c *call) error {
	q := newQuery(c)
	from, to := reportDates(q)
	if err := q.err(); err != nil {
		return err
	}
	days, err := s.store.Settlement(c.r.Context(), c.m.ID, from, to, c.now)
	if err != nil {
		return err
	}
	return c.respond(NewSettlementReport(from, to, days))
}
