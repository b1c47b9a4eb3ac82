package httpapi

import (
	"errors"
	"io"
	"strconv"
	"time"

	"payd"
	"payd/internal/export"
	"payd/internal/sqlstore"
)

// The operator's reconciliation (docs/reconciliation.md): the report of
// booking dates, a line explained, and a match run again for what arrived
// late. Every route takes the operator's token.

// ReconReport is a reconciliation report as the API and `payd reconcile
// report --json` show it.
type ReconReport struct {
	From       string            `json:"from"`
	To         string            `json:"to"`
	Date       *string           `json:"date"` // the one date, when the report is of one
	Closed     bool              `json:"closed"`
	Counts     map[string]int    `json:"counts"`
	Totals     []ReconTotal      `json:"totals"`
	Days       []ReconDay        `json:"days"`
	Statements []ReconStatement  `json:"statements"`
	Lines      []ReconReportLine `json:"lines"`
}

// ReconTotal is the count and money of an outcome in a currency.
type ReconTotal struct {
	Outcome  string     `json:"outcome"`
	Currency string     `json:"currency"`
	Count    int        `json:"count"`
	Amount   payd.Money `json:"amount"`
}

// ReconDay is an account's booking date and whether the bank closed it.
type ReconDay struct {
	Account string `json:"account"`
	Date    string `json:"date"`
	Closed  bool   `json:"closed"`
}

// ReconStatement is a statement that covers the dates.
type ReconStatement struct {
	MsgID        string  `json:"msgId"`
	Kind         string  `json:"kind"`
	Version      string  `json:"version"`
	StatementID  string  `json:"statementId"`
	Account      string  `json:"account"`
	Page         int     `json:"page"`
	ReceivedAt   string  `json:"receivedAt"`
	Entries      int     `json:"entries"`
	SupersededBy *string `json:"supersededBy"`
}

// ReconReportLine is one line; a value payd does not have is null.
type ReconReportLine struct {
	Outcome     string            `json:"outcome"`
	Class       *string           `json:"class"`
	Basis       *string           `json:"basis"`
	Review      bool              `json:"review"`
	Account     *string           `json:"account"`
	Direction   string            `json:"direction"`
	Amount      payd.Money        `json:"amount"`
	PaydAmount  *payd.Money       `json:"paydAmount"`
	Currency    string            `json:"currency"`
	BookingDate string            `json:"bookingDate"`
	EntryID     *string           `json:"entryId"`
	Seq         int               `json:"seq"`
	EntryRef    *string           `json:"entryRef"`
	BankRef     *string           `json:"bankRef"`
	Code        *string           `json:"code"`
	EndToEndID  *string           `json:"endToEndId"`
	TxID        *string           `json:"txId"`
	PaymentID   *string           `json:"paymentId"`
	RefundID    *string           `json:"refundId"`
	MerchantID  *string           `json:"merchantId"`
	Detail      *string           `json:"detail"`
	Explanation *ReconExplanation `json:"explanation"`
}

