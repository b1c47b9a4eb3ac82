package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/sandbox"
	"payd/internal/worker"
)

func (e *env) checkout(over map[string]any) string {
	e.t.Helper()
	b := map[string]any{"amount": 200, "currency": "MDL", "successUrl": "https://shop.example/ok?src=x", "failUrl": "https://shop.example/fail",
		"callbackUrl": "https://shop.example/cb", "orderInfo": map[string]any{"id": "ORD-7", "description": "Books", "deliveryAmount": 15, "deliveryCurrency": "MDL"},
		"payerInfo": map[string]any{"name": "Ion Popescu", "email": "Ion@Example.md", "phone": "+37377382716", "ip": "192.0.2.1"}}
	for k, v := range over {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return e.as("POST", "/v2/checkouts", b).wantOK().str("result.checkoutId")
}

// payer drives the hosted page like a browser.
type payer struct {
	e *env
	c *http.Client
}

func (e *env) payer() *payer { return &payer{e: e, c: e.browser()} }

func (p *payer) open(id string) (int, string, http.Header) {
	return p.e.page(p.c, "GET", "/checkout/"+id, nil, nil)
}

func (p *payer) csrf(id string) string {
	_, body, _ := p.e.page(p.c, "GET", "/checkout/"+id, nil, nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		// A terminal checkout has no forms; any page of ours sets the cookie.
		_, body, _ = p.e.page(p.c, "GET", "/rtp/"+p.e.createRTP(nil), nil, nil)
		m = csrfRE.FindStringSubmatch(body)
	}
	return m[1]
}

func (p *payer) method(id, m string) (int, string, http.Header) {
	return p.e.page(p.c, "POST", "/checkout/"+id+"/method", url.Values{"csrf": {p.csrf(id)}, "method": {m}}, nil)
}

func (p *payer) card(id, number, expiry, cvv string) (int, string, http.Header) {
	return p.e.page(p.c, "POST", "/checkout/"+id+"/card", url.Values{"csrf": {p.csrf(id)}, "cardNumber": {number},
		"expiry": {expiry}, "cvv": {cvv}, "cardHolder": {"Test Test"}}, nil)
}

func (e *env) checkoutStatus(id string) string {
	return e.as("GET", "/v2/checkouts/"+id, nil).wantOK().str("result.status")
}

func TestCheckoutRegistration(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		r := e.as("POST", "/v2/checkouts", map[string]any{"amount": 10, "currency": "MDL"}).wantOK()
		id := r.str("result.checkoutId")
		if r.str("result.checkoutUrl") != e.api.cfg.PublicURL+"/checkout/"+id {
			t.Errorf("result = %s", r.body)
		}
		rec := e.as("GET", "/v2/checkouts/"+id, nil).wantOK()
		var raw map[string]map[string]json.RawMessage
		json.Unmarshal(rec.body, &raw)
		var keys []string
		for k := range raw["result"] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := "CancelledAt CompletedAt FailedAt amount callbackUrl cancelledAt completedAt createdAt currency expiresAt failUrl failedAt id language order payer payment status successUrl url"
		if strings.Join(keys, " ") != want {
			t.Errorf("record keys %v", keys)
		}
		// Without successUrl and failUrl the payer returns to the checkout's own page, and the record says so.
		if rec.str("result.successUrl") != rec.str("result.url") || rec.str("result.failUrl") != rec.str("result.url") || rec.get("result.callbackUrl") != nil {
			t.Errorf("return URLs of a checkout without them: %s", rec.body)
		}
		if rec.str("result.language") != "ro" || rec.get("result.order") != nil || rec.str("result.status") != "WaitingForInit" ||
			rec.str("result.expiresAt") != payd.FormatTime(e.clock.Now().Add(25*time.Minute)) {
			t.Errorf("record = %s", rec.body)
		}
		bad := []struct {
			body map[string]any
			code string
		}{
			{map[string]any{"currency": "MDL"}, payd.CodeCheckoutMissing},
			{map[string]any{"amount": 10}, payd.CodeCheckoutMissing},
			{map[string]any{"amount": 0, "currency": "MDL"}, payd.CodeCheckoutAmount},
			{map[string]any{"amount": 100000.01, "currency": "MDL"}, payd.CodeCheckoutAmount},
			{map[string]any{"amount": 1.234, "currency": "MDL"}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": "10", "currency": "MDL"}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "EUR"}, payd.CodeCheckoutCurrency},
			{map[string]any{"amount": 10, "currency": "MDL", "language": "de"}, payd.CodeCheckoutLanguage},
			{map[string]any{"amount": 10, "currency": "MDL", "successUrl": "nope"}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": "x"}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"deliveryAmount": -1}}, payd.CodeCheckoutNegative},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"orderCurrency": "GBP"}}, payd.CodeCheckoutCurrency},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"id": strings.Repeat("x", 101)}}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"items": []any{map[string]any{"quantity": 0}}}}, payd.CodeCheckoutQuantity},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"items": []any{map[string]any{"quantity": 1.2345}}}}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"items": []any{map[string]any{"title": strings.Repeat("t", 126)}}}}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"items": []any{map[string]any{"amount": -0.01}}}}, payd.CodeCheckoutNegative},
			{map[string]any{"amount": 10, "currency": "MDL", "payerInfo": map[string]any{"email": "not-an-email"}}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "payerInfo": map[string]any{"phone": "123"}}, payd.CodeCheckoutFormat},
			{map[string]any{"amount": 10, "currency": "MDL", "payerInfo": map[string]any{"ip": "300.1.1.1"}}, payd.CodeCheckoutFormat},
		}
		for _, b := range bad {
			if r := e.as("POST", "/v2/checkouts", b.body); r.status != 400 || !contains(r.codes(), b.code) {
				t.Errorf("%v: %d %s, want %s", b.body, r.status, r.body, b.code)
			}
		}
		e.as("POST", "/v2/checkouts", "").wantError(400, payd.CodeCheckoutMissing)
		e.as("POST", "/v2/checkouts", "{").wantError(400, payd.CodeCheckoutFormat)
		// Members the contract does not list are refused by their path, at every depth.
		r = e.as("POST", "/v2/checkouts", map[string]any{"amount": 10, "currency": "MDL", "sucessUrl": "https://x.example/ok",
			"orderInfo": map[string]any{"id": "o", "tax": 1, "items": []any{map[string]any{"title": "t"}, map[string]any{"price": 2}}},
			"payerInfo": map[string]any{"mail": "a@b.md"}}).wantError(400, payd.CodeCheckoutFormat)
		if got := paramsOf(r); fmt.Sprint(got) != "[orderInfo.items[1].price orderInfo.tax payerInfo.mail sucessUrl]" {
			t.Errorf("unknown members: %v (%s)", got, r.body)
		}
		// A checkout cancel takes no members.
		e.as("POST", "/v2/checkouts/"+id+"/cancel", map[string]any{"reason": "x"}).wantError(400, payd.CodeCheckoutFormat)
		items := []any{}
		for i := 0; i < 101; i++ {
			items = append(items, map[string]any{"title": "x"})
		}
		e.as("POST", "/v2/checkouts", map[string]any{"amount": 10, "currency": "MDL", "orderInfo": map[string]any{"items": items}}).wantError(400, payd.CodeCheckoutFormat)
		// The full shape round-trips.
		full := e.checkout(map[string]any{"language": "RU", "orderInfo": map[string]any{"id": "O-1", "description": "d", "orderAmount": 180,
			"orderCurrency": "MDL", "date": "2026-02-28T12:00:00+02:00", "items": []any{map[string]any{"externalId": "SKU1", "title": "Book",
				"amount": 90, "currency": "EUR", "quantity": 2.5, "displayOrder": 1}}}})
		f := e.as("GET", "/v2/checkouts/"+full, nil).wantOK()
		if f.str("result.language") != "ru" || f.str("result.order.date") != "2026-02-28T10:00:00.000+00:00" || f.num("result.order.amount") != 180 ||
			!strings.Contains(string(f.body), `"quantity":2.5,"displayOrder":1`) || f.str("result.payer.email") != "Ion@Example.md" || f.get("result.payer.userAgent") != nil {
			t.Errorf("full record = %s", f.body)
		}
		_, _, other := e.newMerchant(0)
		e.call("GET", "/v2/checkouts/"+full, nil, other).wantError(404, payd.CodeCheckoutNotFound)
		e.call("POST", "/v2/checkouts/"+full+"/cancel", nil, other).wantError(404, payd.CodeCheckoutNotFound)
		e.as("GET", "/v2/checkouts/bad-id", nil).wantError(404, payd.CodeCheckoutNotFound)
	})
}

