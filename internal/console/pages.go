package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// filter is one list filter: a query parameter of the API's list.
type filter struct {
	Name    string
	Options []string // a select when set
	// Date: a date picker; a plain date YYYY-MM-DD is sent to the API as
	// the start of that day (a …From filter) or its end (a …To filter).
	Date bool
}

// col is one column of a list: a record's key (its label's too), a dotted
// path into the record where the value is nested ("order.id"), and how to
// show it.
type col struct {
	Key, Show string // Show: id, status, money, time, text
}

// kind is one of the console's object lists, read from the API.
type kind struct {
	name, object string // URL segment, payd.Object*
	list, get    string // API paths
	id           string // the id's key in a record
	sortBy       string // the newest-first sort of the list
	cols         []col
	filters      []filter
}

var statusRTP = []string{"Created", "Active", "Accepted", "Rejected", "Expired", "Cancelled", "Refunded"}

var kinds = map[string]*kind{
	"rtp": {name: "rtp", object: payd.ObjectRTP, list: "/v2/rtp", get: "/v2/rtp/", id: "rtpId", sortBy: "createdAt",
		cols: []col{{"rtpId", "id"}, {"status", "status"}, {"amount", "money"}, {"description", "text"}, {"orderId", "text"}, {"createdAt", "time"}},
		filters: []filter{{Name: "status", Options: statusRTP}, {Name: "rtpId"}, {Name: "orderId"}, {Name: "description"}, {Name: "createdAtFrom", Date: true},
			{Name: "createdAtTo", Date: true}}},
	"qr": {name: "qr", object: payd.ObjectQR, list: "/v2/instant/qr", get: "/v2/instant/qr/", id: "qrId", sortBy: "createdAt",
		cols: []col{{"qrId", "id"}, {"type", "text"}, {"status", "status"}, {"amount", "money"}, {"description", "text"}, {"orderId", "text"},
			{"createdAt", "time"}},
		filters: []filter{{Name: "status", Options: []string{"Active", "Paid", "Expired", "Cancelled", "Inactive"}},
			{Name: "type", Options: []string{"Static", "Dynamic", "Hybrid"}}, {Name: "qrId"}, {Name: "orderId"}, {Name: "description"}}},
	"checkouts": {name: "checkouts", object: payd.ObjectCheckout, list: "/v2/checkouts", get: "/v2/checkouts/", id: "id", sortBy: "createdAt",
		cols: []col{{"id", "id"}, {"status", "status"}, {"amount", "money"}, {"order.id", "text"}, {"payer.name", "text"}, {"createdAt", "time"}},
		filters: []filter{{Name: "status", Options: []string{"WaitingForInit", "Initialized", "PaymentMethodSelected", "Completed", "Failed",
			"Cancelled", "Abandoned", "Expired"}}, {Name: "id"}, {Name: "orderId"}, {Name: "payerName"}, {Name: "createdAtFrom", Date: true},
			{Name: "createdAtTo", Date: true}}},
	"payments": {name: "payments", object: payd.ObjectPayment, list: "/v2/payments", get: "/v2/payments/", id: "paymentId", sortBy: "executedAt",
		cols: []col{{"paymentId", "id"}, {"status", "status"}, {"amount", "money"}, {"paymentMethod", "text"}, {"senderName", "text"},
			{"orderId", "text"}, {"executedAt", "time"}},
		filters: []filter{{Name: "status", Options: []string{"Executed", "PartiallyRefunded", "Refunded", "Failed"}}, {Name: "paymentId"},
			{Name: "paymentIntentId"}, {Name: "orderId"}, {Name: "senderName"}, {Name: "executedAtFrom", Date: true}, {Name: "executedAtTo", Date: true}}},
	"refunds": {name: "refunds", object: payd.ObjectRefund, get: "/v2/payments/refunds/", id: "id",
		cols:    []col{{"id", "id"}, {"status", "status"}, {"amount", "money"}, {"paymentId", "id"}, {"refundReason", "text"}, {"executedAt", "time"}},
		filters: []filter{{Name: "status", Options: []string{"Created", "Requested", "Accepted", "Rejected", "Manual"}}, {Name: "paymentId"}}},
	"callbacks": {name: "callbacks", object: "callback", list: "/v2/callbacks", get: "/v2/callbacks/", id: "callbackId", sortBy: "createdAt",
		cols: []col{{"callbackId", "id"}, {"event", "text"}, {"objectId", "id"}, {"state", "status"}, {"attempts", "text"},
			{"lastStatusCode", "text"}, {"createdAt", "time"}},
		filters: []filter{{Name: "state", Options: []string{"Pending", "Delivered", "Failed"}}, {Name: "event"}, {Name: "objectId"},
			{Name: "createdAtFrom", Date: true}, {Name: "createdAtTo", Date: true}}},
}

