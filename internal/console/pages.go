package console

import (
	"fmt"
	"net/http"
	"net/url"
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
}

// kind is one of the console's object lists, read from the API.
type kind struct {
	name, object string // URL segment, payd.Object*
	list, get    string // API paths
	id           string // the id's key in a record
	cols         []string
	filters      []filter
}

var statusRTP = []string{"Created", "Active", "Accepted", "Rejected", "Expired", "Cancelled", "Refunded"}

var kinds = map[string]*kind{
	"rtp": {name: "rtp", object: payd.ObjectRTP, list: "/v2/rtp", get: "/v2/rtp/", id: "rtpId",
		cols:    []string{"rtpId", "status", "amount", "currency", "description", "orderId", "createdAt"},
		filters: []filter{{Name: "status", Options: statusRTP}, {Name: "rtpId"}, {Name: "orderId"}, {Name: "description"}, {Name: "createdAtFrom"}, {Name: "createdAtTo"}}},
	"qr": {name: "qr", object: payd.ObjectQR, list: "/v2/instant/qr", get: "/v2/instant/qr/", id: "qrId",
		cols: []string{"qrId", "type", "status", "amountType", "amount", "description", "orderId", "createdAt"},
		filters: []filter{{Name: "status", Options: []string{"Active", "Paid", "Expired", "Cancelled", "Inactive"}},
			{Name: "type", Options: []string{"Static", "Dynamic", "Hybrid"}}, {Name: "qrId"}, {Name: "orderId"}, {Name: "description"}}},
	"checkouts": {name: "checkouts", object: payd.ObjectCheckout, list: "/v2/checkouts", get: "/v2/checkouts/", id: "id",
		cols: []string{"id", "status", "amount", "currency", "language", "createdAt"},
		filters: []filter{{Name: "status", Options: []string{"WaitingForInit", "Initialized", "PaymentMethodSelected", "Completed", "Failed",
			"Cancelled", "Abandoned", "Expired"}}, {Name: "id"}, {Name: "orderId"}, {Name: "createdAtFrom"}, {Name: "createdAtTo"}}},
	"payments": {name: "payments", object: payd.ObjectPayment, list: "/v2/payments", get: "/v2/payments/", id: "paymentId",
		cols: []string{"paymentId", "status", "amount", "currency", "providerType", "senderName", "orderId", "executedAt"},
		filters: []filter{{Name: "status", Options: []string{"Executed", "PartiallyRefunded", "Refunded", "Failed"}}, {Name: "paymentId"},
			{Name: "paymentIntentId"}, {Name: "orderId"}, {Name: "executedAtFrom"}, {Name: "executedAtTo"}}},
	"refunds": {name: "refunds", object: payd.ObjectRefund, get: "/v2/payments/refunds/", id: "id",
		cols:    []string{"id", "status", "amount", "currency", "paymentId", "refundReason", "executedAt"},
		filters: []filter{{Name: "status", Options: []string{"Created", "Requested", "Accepted", "Rejected", "Manual"}}, {Name: "paymentId"}}},
	"callbacks": {name: "callbacks", object: "callback", list: "/v2/callbacks", get: "/v2/callbacks/", id: "callbackId",
		cols: []string{"callbackId", "event", "objectId", "state", "attempts", "lastStatusCode", "createdAt"},
		filters: []filter{{Name: "state", Options: []string{"Pending", "Delivered", "Failed"}}, {Name: "event"}, {Name: "objectId"},
			{Name: "createdAtFrom"}, {Name: "createdAtTo"}}},
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

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	counts, err := c.store.StateCounts(r.Context(), s.m.ID)
	if err != nil {
		c.fail(w, err)
		return
	}
	var rows []countRow
	for _, k := range nav {
		row := countRow{Kind: k}
		for _, sc := range counts {
			if kindOf[sc.Object] == k && !(k == "qr" && sc.Object == payd.ObjectExtension) {
				row.Items = append(row.Items, sc)
			}
		}
		rows = append(rows, row)
	}
	recent, err := c.store.RecentChanges(r.Context(), s.m.ID, 20)
	if err != nil {
		c.fail(w, err)
		return
	}
	var activity []entry
	for _, ev := range recent {
		activity = append(activity, changeEntry(ev, ""))
	}
	c.render(w, r, http.StatusOK, "overview.html", s, map[string]any{"Counts": rows, "Recent": activity})
}