// TestCheckoutTransitions walks spec §4.6 row by row.
func TestCheckoutTransitions(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		p := e.payer()
		// WaitingForInit → Initialized by opening the page.
		id := e.checkout(nil)
		if status, body, _ := p.open(id); status != 200 || !strings.Contains(body, `data-status="Initialized"`) {
			t.Errorf("open: %d", status)
		}
		if s := e.checkoutStatus(id); s != "Initialized" {
			t.Errorf("after open: %s", s)
		}
		// Initialized → PaymentMethodSelected; switching is allowed; MiaQr creates the QR once.
		if status, _, hdr := p.method(id, "MiaQr"); status != 303 || hdr.Get("Location") != "/checkout/"+id {
			t.Errorf("method: %d %s", status, hdr.Get("Location"))
		}
		p.method(id, "Card")
		p.method(id, "MiaQr")
		qrs := e.as("GET", "/v2/instant/qr?count=10&offset=0&orderId=ORD-7", nil).wantOK()
		if qrs.num("result.totalCount") != 1 || qrs.str("result.items.0.type") != "Dynamic" || qrs.num("result.items.0.amount") != 200 ||
			qrs.str("result.items.0.description") != "Books" || qrs.str("result.items.0.redirectUrl") != e.api.cfg.PublicURL+"/checkout/"+id {
			t.Errorf("checkout QR = %s", qrs.body)
		}
		qrID := qrs.str("result.items.0.qrId")
		if _, body, _ := p.open(id); !strings.Contains(body, `/qr/`+qrID+`.png`) || !strings.Contains(body, `http-equiv="refresh" content="3"`) {
			t.Errorf("QR step page lacks the image or the refresh")
		}
		// PaymentMethodSelected → Completed by paying the QR: only the checkout callback.
		pay := e.pay(qrID, 200).wantOK()
		rec := e.as("GET", "/v2/checkouts/"+id, nil).wantOK()
		if rec.str("result.status") != "Completed" || rec.str("result.CompletedAt") != payd.FormatTime(e.clock.Now()) ||
			rec.str("result.payment.PaymentId") != pay.str("result.payId") || rec.str("result.payment.type") != "MIA" ||
			rec.str("result.payment.providerType") != "QR" || rec.str("result.payment.paymentMethod") != "MiaQr" {
			t.Errorf("completed by QR = %s", rec.body)
		}
		cbs, _ := e.store.Callbacks(t.Context(), payd.CallbackPending, 10)
		if len(cbs) != 1 || cbs[0].Event != payd.EventCheckoutCompleted || cbs[0].SubjectID != id {
			t.Fatalf("callbacks = %+v", cbs)
		}
		if pr := e.as("GET", "/v2/payments/"+pay.str("result.payId"), nil); pr.str("result.paymentIntentId") != id || pr.str("result.paymentEntryPoint") != "Checkout" {
			t.Errorf("payment record = %s", pr.body)
		}
		// The page now sends the browser to successUrl with the query.
		status, _, hdr := p.open(id)
		loc, _ := url.Parse(hdr.Get("Location"))
		if status != 303 || loc.Host != "shop.example" || loc.Path != "/ok" || loc.Query().Get("src") != "x" ||
			loc.Query().Get("checkoutId") != id || loc.Query().Get("checkoutStatus") != "Completed" || loc.Query().Get("orderId") != "ORD-7" {
			t.Errorf("return: %d %s", status, hdr.Get("Location"))
		}
		e.as("POST", "/v2/checkouts/"+id+"/cancel", nil).wantError(409, payd.CodeCheckoutState)

		// WaitingForInit → PaymentMethodSelected when a method is posted before the page was opened.
		direct := e.checkout(nil)
		pd := e.payer()
		_, rtpPage, _ := e.page(pd.c, "GET", "/rtp/"+e.createRTP(nil), nil, nil) // any page sets the CSRF cookie
		if status, _, _ := e.page(pd.c, "POST", "/checkout/"+direct+"/method", url.Values{"csrf": {csrfRE.FindStringSubmatch(rtpPage)[1]}, "method": {"Card"}}, nil); status != 303 {
			t.Errorf("method before open: %d", status)
		}
		if s := e.checkoutStatus(direct); s != "PaymentMethodSelected" {
			t.Errorf("method before open: %s", s)
		}
		// Card approved → Completed.
		id2 := e.checkout(map[string]any{"orderInfo": nil})
		p2 := e.payer()
		status, _, _ = e.page(p2.c, "POST", "/checkout/"+id2+"/card", url.Values{"csrf": {p2.csrf(id2)}}, nil)
		if status != 409 {
			t.Errorf("card before Card was selected: %d", status)
		}
		p2.method(id2, "Card")
		if status, _, _ := p2.card(id2, "5102180060101125", "06/28", "760"); status != 400 { // Luhn fails
			t.Errorf("malformed card: %d", status)
		}
		if status, _, _ := p2.card(id2, "5102180060101124", "13/28", "760"); status != 400 {
			t.Errorf("bad expiry: %d", status)
		}
		if s := e.checkoutStatus(id2); s != "PaymentMethodSelected" {
			t.Errorf("malformed cards changed the status: %s", s)
		}
		status, _, hdr = p2.card(id2, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV)
		if status != 303 || !strings.Contains(hdr.Get("Location"), "checkoutStatus=Completed") || strings.Contains(hdr.Get("Location"), "orderId") {
			t.Errorf("approved card: %d %s", status, hdr.Get("Location"))
		}
		if at := e.dbText(); strings.Contains(at, payd.ApprovedCard) || !strings.Contains(at, "510218******1124") {
			t.Error("the card number is stored beyond its mask")
		}
		rec = e.as("GET", "/v2/checkouts/"+id2, nil).wantOK()
		if rec.str("result.payment.type") != "MMC" || rec.str("result.payment.paymentMethod") != "Card" || len(rec.str("result.payment.approvalCode")) != 6 ||
			len(rec.str("result.payment.referenceNumber")) != 12 || rec.str("result.payment.senderName") != "Test Test" {
			t.Errorf("card payment = %s", rec.body)
		}

		// Card declined → Failed; the QR is cancelled; failUrl.
		id3 := e.checkout(nil)
		p3 := e.payer()
		p3.method(id3, "MiaQr")
		p3.method(id3, "Card")
		status, _, hdr = p3.card(id3, "4000000000000002", "01/30", "123")
		if status != 303 || !strings.HasPrefix(hdr.Get("Location"), "https://shop.example/fail?") || !strings.Contains(hdr.Get("Location"), "checkoutStatus=Failed") {
			t.Errorf("declined: %d %s", status, hdr.Get("Location"))
		}
		rec = e.as("GET", "/v2/checkouts/"+id3, nil).wantOK()
		if rec.str("result.status") != "Failed" || rec.str("result.FailedAt") == "" || rec.str("result.payment.status") != "Failed" || rec.get("result.payment.approvalCode") != nil {
			t.Errorf("failed checkout = %s", rec.body)
		}
		q3 := e.as("GET", "/v2/instant/qr?count=10&offset=0&status=Cancelled", nil).wantOK()
		if q3.num("result.totalCount") != 1 {
			t.Errorf("the failed checkout's QR was not cancelled: %s", q3.body)
		}
		// The approved number with another expiry is declined too.
		id4 := e.checkout(nil)
		p4 := e.payer()
		p4.method(id4, "Card")
		p4.card(id4, payd.ApprovedCard, "07/28", payd.ApprovedCardCVV)
		if s := e.checkoutStatus(id4); s != "Failed" {
			t.Errorf("approved number, other expiry: %s", s)
		}

		// Cancel from each non-terminal state; the QR is cancelled and can no longer be paid.
		for _, setup := range []func(string){func(string) {}, func(id string) { e.payer().open(id) }, func(id string) { e.payer().method(id, "MiaQr") }} {
			id := e.checkout(map[string]any{"orderInfo": map[string]any{"id": "CANCEL"}})
			setup(id)
			r := e.as("POST", "/v2/checkouts/"+id+"/cancel", nil).wantOK()
			if r.str("result.status") != "Cancelled" || r.str("result.checkoutId") != id {
				t.Errorf("cancel = %s", r.body)
			}
			if c := e.as("GET", "/v2/checkouts/"+id, nil); c.str("result.CancelledAt") == "" {
				t.Errorf("no CancelledAt: %s", c.body)
			}
			e.as("POST", "/v2/checkouts/"+id+"/cancel", "").wantError(409, payd.CodeCheckoutState)
		}
		cq := e.as("GET", "/v2/instant/qr?count=10&offset=0&orderId=CANCEL", nil).wantOK()
		if cq.num("result.totalCount") != 1 || cq.str("result.items.0.status") != "Cancelled" {
			t.Errorf("cancelled checkout's QR = %s", cq.body)
		}
		e.pay(cq.str("result.items.0.qrId"), 200).wantError(409, payd.CodeQRState)

		// Expiry: Abandoned when never opened, Expired otherwise; the QR expires at the same instant.
		ab := e.checkout(nil)
		ex := e.checkout(map[string]any{"orderInfo": map[string]any{"id": "EXP"}})
		e.payer().method(ex, "MiaQr")
		e.clock.Advance(25 * time.Minute)
		if s := e.checkoutStatus(ab); s != "Abandoned" {
			t.Errorf("never opened, past expiresAt: %s", s)
		}
		if s := e.checkoutStatus(ex); s != "Expired" {
			t.Errorf("opened, past expiresAt: %s", s)
		}
		eq := e.as("GET", "/v2/instant/qr?count=10&offset=0&orderId=EXP", nil).wantOK()
		if eq.str("result.items.0.status") != "Expired" {
			t.Errorf("expired checkout's QR = %s", eq.body)
		}
		e.pay(eq.str("result.items.0.qrId"), 200).wantError(409, payd.CodeQRState)
		if status, _, _ := e.payer().method(ex, "Card"); status != 409 {
			t.Errorf("method on an expired checkout: %d", status)
		}
		before := e.as("GET", "/v2/checkouts?count=100", nil).wantOK()
		if n, err := (&worker.Expiry{Store: e.store, Clock: e.clock}).RunOnce(t.Context()); err != nil || n < 2 {
			t.Fatalf("expiry loop = %d, %v", n, err)
		}
		if after := e.as("GET", "/v2/checkouts?count=100", nil); string(after.body) != string(before.body) {
			t.Errorf("written state differs from the lazy view")
		}
		e.as("POST", "/v2/checkouts/"+ab+"/cancel", nil).wantError(409, payd.CodeCheckoutState)
	})
}

