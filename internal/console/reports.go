package console

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"payd"
	"payd/internal/export"
	"payd/internal/sqlstore"
)

// The console's reports: the CSV export of payments and refunds, the
// merchant's settlement, and the operator's reconciliation.

// dateRange reads from and to (YYYY-MM-DD, the merchant's zone), by
// default the last 30 days up to today.
func (c *Console) dateRange(r *http.Request, s *session) (from, to string, start, end time.Time) {
	today := s.m.Now(c.clock.Now()).In(Zone)
	from, to = r.URL.Query().Get("from"), r.URL.Query().Get("to")
	f, err1 := time.ParseInLocation(time.DateOnly, from, Zone)
	t, err2 := time.ParseInLocation(time.DateOnly, to, Zone)
	if err1 != nil || err2 != nil || t.Before(f) || t.Sub(f) > 366*24*time.Hour {
		t = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, Zone)
		f = t.AddDate(0, 0, -29)
		from, to = f.Format(time.DateOnly), t.Format(time.DateOnly)
	}
	return from, to, f, t.AddDate(0, 0, 1).Add(-time.Millisecond)
}

func (c *Console) exportPage(w http.ResponseWriter, r *http.Request, s *session) {
	from, to, _, _ := c.dateRange(r, s)
	c.render(w, r, http.StatusOK, "export.html", s, map[string]any{"From": from, "To": to})
}

// csvHeaders starts a CSV download.
func csvHeaders(w http.ResponseWriter, name string) *export.CSV {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	return export.NewCSV(w)
}

// orderedRecord reads a JSON object's keys in their order and its values
// as CSV text: strings as they are, null as empty, numbers as written,
// objects and arrays as JSON.
func orderedRecord(raw json.RawMessage) (keys, vals []string, err error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if _, err := d.Token(); err != nil { // {
		return nil, nil, err
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, tok.(string))
		var s string
		switch {
		case string(v) == "null":
		case len(v) > 0 && v[0] == '"':
			json.Unmarshal(v, &s)
		default:
			s = string(v)
		}
		vals = append(vals, s)
	}
	return keys, vals, nil
}

// exportPayments streams the payments executed in the range, oldest
// first, as CSV with the API record's fields as columns, a page of the
// API's list at a time.
func (c *Console) exportPayments(w http.ResponseWriter, r *http.Request, s *session) {
	from, to, start, end := c.dateRange(r, s)
	cw := csvHeaders(w, "payments-"+from+"-"+to+".csv")
	var header []string
	for offset := 0; ; offset += 200 {
		q := url.Values{"executedAtFrom": {payd.FormatTime(start)}, "executedAtTo": {payd.FormatTime(end)}, "sortBy": {"executedAt"},
			"order": {"asc"}, "count": {"200"}, "offset": {strconv.Itoa(offset)}}
		rec := c.serve(r, http.MethodGet, "/v2/payments?"+q.Encode(), nil, func(req *http.Request) {
			req.Header.Set("Authorization", "Bearer "+s.token)
		})
		var page struct {
			Result struct {
				Items []json.RawMessage `json:"items"`
			} `json:"result"`
		}
		if rec.status != http.StatusOK || json.Unmarshal(rec.buf.Bytes(), &page) != nil {
			c.log.Warn("console: payments export cut short", "status", rec.status)
			break
		}
		for _, it := range page.Result.Items {
			keys, vals, err := orderedRecord(it)
			if err != nil {
				continue
			}
			if header == nil {
				header = keys
				cw.Write(header)
			}
			cw.Write(vals)
		}
		cw.Flush()
		if len(page.Result.Items) < 200 {
			break
		}
	}
	if header == nil {
		cw.Write([]string{"paymentId"})
	}
	cw.Flush()
}

// refundColumns are the API refund record's fields (GET /v2/payments/refunds/{id}).
var refundColumns = []string{"id", "refundId", "paymentId", "refundType", "amount", "currency", "refundReason", "executedAt", "status"}

// exportRefunds streams the refunds created in the range, oldest first,
// with the API refund record's columns.
func (c *Console) exportRefunds(w http.ResponseWriter, r *http.Request, s *session) {
	from, to, start, end := c.dateRange(r, s)
	cw := csvHeaders(w, "refunds-"+from+"-"+to+".csv")
	cw.Write(refundColumns)
	for offset := 0; ; offset += 500 {
		rfs, _, err := c.store.Refunds(r.Context(), sqlstore.RefundFilter{MerchantID: s.m.ID, CreatedFrom: start, CreatedTo: end, Oldest: true,
			Count: 500, Offset: offset})
		if err != nil {
			c.log.Warn("console: refunds export cut short", "err", err)
			break
		}
		for _, rf := range rfs {
			cw.Write([]string{rf.ID, rf.ID, rf.PaymentID, rf.Type(), rf.Amount.String(), rf.Currency, rf.Reason,
				payd.FormatTime(rf.ProcessedAt()), string(rf.Status)})
		}
		cw.Flush()
		if len(rfs) < 500 {
			break
		}
	}
}