// kindOf is the console list an event's object lives in.
var kindOf = map[string]string{payd.ObjectRTP: "rtp", payd.ObjectQR: "qr", payd.ObjectExtension: "qr",
	payd.ObjectCheckout: "checkouts", payd.ObjectPayment: "payments", payd.ObjectRefund: "refunds", "callback": "callbacks"}

// nav is the order of the lists in the navigation and the overview.
var nav = []string{"rtp", "qr", "checkouts", "payments", "refunds", "callbacks"}

type countRow struct {
	Kind  string
	Items []sqlstore.StateCount
}

// stat is one figure of the overview, linking to what it counts.
type stat struct {
	Label, Value, Href string
}

// bar is one day of the overview's chart.
type bar struct {
	X, Y, W, H  float64
	Date, Label string
	Href        string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	lang := c.langOf(w, r)
	ctx := r.Context()
	counts, err := c.store.StateCounts(ctx, s.m.ID, s.m.Now(c.clock.Now()))
	if err != nil {
		c.fail(w, err)
		return
	}
	var rows []countRow
	for _, k := range nav {
		row := countRow{Kind: k}
		for _, sc := range counts {
			if kindOf[sc.Object] == k && !(k == "qr" && sc.Object == payd.ObjectExtension) {
				if sc.Object == "callback" && sc.Status != "" { // stored as delivered; the API's Delivered
					sc.Status = strings.ToUpper(sc.Status[:1]) + sc.Status[1:]
				}
				row.Items = append(row.Items, sc)
			}
		}
		rows = append(rows, row)
	}
	now := s.m.Now(c.clock.Now())
	today := now.UTC().Format(time.DateOnly)
	from := now.UTC().AddDate(0, 0, -29).Format(time.DateOnly)
	days, err := c.store.Settlement(ctx, s.m.ID, from, today, now)
	if err != nil {
		c.fail(w, err)
		return
	}
	failedToday, err := c.store.FailedCallbacksSince(ctx, s.m.ID, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		c.fail(w, err)
		return
	}
	failed30, err := c.store.FailedCallbacksSince(ctx, s.m.ID, now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -29))
	if err != nil {
		c.fail(w, err)
		return
	}
	// The figures in the merchant's main currency (MDL, else the first seen).
	ccy := "MDL"
	if len(days) > 0 && !slices.ContainsFunc(days, func(d payd.SettlementDay) bool { return d.Currency == "MDL" }) {
		ccy = days[0].Currency
	}
	var t, m payd.SettlementDay
	byDay := map[string]payd.SettlementDay{}
	for _, d := range days {
		if d.Currency != ccy {
			continue
		}
		byDay[d.Date] = d
		m.Gross, m.Payments, m.Refunded = m.Gross+d.Gross, m.Payments+d.Payments, m.Refunded+d.Refunded
		if d.Date == today {
			t = d
		}
	}
	dayLink := func(from, to string) string {
		return "/console/payments?" + url.Values{"executedAtFrom": {from + "T00:00:00.000+00:00"}, "executedAtTo": {to + "T23:59:59.999+00:00"}}.Encode()
	}
	stats := map[string][]stat{
		"today": {{tr(lang, "volume"), money(lang, t.Gross, ccy), dayLink(today, today)}, {tr(lang, "count"), strconv.Itoa(t.Payments), dayLink(today, today)},
			{tr(lang, "refundsAmount"), money(lang, t.Refunded, ccy), "/console/refunds?status=Accepted"},
			{tr(lang, "failedCallbacks"), strconv.Itoa(failedToday), "/console/callbacks?state=Failed"}},
		"last30": {{tr(lang, "volume"), money(lang, m.Gross, ccy), dayLink(from, today)}, {tr(lang, "count"), strconv.Itoa(m.Payments), dayLink(from, today)},
			{tr(lang, "refundsAmount"), money(lang, m.Refunded, ccy), "/console/refunds?status=Accepted"},
			{tr(lang, "failedCallbacks"), strconv.Itoa(failed30), "/console/callbacks?state=Failed"}},
	}
	// The chart: a bar per day, scaled to the largest.
	var peak payd.Money
	for _, d := range byDay {
		peak = max(peak, d.Gross)
	}
	var bars []bar
	const chartW, chartH, gap = 600.0, 140.0, 4.0
	bw := chartW/30 - gap
	for i := 0; i < 30; i++ {
		date := now.UTC().AddDate(0, 0, i-29).Format(time.DateOnly)
		d := byDay[date]
		h := 0.0
		if peak > 0 {
			h = float64(d.Gross) / float64(peak) * chartH
		}
		bars = append(bars, bar{X: float64(i) * (bw + gap), Y: chartH - h, W: bw, H: max(h, 1), Date: date,
			Label: dayLabel(date) + ": " + money(lang, d.Gross, ccy) + " · " + strconv.Itoa(d.Payments), Href: dayLink(date, date)})
	}
	recent, err := c.store.RecentChanges(ctx, s.m.ID, 20)
	if err != nil {
		c.fail(w, err)
		return
	}
	amounts, err := c.store.ObjectAmounts(ctx, s.m.ID, recent)
	if err != nil {
		c.fail(w, err)
		return
	}
	var activity []entry
	for _, ev := range recent {
		activity = append(activity, changeEntry(lang, ev, "", amountText(lang, amounts, ev.ObjectID)))
	}
	c.render(w, r, http.StatusOK, "overview.html", s, map[string]any{"Counts": rows, "Recent": activity, "Stats": stats,
		"Bars": bars, "ChartW": chartW, "ChartH": chartH, "Peak": money(lang, peak, ccy), "Currency": ccy})
}