func TestCheckoutListAndPaymentsArea(t *testing.T) {
	cfg := testConfig()
	cfg.Currencies = []string{"MDL", "EUR"}
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		a := e.checkout(map[string]any{"amount": 50, "language": "en"})
		e.clock.Advance(time.Second)
		b := e.checkout(map[string]any{"amount": 150, "currency": "EUR", "payerInfo": map[string]any{"name": "Maria", "email": "maria@example.md"}})
		e.clock.Advance(time.Second)
		c := e.checkout(map[string]any{"amount": 100, "orderInfo": map[string]any{"id": "X"}})
		e.as("POST", "/v2/checkouts/"+c+"/cancel", nil).wantOK()
		// A EUR checkout offers only the card.
		pb := e.payer()
		if _, body, _ := pb.open(b); strings.Contains(body, `id="method-qr"`) || !strings.Contains(body, `id="method-card"`) {
			t.Error("EUR checkout offers MiaQr")
		}
		if status, _, _ := pb.method(b, "MiaQr"); status != 400 {
			t.Errorf("MiaQr on EUR: %d", status)
		}
		pb.method(b, "Card")
		pb.card(b, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV)
		check := func(q string, want ...string) {
			t.Helper()
			r := e.as("GET", "/v2/checkouts?"+q, nil).wantOK()
			var got []string
			items, _ := r.get("result.items").([]any)
			for _, it := range items {
				got = append(got, it.(map[string]any)["id"].(string))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || int(r.num("result.count")) != len(want) {
				t.Errorf("%s: %v, want %v (%s)", q, got, want, r.body)
			}
		}
		check("", a, b, c)
		check("sortBy=Amount&order=DESC", b, c, a)
		check("sortBy=amount", a, c, b)
		check("count=1&offset=1", b)
		check("status=completed", b)
		check("status=Cancelled", c)
		check("minAmount=100", b, c)
		check("maxAmount=100", a, c)
		check("currency=EUR", b)
		check("language=EN", a)
		check("payerName=mar", b)
		check("payerEmail=MARIA@example.md", b)
		check("payerPhone=%2B37377382716", a, c)
		check("orderId=X", c)
		check("id="+a, a)
		check("completedAtFrom="+url.QueryEscape(payd.FormatTime(e.clock.Now())), b)
		check("cancelledAtTo="+url.QueryEscape(payd.FormatTime(e.clock.Now())), c)
		check("sortBy=CompletedAt", a, c, b)
		e.as("GET", "/v2/checkouts?count=0", nil).wantError(400, payd.CodeCheckoutPaging)
		e.as("GET", "/v2/checkouts?sortBy=payer", nil).wantError(400, payd.CodeCheckoutPaging)
		e.as("GET", "/v2/checkouts?order=x", nil).wantError(400, payd.CodeCheckoutPaging)
		e.as("GET", "/v2/checkouts?status=Paid", nil).wantError(400, payd.CodeCheckoutFormat)
		e.as("GET", "/v2/checkouts?id=nope", nil).wantError(400, payd.CodeCheckoutFormat)
		if r := e.as("GET", "/v2/checkouts?count=1", nil).wantOK(); r.num("result.totalCount") != 3 || r.num("result.count") != 1 {
			t.Errorf("count/totalCount = %s", r.body)
		}
		// The card payment in the payments area, refunded in part; a card
		// payment is refunded once, as the acquirer allows (docs/cards.md),
		// in the sandbox as in production: nothing more is refundable.
		payID := e.as("GET", "/v2/checkouts/"+b, nil).str("result.payment.PaymentId")
		p := e.as("GET", "/v2/payments/"+payID, nil).wantOK()
		if p.str("result.currency") != "EUR" || p.str("result.providerType") != "MMC" || p.get("result.terminalId") != nil || p.get("result.senderIban") != nil {
			t.Errorf("card payment = %s", p.body)
		}
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 50, "reason": "one item"}).wantOK()
		proc := &sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}
		proc.RunOnce(t.Context())
		e.clock.Advance(time.Second)
		proc.RunOnce(t.Context())
		if p := e.as("GET", "/v2/payments/"+payID, nil); p.str("result.status") != "PartiallyRefunded" || p.num("result.refundableAmount") != 0 ||
			p.get("result.isRefundable") != false || p.get("result.partialRefundAvailable") != false {
			t.Errorf("partially refunded = %s", p.body)
		}
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "rest"}).wantError(409, payd.CodeAlreadyRefunded)
		rec := e.as("GET", "/v2/checkouts/"+b, nil).wantOK()
		if rec.str("result.status") != "Completed" || rec.num("result.payment.refundedAmount") != 50 || rec.str("result.payment.status") != "PartiallyRefunded" || rec.str("result.payment.lastRefundedAt") == "" {
			t.Errorf("checkout after the refund = %s", rec.body)
		}
		for q, want := range map[string]float64{"": 1, "providerType=MMC": 1, "type=MIA": 0, "status=PartiallyRefunded": 1, "status=Refunded": 0, "currency=EUR": 1, "paymentIntentId=" + b: 1, "note=x": 0} {
			if r := e.as("GET", "/v2/payments?"+q, nil).wantOK(); r.num("result.totalCount") != want {
				t.Errorf("payments?%s = %s", q, r.body)
			}
		}
		e.as("GET", "/v2/payments?status=Weird", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/payments?sortBy=weird", nil).wantError(400, payd.CodeQRSorting)
		// A declined card payment cannot be refunded.
		d := e.checkout(nil)
		pd := e.payer()
		pd.method(d, "Card")
		pd.card(d, "4000000000000002", "01/30", "123")
		dPay := e.as("GET", "/v2/checkouts/"+d, nil).str("result.payment.PaymentId")
		e.as("POST", "/v2/payments/"+dPay+"/refund", map[string]any{"reason": "x"}).wantError(409, payd.CodeNotRefundable)
		if p := e.as("GET", "/v2/payments/"+dPay, nil); p.num("result.refundableAmount") != 0 || p.get("result.isRefundable") != false {
			t.Errorf("failed payment = %s", p.body)
		}
	})
}