// settlementRows are the settlement report's days of the range (UTC dates).
func (c *Console) settlementRows(r *http.Request, s *session) (from, to string, days, totals []payd.SettlementDay, err error) {
	from, to, _, _ = c.dateRange(r, s)
	days, err = c.store.Settlement(r.Context(), s.m.ID, from, to, s.m.Now(c.clock.Now()))
	return from, to, days, payd.SettlementTotals(days), err
}

func (c *Console) settlement(w http.ResponseWriter, r *http.Request, s *session) {
	from, to, days, totals, err := c.settlementRows(r, s)
	if err != nil {
		c.fail(w, err)
		return
	}
	for i, j := 0, len(days)-1; i < j; i, j = i+1, j-1 { // newest first
		days[i], days[j] = days[j], days[i]
	}
	links := map[string]string{}
	for _, d := range days {
		links[d.Date+d.Currency] = "/console/payments?" + url.Values{"executedAtFrom": {d.Date + "T00:00:00.000+00:00"},
			"executedAtTo": {d.Date + "T23:59:59.999+00:00"}}.Encode()
	}
	c.render(w, r, http.StatusOK, "settlement.html", s, map[string]any{"From": from, "To": to, "Days": days, "Totals": totals, "Links": links})
}

// settlementCSV is the settlement report as CSV, the API's columns.
func (c *Console) settlementCSV(w http.ResponseWriter, r *http.Request, s *session) {
	from, to, days, totals, err := c.settlementRows(r, s)
	if err != nil {
		c.fail(w, err)
		return
	}
	cw := csvHeaders(w, "settlement-"+from+"-"+to+".csv")
	cw.Write([]string{"date", "currency", "payments", "gross", "commission", "refunds", "refunded", "net"})
	for _, d := range append(days, totals...) {
		date := d.Date
		if date == "" {
			date = "total"
		}
		cw.Write([]string{date, d.Currency, strconv.Itoa(d.Payments), d.Gross.String(), d.Commission.String(), strconv.Itoa(d.Refunds),
			d.Refunded.String(), d.Net.String()})
	}
	cw.Flush()
}

const operatorCookie = "payd_console_operator"

func (c *Console) operatorCookie(value string, maxAge int) *http.Cookie {
	ck := c.cookie(operatorCookie, value, maxAge)
	ck.Path = "/console/operator"
	return ck
}

// operatorPage is the operator's reconciliation: the operator's token
// (PAYD_OPERATOR_TOKEN), checked once at sign-in and never kept, opens a
// session of this page only, whose token the cookie holds (stored hashed,
// ended by sign out); the report of booking dates (one, or a range; of an
// account, of an outcome) is read from the API, with its CSV, and the
// operator explains lines and matches again from here.
func (c *Console) operatorPage(w http.ResponseWriter, r *http.Request) {
	web := func(status int, data map[string]any) { c.render(w, r, status, "operator.html", nil, data) }
	ck, err := r.Cookie(operatorCookie)
	if err != nil || !strings.HasPrefix(ck.Value, OperatorPrefix) {
		web(http.StatusOK, map[string]any{"SignIn": true})
		return
	}
	q, f := c.reconQuery(r)
	res := c.call(r, ck.Value, http.MethodGet, "/v2/reports/reconciliation?"+q.Encode(), nil)
	if res.Status == http.StatusUnauthorized {
		http.SetCookie(w, c.operatorCookie("", -1))
		web(http.StatusUnauthorized, map[string]any{"SignIn": true, "Error": c.tr(r, "operator.bad")})
		return
	}
	data := map[string]any{"F": f, "Query": q.Encode(), "CSRF": c.formToken(ck.Value), "Flash": c.takeFlash(w, r), "Outcomes": payd.ReconOutcomes}
	if !res.ok() {
		data["Error"] = res.message()
		web(res.Status, data)
		return
	}
	data["R"] = res.Result
	web(http.StatusOK, data)
}

// reconFilter is the operator page's filter as its form shows it.
type reconFilter struct{ From, To, Account, Outcome string }

// reconQuery is the report's API query of the page's form: from and to
// (today in the bank's calendar when neither is a date), account and
// outcome when given.
func (c *Console) reconQuery(r *http.Request) (url.Values, reconFilter) {
	g := r.URL.Query()
	f := reconFilter{From: g.Get("from"), To: g.Get("to"), Account: strings.TrimSpace(g.Get("account")), Outcome: g.Get("outcome")}
	if d := g.Get("date"); d != "" && f.From == "" && f.To == "" {
		f.From, f.To = d, d
	}
	_, e1 := time.Parse(time.DateOnly, f.From)
	_, e2 := time.Parse(time.DateOnly, f.To)
	if e1 != nil && e2 != nil {
		today := c.clock.Now().In(c.store.BankLocation()).Format(time.DateOnly)
		f.From, f.To = today, today
	}
	q := url.Values{}
	for k, v := range map[string]string{"from": f.From, "to": f.To, "account": f.Account, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q, f
}

// operatorSession is the operator's session token of a form post (its
// origin and form token checked), "" when it is none.
func (c *Console) operatorSession(r *http.Request) string {
	ck, err := r.Cookie(operatorCookie)
	if err != nil || !strings.HasPrefix(ck.Value, OperatorPrefix) || !sameOrigin(r) || r.ParseForm() != nil ||
		subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(c.formToken(ck.Value))) != 1 {
		return ""
	}
	return ck.Value
}