// cell is one table cell: its text, a link when Href is set, and how to
// show it (Show: id, status, money, time, text).
type cell struct {
	Text, Href, Show string
	Value, Ccy       any
	Kind             string // the list's, for its statuses' words (kbadge)
}

func (c *Console) list(w http.ResponseWriter, r *http.Request, s *session) {
	k := kinds[r.PathValue("kind")]
	if k == nil {
		c.notFound(w, r, s)
		return
	}
	in := r.URL.Query()
	q := url.Values{}
	for _, f := range k.filters {
		if v := strings.TrimSpace(in.Get(f.Name)); v != "" {
			q.Set(f.Name, v)
		}
	}
	count, _ := strconv.Atoi(in.Get("count"))
	if count < 1 || count > 100 {
		count = 20
	}
	offset, _ := strconv.Atoi(in.Get("offset"))
	offset = max(offset, 0)
	items, total, errMsg, err := c.listItems(r, s, k, q, count, offset)
	if err != nil {
		c.fail(w, err)
		return
	}
	rows := c.rows(k, items)
	page := func(off int) string {
		p := url.Values{}
		for name, v := range q {
			p[name] = v
		}
		p.Set("count", strconv.Itoa(count))
		p.Set("offset", strconv.Itoa(off))
		return "/console/" + k.name + "?" + p.Encode()
	}
	data := map[string]any{"Kind": k.name, "Filters": k.filters, "Query": q, "Cols": k.cols, "Rows": rows, "Total": total,
		"From": min(offset+1, total), "To": offset + len(rows), "Error": errMsg, "Legend": legend(k)}
	if offset > 0 {
		data["Prev"] = page(max(offset-count, 0))
	}
	if offset+len(rows) < total {
		data["Next"] = page(offset + count)
	}
	status := http.StatusOK
	if errMsg != "" {
		status = http.StatusBadRequest
	}
	c.render(w, r, status, "list.html", s, data)
}

// listItems reads a page of a list from the API, newest first.
func (c *Console) listItems(r *http.Request, s *session, k *kind, q url.Values, count, offset int) (items []any, total int, errMsg string, err error) {
	if k.list == "" { // refunds: the API has no list; the store's (newest first), then each record from the API
		rfs, n, err := c.store.Refunds(r.Context(), sqlstore.RefundFilter{MerchantID: s.m.ID, PaymentID: q.Get("paymentId"),
			Status: q.Get("status"), Count: count, Offset: offset})
		if err != nil {
			return nil, 0, "", err
		}
		for _, rf := range rfs {
			if res := c.call(r, s.token, http.MethodGet, k.get+url.PathEscape(rf.ID), nil); res.ok() {
				items = append(items, res.Result)
			}
		}
		return items, n, "", nil
	}
	api := url.Values{}
	for name, v := range q {
		api[name] = v
	}
	for _, f := range k.filters {
		if d, err := time.Parse(time.DateOnly, api.Get(f.Name)); f.Date && err == nil {
			if strings.HasSuffix(f.Name, "To") {
				d = d.Add(24*time.Hour - time.Millisecond) // the day's end: the day is included
			}
			api.Set(f.Name, payd.FormatTime(d))
		}
	}
	api.Set("count", strconv.Itoa(count))
	api.Set("offset", strconv.Itoa(offset))
	api.Set("sortBy", k.sortBy)
	api.Set("order", "desc")
	res := c.call(r, s.token, http.MethodGet, k.list+"?"+api.Encode(), nil)
	if !res.ok() {
		return nil, 0, res.message(), nil
	}
	items, _ = field(res.Result, "items").([]any)
	return items, int(num(field(res.Result, "totalCount"))), "", nil
}