func TestCheckoutCallbackPayload(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.checkout(nil)
		p := e.payer()
		p.method(id, "Card")
		p.card(id, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV)
		cbs, _ := e.store.Callbacks(t.Context(), payd.CallbackPending, 10)
		if len(cbs) != 1 {
			t.Fatalf("callbacks = %d", len(cbs))
		}
		cb := cbs[0]
		if cb.Signature != "sha256="+payd.HMACSignature(e.merchant.SignatureKey, cb.Body, cb.Timestamp) {
			t.Errorf("X-Signature does not verify")
		}
		var body map[string]any
		if err := json.Unmarshal(cb.Body, &body); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"checkoutId": id, "terminalId": nil, "amount": 200.0, "currency": "MDL", "payerName": "Ion Popescu", "payerEmail": "Ion@Example.md",
			"payerPhone": "+37377382716", "payerIp": "192.0.2.1", "orderId": "ORD-7", "orderDescription": "Books", "orderDeliveryAmount": 15.0,
			"orderDeliveryCurrency": "MDL", "paymentAmount": 200.0, "paymentCurrency": "MDL", "paymentStatus": "Executed", "senderIban": nil,
			"senderName": "Test Test", "senderCardNumber": "510218******1124", "processingStatus": "OK", "processingStatusCode": "00",
			"threeDsResult": "Y", "threeDsReason": nil, "paymentMethod": "Card",
		}
		for k, v := range want {
			if body[k] != v {
				t.Errorf("%s = %v, want %v", k, body[k], v)
			}
		}
		if len(body) != 28 || body["completedAt"] == nil || len(body["approvalCode"].(string)) != 6 || len(body["retrievalReferenceNumber"].(string)) != 12 {
			t.Errorf("body = %s", cb.Body)
		}
		if strings.Contains(string(cb.Body), payd.ApprovedCard) || strings.Contains(string(cb.Body), `": `) || strings.Contains(string(cb.Body), `, "`) {
			t.Errorf("body has the card number or is not compact: %s", cb.Body)
		}
		if !strings.Contains(string(cb.Body), `"amount":200.00,`) {
			t.Errorf("amount not two decimals: %s", cb.Body)
		}
	})
}