// cell is one table cell, a link when Href is set.
type cell struct{ Text, Href string }

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
	var items []any
	var total int
	var errMsg string
	if k.list == "" { // refunds: the API has no list; the store's, then each record from the API
		rfs, n, err := c.store.Refunds(r.Context(), sqlstore.RefundFilter{MerchantID: s.m.ID, PaymentID: q.Get("paymentId"),
			Status: q.Get("status"), Count: count, Offset: offset})
		if err != nil {
			c.fail(w, err)
			return
		}
		total = n
		for _, rf := range rfs {
			if res := c.call(r, s.token, http.MethodGet, k.get+url.PathEscape(rf.ID), nil); res.ok() {
				items = append(items, res.Result)
			}
		}
	} else {
		api := url.Values{}
		for name, v := range q {
			api[name] = v
		}
		api.Set("count", strconv.Itoa(count))
		api.Set("offset", strconv.Itoa(offset))
		res := c.call(r, s.token, http.MethodGet, k.list+"?"+api.Encode(), nil)
		if res.ok() {
			total = int(num(field(res.Result, "totalCount")))
			items, _ = field(res.Result, "items").([]any)
		} else {
			errMsg = res.message()
		}
	}
	var rows [][]cell
	for _, it := range items {
		var row []cell
		for i, col := range k.cols {
			cl := cell{Text: str(field(it, col))}
			if i == 0 {
				cl.Href = "/console/" + k.name + "/" + url.PathEscape(cl.Text)
			}
			if col == "objectId" || col == "paymentId" && k.name != "payments" {
				cl.Href = c.find(cl.Text)
			}
			row = append(row, cl)
		}
		rows = append(rows, row)
	}
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
		"From": min(offset+1, total), "To": offset + len(rows), "Error": errMsg}
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
	At         time.Time
	When, Text string
	Href       string
	Detail     string
}

func changeEntry(ev *payd.Change, mainID string) entry {
	e := entry{At: ev.At, When: payd.FormatTime(ev.At),
		Text: fmt.Sprintf("%s %s → %s %s", ev.Object, ev.From, ev.To, text["event."+string(ev.Cause)])}
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

// detail is one object with its timeline, its related objects and, in
// the sandbox, the actions a tester needs.
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
	res := c.call(r, s.token, http.MethodGet, k.get+url.PathEscape(id), nil)
	if !res.ok() {
		c.notFound(w, r, s)
		return
	}
	obj := res.Result
	if k.name == "callbacks" {
		c.render(w, r, http.StatusOK, "callback.html", s, map[string]any{"C": obj, "ID": id,
			"Body": prettyJSON(str(field(obj, "body"))), "Headers": field(obj, "headers"), "Attempts": field(obj, "attemptLog"),
			"Object": c.find(str(field(obj, "objectId")))})
		return
	}
	ids := []string{id}
	var related []cell
	var timeline []entry
	created := field(obj, "createdAt")
	if k.name == "payments" {
		created = field(obj, "executedAt")
	}
	timeline = append(timeline, entry{At: parseTime(created), When: str(created), Text: k.object + " " + text["created"]})
	addPayments := func(intent string) {
		pays := c.call(r, s.token, http.MethodGet, "/v2/payments?paymentIntentId="+url.QueryEscape(intent)+"&count=100&offset=0", nil)
		items, _ := field(pays.Result, "items").([]any)
		for _, p := range items {
			pid := str(field(p, "paymentId"))
			ids = append(ids, pid)
			related = append(related, cell{Text: "payment " + pid + " · " + str(field(p, "status")), Href: "/console/payments/" + url.PathEscape(pid)})
			timeline = append(timeline, entry{At: parseTime(field(p, "executedAt")), When: str(field(p, "executedAt")),
				Text: text["payment.executed"] + " " + str(field(p, "amount")) + " " + str(field(p, "currency")), Href: "/console/payments/" + url.PathEscape(pid)})
			c.addRefunds(r, s, pid, &ids, &related, &timeline)
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
			related = append(related, cell{Text: "extension " + xid + " · " + str(field(x, "status")) + " · " + str(field(x, "amount"))})
		}
		addPayments(id)
	case "payments":
		intent := str(field(obj, "paymentIntentId"))
		related = append(related, cell{Text: "paid " + intent, Href: c.find(intent)})
		c.addRefunds(r, s, id, &ids, &related, &timeline)
	case "refunds":
		pid := str(field(obj, "paymentId"))
		related = append(related, cell{Text: "payment " + pid, Href: "/console/payments/" + url.PathEscape(pid)})
	}
	changes, err := c.store.Changes(r.Context(), s.m.ID, ids...)
	if err != nil {
		c.fail(w, err)
		return
	}
	for _, ev := range changes {
		timeline = append(timeline, changeEntry(ev, id))
	}
	timeline = append(timeline, c.callbackEntries(r, s, id)...)
	sort.SliceStable(timeline, func(i, j int) bool { return timeline[i].At.Before(timeline[j].At) })
	c.render(w, r, http.StatusOK, "detail.html", s, map[string]any{"Kind": k.name, "ID": id, "Fields": fields(obj),
		"Related": related, "Timeline": timeline, "Actions": c.actions(k.name, obj), "Obj": obj})
}