// rows are a list's items as table cells.
func (c *Console) rows(k *kind, items []any) [][]cell {
	var rows [][]cell
	for _, it := range items {
		var row []cell
		for i, cl := range k.cols {
			v := fieldPath(it, cl.Key)
			x := cell{Text: str(v), Show: cl.Show, Value: v, Ccy: field(it, "currency"), Kind: k.name}
			switch {
			case i == 0:
				x.Href = "/console/" + k.name + "/" + url.PathEscape(x.Text)
			case cl.Key == "objectId" || cl.Key == "paymentId" && k.name != "payments":
				x.Href = c.find(x.Text)
			}
			row = append(row, x)
		}
		rows = append(rows, row)
	}
	return rows
}

// legend is the states a list's badges show, in the order of the filter.
func legend(k *kind) []string {
	for _, f := range k.filters {
		if f.Name == "status" || f.Name == "state" {
			return f.Options
		}
	}
	return nil
}

// find links to an object by its id alone: the console resolves its kind.
func (c *Console) find(id string) string {
	if id == "" {
		return ""
	}
	return "/console/find/" + url.PathEscape(id)
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// entry is one line of a timeline.
type entry struct {
	At     time.Time
	Text   string
	Href   string
	Detail string
}

// changeEntry is a state change as a timeline line: which object, its
// amount when known, from and to which state, and by whom.
func changeEntry(lang string, ev *payd.Change, mainID string, amount string) entry {
	what := tr(lang, "obj."+ev.Object)
	if ev.ObjectID != mainID {
		what += " " + ev.ObjectID[:min(8, len(ev.ObjectID))]
	}
	if amount != "" {
		what += " · " + amount
	}
	e := entry{At: ev.At, Text: fmt.Sprintf("%s: %s → %s %s", what, tr(lang, "st."+ev.From), tr(lang, "st."+ev.To), tr(lang, "event."+string(ev.Cause)))}
	switch {
	case ev.ObjectID == mainID:
	case ev.Object == payd.ObjectExtension: // shown on its QR's page, without one of its own
		e.Detail = ev.ObjectID
	default:
		e.Href = "/console/" + kindOf[ev.Object] + "/" + url.PathEscape(ev.ObjectID)
	}
	return e
}

func parseTime(v any) time.Time {
	t, err := payd.ParseTime(str(v))
	if err != nil {
		return time.Time{}
	}
	return t
}

// search finds objects by id (straight to its page), or by order id,
// payer name or description across the lists.
func (c *Console) search(w http.ResponseWriter, r *http.Request, s *session) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		http.Redirect(w, r, "/console", http.StatusSeeOther)
		return
	}
	if id, ok := payd.ParseID(strings.ToLower(q)); ok {
		c.findObject(w, r, s, id)
		return
	}
	type group struct {
		Kind string
		Cols []col
		Rows [][]cell
	}
	var groups []group
	for _, k := range []string{"payments", "checkouts", "rtp", "qr"} {
		kd := kinds[k]
		seen := map[string]bool{}
		var items []any
		for _, f := range []string{"orderId", "senderName", "payerName", "description"} {
			if !slices.ContainsFunc(kd.filters, func(x filter) bool { return x.Name == f }) {
				continue
			}
			got, _, _, err := c.listItems(r, s, kd, url.Values{f: {q}}, 10, 0)
			if err != nil {
				c.fail(w, err)
				return
			}
			for _, it := range got {
				if id := str(field(it, kd.id)); !seen[id] {
					seen[id] = true
					items = append(items, it)
				}
			}
		}
		if len(items) > 0 {
			groups = append(groups, group{Kind: k, Cols: kd.cols, Rows: c.rows(kd, items)})
		}
	}
	c.render(w, r, http.StatusOK, "search.html", s, map[string]any{"Q": q, "Groups": groups})
}