// operatorAct posts one of the operator's actions to the API and returns
// to the report the form was on, saying how it went.
func (c *Console) operatorAct(w http.ResponseWriter, r *http.Request, path string, body map[string]any, done func(*apiResult) string) {
	tok := c.operatorSession(r)
	if tok == "" {
		c.render(w, r, http.StatusForbidden, "operator.html", nil, map[string]any{"SignIn": true, "Error": c.tr(r, "forbidden")})
		return
	}
	res := c.call(r, tok, http.MethodPost, path, body)
	if res.ok() {
		c.flash(w, flash{Msg: done(res), OK: true})
	} else {
		c.flash(w, flash{Msg: res.message()})
	}
	back := "/console/operator"
	if q, err := url.ParseQuery(r.PostForm.Get("back")); err == nil && len(q) > 0 {
		back += "?" + q.Encode()
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// operatorExplain explains a line (POST /console/operator/explain).
func (c *Console) operatorExplain(w http.ResponseWriter, r *http.Request) {
	seq, _ := strconv.Atoi(r.FormValue("seq"))
	c.operatorAct(w, r, "/v2/reports/reconciliation/entries/"+url.PathEscape(r.FormValue("entry"))+"/explain",
		map[string]any{"seq": seq, "note": strings.TrimSpace(r.FormValue("note")), "by": strings.TrimSpace(r.FormValue("by"))},
		func(*apiResult) string { return c.tr(r, "recon.explained") })
}

// operatorMatch matches again the report's dates (POST /console/operator/match).
func (c *Console) operatorMatch(w http.ResponseWriter, r *http.Request) {
	c.operatorAct(w, r, "/v2/reports/reconciliation/match", map[string]any{"from": r.FormValue("from"), "to": r.FormValue("to")},
		func(res *apiResult) string {
			n := 0
			if m, ok := res.Result.(map[string]any); ok {
				if f, ok := m["matched"].(float64); ok {
					n = int(f)
				}
			}
			return fmt.Sprintf(c.tr(r, "recon.matchedAgain"), n)
		})
}

// operatorExport is the report's CSV (GET /console/operator/export), as
// the API's format=csv gives it.
func (c *Console) operatorExport(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(operatorCookie)
	if err != nil || !strings.HasPrefix(ck.Value, OperatorPrefix) {
		http.Redirect(w, r, "/console/operator", http.StatusSeeOther)
		return
	}
	q, _ := c.reconQuery(r)
	q.Set("format", "csv")
	res := c.serve(r, http.MethodGet, "/v2/reports/reconciliation?"+q.Encode(), nil, func(req *http.Request) {
		req.Header.Set("Authorization", "Bearer "+ck.Value)
	})
	for _, h := range []string{"Content-Type", "Content-Disposition"} {
		if v := res.h.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(res.status)
	w.Write(res.buf.Bytes())
}

func (c *Console) operatorSignin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) || r.ParseForm() != nil {
		c.render(w, r, http.StatusForbidden, "operator.html", nil, map[string]any{"SignIn": true, "Error": c.tr(r, "forbidden")})
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	if strings.HasPrefix(tok, TokenPrefix) { // a session is no operator token
		tok = ""
	}
	res := c.call(r, tok, http.MethodGet, "/v2/reports/reconciliation?date="+c.clock.Now().UTC().Format(time.DateOnly), nil)
	if !res.ok() {
		status, msg := http.StatusUnauthorized, c.tr(r, "operator.bad")
		if res.Status == http.StatusTooManyRequests {
			status, msg = http.StatusTooManyRequests, c.tr(r, "signin.limited")
		}
		c.render(w, r, status, "operator.html", nil, map[string]any{"SignIn": true, "Error": msg})
		return
	}
	session, err := c.store.IssueOperatorSession(r.Context(), OperatorPrefix, c.cfg.SessionTTL, c.clock.Now())
	if err != nil {
		c.fail(w, err)
		return
	}
	http.SetCookie(w, c.operatorCookie(session, int(c.cfg.SessionTTL/time.Second)))
	http.Redirect(w, r, "/console/operator", http.StatusSeeOther)
}

// operatorSignout ends the operator's session (its form token checked).
func (c *Console) operatorSignout(w http.ResponseWriter, r *http.Request) {
	tok := c.operatorSession(r)
	if tok == "" {
		c.render(w, r, http.StatusForbidden, "operator.html", nil, map[string]any{"SignIn": true, "Error": c.tr(r, "forbidden")})
		return
	}
	if err := c.store.EndOperatorSession(r.Context(), tok); err != nil {
		c.fail(w, err)
		return
	}
	http.SetCookie(w, c.operatorCookie("", -1))
	http.Redirect(w, r, "/console/operator", http.StatusSeeOther)
}