// TestCheckoutCardInProduction: with no card acquirer (production), the
// hosted page offers only MiaQr; choosing Card is refused (400) and the card
// form is not served (404), so the sandbox's test card cannot take money.
func TestCheckoutCardInProduction(t *testing.T) {
	cfg := testConfig()
	cfg.Sandbox = false
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		id := e.checkout(nil)
		p := e.payer()
		status, body, _ := p.open(id)
		if status != 200 || strings.Contains(body, `id="method-card"`) || !strings.Contains(body, `id="method-qr"`) {
			t.Fatalf("production checkout page: %d, card offered or QR missing:\n%s", status, body)
		}
		if status, _, _ := p.method(id, "Card"); status != 400 {
			t.Errorf("method Card in production: %d, want 400", status)
		}
		if status, _, _ := p.card(id, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV); status != 404 {
			t.Errorf("card form in production: %d, want 404", status)
		}
		if s := e.checkoutStatus(id); s == string(payd.CheckoutCompleted) {
			t.Errorf("the test card completed a production checkout")
		}
		if r := e.as("GET", "/v2/payments?count=10&offset=0", nil).wantOK(); r.num("result.totalCount") != 0 {
			t.Errorf("a production card attempt left a payment: %s", r.body)
		}
		// MiaQr still works.
		if status, _, _ := p.method(id, "MiaQr"); status != 303 {
			t.Errorf("method MiaQr in production: %d", status)
		}
	})
}