// detail is one object as structured sections, with its timeline, its
// related objects, its API record and, in the sandbox, the actions a
// tester needs.
func (c *Console) detail(w http.ResponseWriter, r *http.Request, s *session) {
	name, id := r.PathValue("kind"), r.PathValue("id")
	if name == "find" {
		c.findObject(w, r, s, id)
		return
	}
	k := kinds[name]
	if k == nil {
		c.notFound(w, r, s)
		return
	}
	lang := c.langOf(w, r)
	res := c.call(r, s.token, http.MethodGet, k.get+url.PathEscape(id), nil)
	if !res.ok() {
		c.notFound(w, r, s)
		return
	}
	obj := res.Result
	raw, _ := json.MarshalIndent(obj, "", "  ")
	if k.name == "callbacks" {
		c.render(w, r, http.StatusOK, "callback.html", s, map[string]any{"C": obj, "ID": id,
			"Body": prettyJSON(str(field(obj, "body"))), "Headers": field(obj, "headers"), "Attempts": field(obj, "attemptLog"),
			"Object": c.find(str(field(obj, "objectId")))})
		return
	}
	ccy := field(obj, "currency")
	ids := []string{id}
	var related []cell
	var timeline []entry
	created := field(obj, "createdAt")
	if k.name == "payments" {
		created = field(obj, "executedAt")
	}
	timeline = append(timeline, entry{At: parseTime(created), Text: tr(lang, "obj."+k.object) + " " + tr(lang, "created")})
	var payments []any
	addPayments := func(intent string) {
		pays := c.call(r, s.token, http.MethodGet, "/v2/payments?paymentIntentId="+url.QueryEscape(intent)+"&count=100&offset=0", nil)
		items, _ := field(pays.Result, "items").([]any)
		for _, p := range items {
			payments = append(payments, p)
			pid := str(field(p, "paymentId"))
			ids = append(ids, pid)
			related = append(related, cell{Text: tr(lang, "obj.payment") + " " + pid, Href: "/console/payments/" + url.PathEscape(pid),
				Show: "status", Value: field(p, "status")})
			timeline = append(timeline, entry{At: parseTime(field(p, "executedAt")),
				Text: tr(lang, "payment.executed") + " · " + c.amount(lang, field(p, "amount"), field(p, "currency")) + " · " + str(field(p, "paymentMethod")),
				Href: "/console/payments/" + url.PathEscape(pid)})
			c.addRefunds(r, s, lang, pid, &ids, &related, &timeline)
		}
	}
	switch k.name {
	case "rtp", "checkouts":
		addPayments(id)
	case "qr":
		exts := c.call(r, s.token, http.MethodGet, "/v2/instant/qr/extension?qrId="+url.QueryEscape(id)+"&count=100&offset=0", nil)
		items, _ := field(exts.Result, "items").([]any)
		for _, x := range items {
			xid := str(field(x, "extensionId"))
			ids = append(ids, xid)
			related = append(related, cell{Text: tr(lang, "obj.extension") + " " + xid + " · " + c.amount(lang, field(x, "amount"), ccy),
				Show: "status", Value: field(x, "status")})
		}
		addPayments(id)
	case "payments":
		intent := str(field(obj, "paymentIntentId"))
		related = append(related, cell{Text: intent, Href: c.find(intent)})
		c.addRefunds(r, s, lang, id, &ids, &related, &timeline)
	case "refunds":
		pid := str(field(obj, "paymentId"))
		related = append(related, cell{Text: tr(lang, "obj.payment") + " " + pid, Href: "/console/payments/" + url.PathEscape(pid)})
	}
	changes, err := c.store.Changes(r.Context(), s.m.ID, ids...)
	if err != nil {
		c.fail(w, err)
		return
	}
	amounts, err := c.store.ObjectAmounts(r.Context(), s.m.ID, changes)
	if err != nil {
		c.fail(w, err)
		return
	}
	for _, ev := range changes {
		timeline = append(timeline, changeEntry(lang, ev, id, amountText(lang, amounts, ev.ObjectID)))
	}
	timeline = append(timeline, c.callbackEntries(r, s, lang, id)...)
	sort.SliceStable(timeline, func(i, j int) bool { return timeline[i].At.After(timeline[j].At) })
	data := map[string]any{"Kind": k.name, "ID": id, "Summary": summary(lang, k.name, obj), "Related": related, "Timeline": timeline,
		"Actions": c.actions(lang, k.name, obj), "Obj": obj, "Raw": string(raw), "Payments": payments}
	if k.name == "checkouts" {
		data["Order"], data["Payer"] = field(obj, "order"), field(obj, "payer")
	}
	c.render(w, r, http.StatusOK, "detail.html", s, data)
}