// ReconExplanation is the operator's note on a line.
type ReconExplanation struct {
	Note string `json:"note"`
	By   string `json:"by"`
	At   string `json:"at"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewReconReport is the wire form of a report.
func NewReconReport(r *payd.ReconReport) ReconReport {
	out := ReconReport{From: r.From, To: r.To, Closed: r.Closed(), Counts: r.Counts(), Totals: []ReconTotal{}, Days: []ReconDay{},
		Statements: []ReconStatement{}, Lines: []ReconReportLine{}}
	if r.From == r.To {
		out.Date = &out.From
	}
	for _, t := range r.Totals() {
		out.Totals = append(out.Totals, ReconTotal{Outcome: t.Outcome, Currency: t.Currency, Count: t.Count, Amount: t.Amount})
	}
	for _, d := range r.Days {
		out.Days = append(out.Days, ReconDay{Account: d.Account, Date: d.Date, Closed: d.Closed})
	}
	for _, st := range r.Statements {
		out.Statements = append(out.Statements, ReconStatement{MsgID: st.MsgID, Kind: st.Kind, Version: st.Version, StatementID: st.StatementID,
			Account: st.Account, Page: st.Page, ReceivedAt: payd.FormatTime(st.ReceivedAt), Entries: st.Entries, SupersededBy: orNull(st.SupersededBy)})
	}
	for _, l := range r.Lines {
		out.Lines = append(out.Lines, reconLine(l))
	}
	return out
}

func reconLine(l payd.ReconLine) ReconReportLine {
	w := ReconReportLine{Outcome: l.Outcome, Class: orNull(l.Class), Basis: orNull(l.Basis), Review: l.Review, Account: orNull(l.Account),
		Direction: l.Direction, Amount: l.Amount, PaydAmount: l.PaydAmount, Currency: l.Currency, BookingDate: l.BookingDate,
		EntryID: orNull(l.EntryID), Seq: l.Seq, EntryRef: orNull(l.EntryRef), BankRef: orNull(l.BankRef), Code: orNull(l.Code),
		EndToEndID: orNull(l.EndToEndID), TxID: orNull(l.TxID), PaymentID: orNull(l.PaymentID), RefundID: orNull(l.RefundID),
		MerchantID: orNull(l.MerchantID), Detail: orNull(l.Detail)}
	if e := l.Explained; e != nil {
		w.Explanation = &ReconExplanation{Note: e.Note, By: e.By, At: payd.FormatTime(e.At)}
	}
	return w
}

// reconOutcomes are the outcomes a report may be filtered by.
var reconOutcomes = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range payd.ReconOutcomes {
		m[o] = true
	}
	return m
}()

// reconFilter reads a report's parameters: date, or from and to (the
// bank's calendar, at most sqlstore.MaxReconDays); account, merchantId,
// outcome. Any other parameter is refused (query.err).
func reconFilter(q *query) payd.ReconFilter {
	var f payd.ReconFilter
	date, from, to := q.str("date"), q.str("from"), q.str("to")
	parse := func(name, v string) time.Time {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			q.bad(name, "must be a date such as 2026-11-25")
		}
		return t
	}
	switch {
	case date != "" && (from != "" || to != ""):
		q.bad("date", "is one date: give it, or from and to, not both")
	case date != "":
		parse("date", date)
		f.From, f.To = date, date
	case from == "" && to == "":
		q.bad("date", "is required, a date such as 2026-11-25 (or from and to)")
	default:
		if to == "" {
			to = from
		}
		if from == "" {
			from = to
		}
		ft, tt := parse("from", from), parse("to", to)
		switch {
		case tt.Before(ft):
			q.bad("to", "must not be before from")
		case tt.Sub(ft) >= sqlstore.MaxReconDays*24*time.Hour:
			q.bad("to", "must be within "+strconv.Itoa(sqlstore.MaxReconDays)+" days of from")
		}
		f.From, f.To = from, to
	}
	f.Account = payd.NormalizeIBAN(q.str("account"))
	f.MerchantID = q.id("merchantId")
	if o := q.str("outcome"); o != "" {
		if !reconOutcomes[o] {
			q.bad("outcome", "is not an outcome of the reconciliation")
		}
		f.Outcome = o
	}
	return f
}

// handleReconciliation is GET /v2/reports/reconciliation, with the
// operator's token: the report as JSON, or as CSV (format=csv).
func (s *Server) handleReconciliation(c *call) error {
	q := newQuery(c)
	f := reconFilter(q)
	format := q.str("format")
	if format != "" && format != "csv" && format != "json" {
		q.bad("format", "must be json or csv")
	}
	if err := q.err(); err != nil {
		return err
	}
	r, err := s.store.ReconReport(c.r.Context(), f)
	if err != nil {
		return err
	}
	if format == "csv" {
		c.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		c.w.Header().Set("Content-Disposition", `attachment; filename="reconciliation-`+r.From+`-`+r.To+`.csv"`)
		return WriteReconCSV(c.w, r)
	}
	return c.respond(NewReconReport(r))
}

// ReconCSVColumns are the columns of a report's CSV, one line a row.
var ReconCSVColumns = []string{"bookingDate", "account", "outcome", "class", "basis", "review", "direction", "amount", "paydAmount", "currency",
	"entryId", "seq", "entryRef", "bankRef", "code", "endToEndId", "txId", "paymentId", "refundId", "merchantId", "detail",
	"explanationNote", "explainedBy", "explainedAt"}

// WriteReconCSV writes a report's lines as CSV (text payd did not write,
// from the bank, neutralised as every CSV's is).
func WriteReconCSV(w io.Writer, r *payd.ReconReport) error {
	cw := export.NewCSV(w)
	cw.Write(ReconCSVColumns)
	for _, l := range r.Lines {
		payd := ""
		if l.PaydAmount != nil {
			payd = l.PaydAmount.String()
		}
		var note, by, at string
		if e := l.Explained; e != nil {
			note, by, at = e.Note, e.By, e.At.UTC().Format(time.RFC3339)
		}
		cw.Write([]string{l.BookingDate, l.Account, l.Outcome, l.Class, l.Basis, strconv.FormatBool(l.Review), l.Direction, l.Amount.String(), payd,
			l.Currency, l.EntryID, strconv.Itoa(l.Seq), l.EntryRef, l.BankRef, l.Code, l.EndToEndID, l.TxID, l.PaymentID, l.RefundID, l.MerchantID,
			l.Detail, note, by, at})
	}
	return cw.Flush()
}

// handleReconExplain is POST /v2/reports/reconciliation/entries/{entryId}/explain
// with {"seq", "note", "by"}: the operator explains a line.
func (s *Server) handleReconExplain(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	seq := 0
	if n := o.integer("seq"); n != nil {
		seq = *n
	}
	note := o.str("note")
	by := o.str("by")
	var errs payd.Errors
	if note == "" {
		errs = append(errs, payd.Invalid("note", "is required: why the line needs nothing more"))
	} else if payd.TextLen(note) > 500 {
		errs = append(errs, payd.Invalid("note", "must be at most 500 characters"))
	}
	if payd.TextLen(by) > 100 {
		errs = append(errs, payd.Invalid("by", "must be at most 100 characters"))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	if by == "" {
		by = "operator"
	}
	entry := c.r.PathValue("entryId")
	err = s.store.Explain(c.r.Context(), entry, seq, note, by, c.now)
	if errors.Is(err, payd.ErrNotFound) {
		return payd.E(payd.CodeInvalidParameter, "parameter", "entryId", "reason", "and seq name no line of a statement")
	}
	if err != nil {
		return err
	}
	return c.respond(map[string]any{"entryId": entry, "seq": seq, "explanation": ReconExplanation{Note: note, By: by, At: payd.FormatTime(c.now)}})
}

// handleReconMatch is POST /v2/reports/reconciliation/match with {"from",
// "to", "by"}: the open lines of those dates matched again.
func (s *Server) handleReconMatch(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	from, to, by := o.str("from"), o.str("to"), o.str("by")
	var errs payd.Errors
	ft, err1 := time.Parse(time.DateOnly, from)
	tt, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil:
		errs = append(errs, payd.Invalid("from", "must be a date such as 2026-11-25"))
	case err2 != nil:
		errs = append(errs, payd.Invalid("to", "must be a date such as 2026-11-25"))
	case tt.Before(ft):
		errs = append(errs, payd.Invalid("to", "must not be before from"))
	case tt.Sub(ft) >= sqlstore.MaxReconDays*24*time.Hour:
		errs = append(errs, payd.Invalid("to", "must be within "+strconv.Itoa(sqlstore.MaxReconDays)+" days of from"))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	if by == "" {
		by = "operator"
	}
	n, err := s.store.MatchAgain(c.r.Context(), from, to, by, c.now)
	if err != nil {
		return err
	}
	return c.respond(map[string]any{"from": from, "to": to, "matched": n})
}