// TestCheckoutRecordBothCasings: the seed's CompletedAt and payment.PaymentId
// and the real clients' completedAt and payment.paymentId carry the same
// values, in get and list.
func TestCheckoutRecordBothCasings(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.checkout(nil)
		p := e.payer()
		p.open(id)
		p.method(id, "Card")
		if status, _, _ := p.card(id, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV); status != 303 {
			t.Fatalf("card: %d", status)
		}
		for _, rec := range []*resp{e.as("GET", "/v2/checkouts/"+id, nil).wantOK(), e.as("GET", "/v2/checkouts?count=1&offset=0", nil).wantOK()} {
			prefix := "result."
			if rec.get("result.items") != nil {
				prefix = "result.items.0."
			}
			if c := rec.str(prefix + "CompletedAt"); c == "" || rec.str(prefix+"completedAt") != c {
				t.Errorf("CompletedAt %q, completedAt %q", c, rec.str(prefix+"completedAt"))
			}
			if rec.get(prefix+"failedAt") != nil || rec.get(prefix+"cancelledAt") != nil {
				t.Errorf("failedAt/cancelledAt should be null: %s", rec.body)
			}
			if pid := rec.str(prefix + "payment.PaymentId"); pid == "" || rec.str(prefix+"payment.paymentId") != pid {
				t.Errorf("payment.PaymentId %q, payment.paymentId %q", pid, rec.str(prefix+"payment.paymentId"))
			}
		}
	})
}