// amount shows a decoded amount in its currency.
func (c *Console) amount(lang string, v, ccy any) string {
	m, ok := moneyOf(v)
	if !ok {
		return str(v)
	}
	return money(lang, m, str(ccy))
}

// kv is one labelled field of an object's summary.
type kv struct {
	Key, Label string
	Value      any
	Show       string // id, status, money, time, text
	Ccy        any
}

// summaryFields are the fields each kind's summary shows, in order.
var summaryFields = map[string][]col{
	"rtp": {{"status", "status"}, {"amount", "money"}, {"description", "text"}, {"orderId", "text"}, {"alias", "text"},
		{"terminalId", "text"}, {"createdAt", "time"}, {"expiresAt", "time"}, {"updatedAt", "time"}},
	"qr": {{"status", "status"}, {"type", "text"}, {"amountType", "text"}, {"amount", "money"}, {"amountMin", "money"},
		{"amountMax", "money"}, {"description", "text"}, {"orderId", "text"}, {"createdAt", "time"}, {"expiresAt", "time"}},
	"checkouts": {{"status", "status"}, {"amount", "money"}, {"paymentMethod", "text"}, {"language", "text"}, {"createdAt", "time"},
		{"expiresAt", "time"}, {"completedAt", "time"}, {"failedAt", "time"}, {"cancelledAt", "time"}},
	"payments": {{"status", "status"}, {"amount", "money"}, {"paymentMethod", "text"}, {"senderName", "text"}, {"senderIban", "text"},
		{"referenceNumber", "text"}, {"approvalCode", "text"}, {"orderId", "text"}, {"executedAt", "time"}, {"refundedAmount", "money"},
		{"refundableAmount", "money"}},
	"refunds": {{"status", "status"}, {"amount", "money"}, {"refundType", "text"}, {"refundReason", "text"}, {"paymentId", "id"},
		{"executedAt", "time"}},
}

// labels name the summary's fields (keys of texts) where the API's name
// is not one already.
var labels = map[string]string{"terminalId": "terminal", "paymentMethod": "method", "senderName": "payerName", "senderIban": "iban",
	"referenceNumber": "reference", "approvalCode": "approval", "refundedAmount": "refundsAmount", "refundableAmount": "refundable",
	"refundType": "type", "refundReason": "reason", "amountMin": "amount", "amountMax": "amount", "language": "lang"}

// summary is an object's main fields, labelled, without the API's
// duplicates and empty values.
func summary(lang, kindName string, obj any) []kv {
	var out []kv
	for _, f := range summaryFields[kindName] {
		v := field(obj, f.Key)
		if v == nil || str(v) == "" {
			continue
		}
		key := f.Key
		if l, ok := labels[key]; ok {
			key = l
		}
		label := tr(lang, key)
		switch f.Key {
		case "amountMin":
			label += " (min)"
		case "amountMax":
			label += " (max)"
		}
		out = append(out, kv{Key: f.Key, Label: label, Value: v, Show: f.Show, Ccy: field(obj, "currency")})
	}
	return out
}

func (c *Console) addRefunds(r *http.Request, s *session, lang, payID string, ids *[]string, related *[]cell, timeline *[]entry) {
	rfs, _, err := c.store.Refunds(r.Context(), sqlstore.RefundFilter{MerchantID: s.m.ID, PaymentID: payID, Count: 100})
	if err != nil {
		return
	}
	for _, rf := range rfs {
		*ids = append(*ids, rf.ID)
		href := "/console/refunds/" + url.PathEscape(rf.ID)
		*related = append(*related, cell{Text: tr(lang, "obj.refund") + " " + rf.ID + " · " + money(lang, rf.Amount, rf.Currency), Href: href,
			Show: "status", Value: string(rf.Status)})
		*timeline = append(*timeline, entry{At: rf.CreatedAt, Text: tr(lang, "refund.created") + " · " + money(lang, rf.Amount, rf.Currency) +
			" (" + rf.Reason + ")", Href: href})
	}
}