func (c *Console) addRefunds(r *http.Request, s *session, payID string, ids *[]string, related *[]cell, timeline *[]entry) {
	rfs, _, err := c.store.Refunds(r.Context(), sqlstore.RefundFilter{MerchantID: s.m.ID, PaymentID: payID, Count: 100})
	if err != nil {
		return
	}
	for _, rf := range rfs {
		*ids = append(*ids, rf.ID)
		href := "/console/refunds/" + url.PathEscape(rf.ID)
		*related = append(*related, cell{Text: "refund " + rf.ID + " · " + string(rf.Status), Href: href})
		*timeline = append(*timeline, entry{At: rf.CreatedAt, When: payd.FormatTime(rf.CreatedAt),
			Text: text["refund.created"] + " " + rf.Amount.String() + " " + rf.Currency + " (" + rf.Reason + ")", Href: href})
	}
}

// callbackEntries are the attempts of every callback about id.
func (c *Console) callbackEntries(r *http.Request, s *session, id string) []entry {
	res := c.call(r, s.token, http.MethodGet, "/v2/callbacks?objectId="+url.QueryEscape(id)+"&count=20&offset=0", nil)
	items, _ := field(res.Result, "items").([]any)
	var out []entry
	for _, it := range items {
		cid := str(field(it, "callbackId"))
		href := "/console/callbacks/" + url.PathEscape(cid)
		d := c.call(r, s.token, http.MethodGet, "/v2/callbacks/"+url.PathEscape(cid), nil)
		attempts, _ := field(d.Result, "attemptLog").([]any)
		label := text["callback.sent"] + " " + str(field(it, "event"))
		if len(attempts) == 0 {
			out = append(out, entry{At: parseTime(field(it, "createdAt")), When: str(field(it, "createdAt")),
				Text: label + " · " + str(field(it, "state")), Href: href})
		}
		for _, a := range attempts {
			result := str(field(a, "statusCode"))
			if result == "" {
				result = text["noResponse"] + " " + str(field(a, "error"))
			}
			out = append(out, entry{At: parseTime(field(a, "startedAt")), When: str(field(a, "startedAt")),
				Text: fmt.Sprintf("%s · %s %s · %s (%s ms)", label, text["attempt"], str(field(a, "attempt")), result, str(field(a, "durationMs"))),
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

// kv is one field of an object as shown.
type kv struct{ Key, Value string }

// fields are an object's top-level fields in order, nested ones as JSON.
func fields(obj any) []kv {
	m, _ := obj.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []kv
	for _, k := range keys {
		if m[k] == nil {
			continue
		}
		out = append(out, kv{Key: k, Value: str(m[k])})
	}
	return out
}

// action is a form on a detail page.
type action struct {
	Name, Label string
	Inputs      []input
}

type input struct{ Name, Label, Value string }

// actions are the forms an object offers in its state.
func (c *Console) actions(kindName string, obj any) []action {
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
			out = append(out, action{Name: "refund", Label: text["refund"], Inputs: []input{
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
			map[string]any{"amount": field(rtp.Result, "amount"), "currency": field(rtp.Result, "currency")}), text["accepted"]
	case "rtp/reject":
		res, done = c.call(r, s.token, http.MethodPost, "/v2/rtp/"+url.PathEscape(id)+"/test-reject", map[string]any{}), text["rejected"]
	case "qr/pay":
		body := map[string]any{"qrId": id, "currency": "MDL", "payerName": r.PostForm.Get("payerName"), "iban": payd.TestIBAN}
		if a := strings.TrimSpace(r.PostForm.Get("amount")); a != "" {
			body["amount"] = jsonNumber(a)
		}
		res, done = c.call(r, s.token, http.MethodPost, "/v2/instant/test-pay", body), text["paid"]
	case "payments/refund":
		body := map[string]any{"reason": r.PostForm.Get("reason")}
		if a := strings.TrimSpace(r.PostForm.Get("amount")); a != "" {
			body["amount"] = jsonNumber(a)
		}
		res, done = c.call(r, s.token, http.MethodPost, "/v2/payments/"+url.PathEscape(id)+"/refund", body), text["refunded"]
	case "callbacks/resend":
		res, done = c.call(r, s.token, http.MethodPost, "/v2/callbacks/"+url.PathEscape(id)+"/resend", nil), text["resent"]
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
		done = res.message()
	}
	c.back(w, r, here, done)
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
	back := r.PostForm.Get("back")
	if !strings.HasPrefix(back, "/console") || strings.HasPrefix(back, "//") {
		back = "/console"
	}
	body := map[string]any{"seconds": secs}
	if err != nil {
		body["seconds"] = r.PostForm.Get("seconds")
	}
	res := c.call(r, s.token, http.MethodPost, "/v2/sandbox/clock/advance", body)
	msg := text["clock.advanced"]
	if !res.ok() {
		msg = res.message()
	}
	c.back(w, r, back, msg)
}