// callbackEntries are the attempts of every callback about id.
func (c *Console) callbackEntries(r *http.Request, s *session, lang, id string) []entry {
	res := c.call(r, s.token, http.MethodGet, "/v2/callbacks?objectId="+url.QueryEscape(id)+"&count=20&offset=0", nil)
	items, _ := field(res.Result, "items").([]any)
	var out []entry
	for _, it := range items {
		cid := str(field(it, "callbackId"))
		href := "/console/callbacks/" + url.PathEscape(cid)
		d := c.call(r, s.token, http.MethodGet, "/v2/callbacks/"+url.PathEscape(cid), nil)
		attempts, _ := field(d.Result, "attemptLog").([]any)
		label := tr(lang, "callback.sent") + " " + str(field(it, "event"))
		if len(attempts) == 0 {
			out = append(out, entry{At: parseTime(field(it, "createdAt")), Text: label + " · " + tr(lang, "st."+str(field(it, "state"))), Href: href})
		}
		for _, a := range attempts {
			result := str(field(a, "statusCode"))
			if result == "" {
				result = tr(lang, "noResponse") + " " + str(field(a, "error"))
			}
			out = append(out, entry{At: parseTime(field(a, "startedAt")),
				Text: fmt.Sprintf("%s · %s %s · %s (%s ms)", label, tr(lang, "attempt"), str(field(a, "attempt")), result, str(field(a, "durationMs"))),
				Href: href, Detail: str(field(a, "responseBody"))})
		}
	}
	return out
}

// findObject sends the browser to the page of the object with this id,
// whatever its kind.
func (c *Console) findObject(w http.ResponseWriter, r *http.Request, s *session, id string) {
	for _, k := range nav {
		if res := c.call(r, s.token, http.MethodGet, kinds[k].get+url.PathEscape(id), nil); res.ok() {
			http.Redirect(w, r, "/console/"+k+"/"+url.PathEscape(id), http.StatusSeeOther)
			return
		}
	}
	if res := c.call(r, s.token, http.MethodGet, "/v2/instant/qr/extension?extensionId="+url.QueryEscape(id)+"&count=1&offset=0", nil); res.ok() {
		if items, _ := field(res.Result, "items").([]any); len(items) == 1 {
			http.Redirect(w, r, "/console/qr/"+url.PathEscape(str(field(items[0], "qrId"))), http.StatusSeeOther)
			return
		}
	}
	c.notFound(w, r, s)
}

// action is a form on a detail page.
type action struct {
	Name, Label, Note string
	Inputs            []input
}

type input struct{ Name, Label, Value string }

// actions are the forms an object offers in its state.
func (c *Console) actions(lang, kindName string, obj any) []action {
	text := catalog.Texts(lang)
	status := str(field(obj, "status"))
	var out []action
	switch kindName {
	case "rtp":
		if c.cfg.Sandbox && (status == "Active" || status == "Created") {
			out = append(out, action{Name: "accept", Label: text["accept"]}, action{Name: "reject", Label: text["reject"]})
		}
	case "qr":
		if c.cfg.Sandbox && status == "Active" {
			out = append(out, action{Name: "pay", Label: text["pay"], Inputs: []input{
				{Name: "amount", Label: text["amount"], Value: str(field(obj, "amount"))},
				{Name: "payerName", Label: text["payerName"], Value: "TEST PAYER"}}})
		}
	case "checkouts":
		if c.cfg.Sandbox && (status == "WaitingForInit" || status == "Initialized" || status == "PaymentMethodSelected") {
			out = append(out, action{Name: "payqr", Label: text["payQR"]}, action{Name: "paycard", Label: text["payCard"]})
		}
	case "payments":
		if field(obj, "isRefundable") == true {
			rule := text["refund.rule"]
			switch str(field(obj, "paymentMethod")) {
			case "Rtp":
				rule = text["refund.ruleRTP"]
			case "Card":
				rule = text["refund.ruleCard"]
			}
			out = append(out, action{Name: "refund", Label: text["refund"], Note: text["refundable"] + ": " +
				c.amount(lang, field(obj, "refundableAmount"), field(obj, "currency")) + ". " + rule, Inputs: []input{
				{Name: "amount", Label: text["amount"], Value: str(field(obj, "refundableAmount"))},
				{Name: "reason", Label: text["reason"], Value: "console"}}})
		}
	}
	return out
}

// act runs a detail page's action through the API (or, for a checkout,
// through the hosted pages, as a payer would).
func (c *Console) act(w http.ResponseWriter, r *http.Request, s *session) {
	name, id, action := r.PathValue("kind"), r.PathValue("id"), r.PathValue("action")
	here := "/console/" + name + "/" + url.PathEscape(id)
	var res *apiResult
	done := ""
	switch name + "/" + action {
	case "rtp/accept":
		rtp := c.call(r, s.token, http.MethodGet, "/v2/rtp/"+url.PathEscape(id), nil)
		if !rtp.ok() {
			c.notFound(w, r, s)
			return
		}
		res, done = c.call(r, s.token, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-accept",
			map[string]any{"amount": field(rtp.Result, "amount"), "currency": field(rtp.Result, "currency")}), c.tr(r, "accepted")
	case "rtp/reject":
		res, done = c.call(r, s.token, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-reject", map[string]any{}), c.tr(r, "rejected")
	case "qr/pay":
		body := map[string]any{"qrId": id, "currency": "MDL", "payerName": r.PostForm.Get("payerName"), "iban": payd.TestIBAN}
		if a := strings.TrimSpace(r.PostForm.Get("amount")); a != "" {
			body["amount"] = jsonNumber(a)
		}
		res, done = c.call(r, s.token, http.MethodPost, "/v2/instant/test-pay", body), c.tr(r, "paid")
	case "payments/refund":
		body := map[string]any{"reason": r.PostForm.Get("reason")}
		if a := strings.TrimSpace(r.PostForm.Get("amount")); a != "" {
			body["amount"] = jsonNumber(a)
		}
		res, done = c.call(r, s.token, http.MethodPost, "/v2/payments/"+url.PathEscape(id)+"/refund", body), c.tr(r, "refunded")
	case "callbacks/resend":
		res, done = c.call(r, s.token, http.MethodPost, "/v2/callbacks/"+url.PathEscape(id)+"/resend", nil), c.tr(r, "resent")
	case "checkouts/payqr", "checkouts/paycard":
		if !c.cfg.Sandbox {
			c.notFound(w, r, s)
			return
		}
		c.back(w, r, here, c.payCheckout(r, s, id, action == "paycard"))
		return
	default:
		c.notFound(w, r, s)
		return
	}
	if !res.ok() {
		if res.Status == http.StatusNotFound && name != "qr" {
			c.notFound(w, r, s)
			return
		}
		c.back(w, r, here, flash{Msg: res.message()})
		return
	}
	c.back(w, r, here, flash{Msg: done, OK: true})
}

// jsonNumber sends a typed amount as the number it reads as, so the API
// checks it as it checks any client's.
func jsonNumber(s string) any {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return s
	}
	return rawNumber(s)
}

type rawNumber string

func (n rawNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

func (c *Console) advanceClock(w http.ResponseWriter, r *http.Request, s *session) {
	secs, err := strconv.ParseInt(strings.TrimSpace(r.PostForm.Get("seconds")), 10, 64)
	back := backTo(r)
	body := map[string]any{"seconds": secs}
	if err != nil {
		body["seconds"] = r.PostForm.Get("seconds")
	}
	res := c.call(r, s.token, http.MethodPost, "/v2/sandbox/clock/advance", body)
	if !res.ok() {
		c.back(w, r, back, flash{Msg: res.message()})
		return
	}
	c.back(w, r, back, flash{Msg: c.tr(r, "clock.advanced"), OK: true})
}

// backTo is the console page a clock form returns to: its "back" field
// when it names a console page, else the overview.
func backTo(r *http.Request) string {
	back := r.PostForm.Get("back")
	if !strings.HasPrefix(back, "/console") || strings.HasPrefix(back, "//") {
		return "/console"
	}
	return back
}

// resetClock returns the merchant's test clock to real time.
func (c *Console) resetClock(w http.ResponseWriter, r *http.Request, s *session) {
	back := backTo(r)
	res := c.call(r, s.token, http.MethodPost, "/v2/sandbox/clock/reset", map[string]any{})
	if !res.ok() {
		c.back(w, r, back, flash{Msg: res.message()})
		return
	}
	c.back(w, r, back, flash{Msg: c.tr(r, "clock.reset"), OK: true})
}

// amountText is an object's amount in lang, "" when it has none.
func amountText(lang string, amounts map[string]sqlstore.ObjectAmount, id string) string {
	a, ok := amounts[id]
	if !ok {
		return ""
	}
	return money(lang, a.Amount, a.Currency)
}
