package httpapi

import (
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"payd"
)

// browser is a cookie-keeping client that does not follow redirects.
func (e *env) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *env) page(c *http.Client, method, path string, form url.Values, hdr map[string]string) (int, string, http.Header) {
	e.t.Helper()
	var req *http.Request
	if form != nil {
		req, _ = http.NewRequest(method, e.srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, _ = http.NewRequest(method, e.srv.URL+path, nil)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, b.String(), res.Header
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestRTPPage(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(map[string]any{"description": "Pizza <b>Margherita</b>", "amount": 123.4, "redirectUrl": "https://shop.example/thanks"})
		b := e.browser()
		for lang, want := range map[string]string{"ro": "Cerere de plată", "ru": "Запрос на оплату", "en": "Payment request"} {
			status, body, hdr := e.page(b, "GET", "/rtp/"+id+"?lang="+lang, nil, nil)
			if status != 200 || !strings.Contains(body, want) || !strings.Contains(body, "123.40 MDL") || !strings.Contains(body, "Test shop") ||
				!strings.Contains(body, `lang="`+lang+`"`) {
				t.Errorf("%s page: %d\n%s", lang, status, body)
			}
			if !strings.Contains(body, "Pizza &lt;b&gt;Margherita&lt;/b&gt;") {
				t.Error("description not escaped")
			}
			if !strings.Contains(hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'") || hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("security headers: %v", hdr)
			}
		}
		// Accept-Language picks the language when there is no ?lang.
		if _, body, _ := e.page(b, "GET", "/rtp/"+id, nil, map[string]string{"Accept-Language": "ru-RU,ru;q=0.9"}); !strings.Contains(body, "Запрос на оплату") {
			t.Error("Accept-Language ignored")
		}
		if status, _, _ := e.page(b, "GET", "/rtp/01a1fd38-56fa-7f9d-ba9b-1038a64df444", nil, nil); status != 404 {
			t.Errorf("unknown rtp page: %d", status)
		}
		if status, _, _ := e.page(b, "GET", "/rtp/nope", nil, nil); status != 404 {
			t.Errorf("bad id page: %d", status)
		}
		_, body, _ := e.page(b, "GET", "/rtp/"+id+"?lang=en", nil, nil)
		m := csrfRE.FindStringSubmatch(body)
		if m == nil || !strings.Contains(body, `id="accept"`) {
			t.Fatalf("no sandbox buttons:\n%s", body)
		}
		// A cross-site post and a post without the token are refused.
		if status, _, _ := e.page(b, "POST", "/rtp/"+id+"/accept", url.Values{"csrf": {m[1]}}, map[string]string{"Origin": "https://evil.example"}); status != 403 {
			t.Errorf("cross-site post: %d", status)
		}
		if status, _, _ := e.page(e.browser(), "POST", "/rtp/"+id+"/accept", url.Values{"csrf": {m[1]}}, nil); status != 403 {
			t.Errorf("post without the cookie: %d", status)
		}
		if s := e.as("GET", "/v2/rtp/"+id, nil).str("result.status"); s != "Active" {
			t.Fatalf("refused posts changed the RTP: %s", s)
		}
		status, _, hdr := e.page(b, "POST", "/rtp/"+id+"/accept", url.Values{"csrf": {m[1]}}, map[string]string{"Origin": e.srv.URL})
		if status != 303 || hdr.Get("Location") != "https://shop.example/thanks" {
			t.Errorf("accept: %d %s", status, hdr.Get("Location"))
		}
		if s := e.as("GET", "/v2/rtp/"+id, nil).str("result.status"); s != "Accepted" {
			t.Errorf("after the page accepted: %s", s)
		}
		if r := e.as("GET", "/v2/payments?paymentIntentId="+id, nil); r.num("result.totalCount") != 1 {
			t.Errorf("page accept made no payment: %s", r.body)
		}
		if status, body, _ := e.page(b, "POST", "/rtp/"+id+"/reject", url.Values{"csrf": {m[1]}}, nil); status != 409 || strings.Contains(body, `id="accept"`) {
			t.Errorf("reject after accept: %d", status)
		}
		// Reject without a redirect shows the result.
		id2 := e.createRTP(nil)
		status, body, _ = e.page(b, "POST", "/rtp/"+id2+"/reject?lang=en", url.Values{"csrf": {m[1]}}, nil)
		if status != 200 || !strings.Contains(body, "The request was rejected.") {
			t.Errorf("reject page: %d\n%s", status, body)
		}
		if s := e.as("GET", "/v2/rtp/"+id2, nil).str("result.status"); s != string(payd.RTPRejected) {
			t.Errorf("after the page rejected: %s", s)
		}
	})
}

func TestRTPPageInProduction(t *testing.T) {
	cfg := testConfig()
	cfg.Sandbox = false
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		id := e.createRTP(nil)
		b := e.browser()
		status, body, _ := e.page(b, "GET", "/rtp/"+id, nil, nil)
		if status != 200 || strings.Contains(body, `id="accept"`) {
			t.Errorf("production page shows the simulator: %d", status)
		}
		if status, _, _ := e.page(b, "POST", "/rtp/"+id+"/accept", url.Values{}, nil); status != 404 {
			t.Errorf("production simulator post: %d, want 404", status)
		}
	})
}

// TestPagesOfAnInactiveMerchant: a deactivated merchant's pages still show
// the object but refuse every payment action (409), its checkout offers no
// method, and nothing is paid.
func TestPagesOfAnInactiveMerchant(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		rtp := e.createRTP(nil)
		rtp2 := e.createRTP(nil)
		qr := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips"})
		co := e.checkout(nil)
		p := e.payer()
		p.open(co)
		p.method(co, "Card") // chosen while active
		csrf := p.csrf(co)
		if err := e.store.SetMerchantActive(t.Context(), e.creds.MerchantID, false); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/rtp/" + rtp, "/qr/" + qr, "/checkout/" + co} {
			status, body, _ := e.page(p.c, "GET", path, nil, nil)
			if status != 200 || strings.Contains(body, `id="accept"`) || strings.Contains(body, `id="qr-pay-form"`) ||
				strings.Contains(body, `id="method-card"`) || strings.Contains(body, `id="method-qr"`) || strings.Contains(body, `id="card-form"`) {
				t.Errorf("GET %s of an inactive merchant: %d, or it offers a payment action:\n%s", path, status, body)
			}
		}
		posts := []struct {
			path string
			form url.Values
		}{
			{"/rtp/" + rtp + "/accept", url.Values{}},
			{"/rtp/" + rtp2 + "/reject", url.Values{}},
			{"/qr/" + qr + "/pay", url.Values{"amount": {"10.00"}, "payerName": {"P"}, "iban": {payd.TestIBAN}}},
			{"/checkout/" + co + "/method", url.Values{"method": {"MiaQr"}}},
			{"/checkout/" + co + "/card", url.Values{"cardNumber": {payd.ApprovedCard}, "expiry": {payd.ApprovedCardExpiry}, "cvv": {payd.ApprovedCardCVV}, "cardHolder": {"T"}}},
		}
		for _, x := range posts {
			x.form.Set("csrf", csrf)
			if status, _, _ := e.page(p.c, "POST", x.path, x.form, nil); status != 409 {
				t.Errorf("POST %s for an inactive merchant: %d, want 409", x.path, status)
			}
		}
		if err := e.store.SetMerchantActive(t.Context(), e.creds.MerchantID, true); err != nil {
			t.Fatal(err)
		}
		if r := e.as("GET", "/v2/payments?count=10&offset=0", nil).wantOK(); r.num("result.totalCount") != 0 {
			t.Errorf("an inactive merchant was paid: %s", r.body)
		}
		for _, id := range []string{rtp, rtp2} {
			if s := e.as("GET", "/v2/rtp/"+id, nil).str("result.status"); s != "Active" {
				t.Errorf("rtp %s changed while its merchant was inactive: %s", id, s)
			}
		}
	})
}

// TestPayerPagePolish: what a payer sees — line totals and a total row,
// payer-facing state names, the chosen method highlighted, the sandbox's
// test-card hint, expiry times, no scannable code on a paid or cancelled
// QR, and a styled 404 page in the payer's language.
func TestPayerPagePolish(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		co := e.checkout(map[string]any{"amount": 24.63, "language": "en", "orderInfo": map[string]any{"id": "ORD-9", "deliveryAmount": 15, "deliveryCurrency": "MDL",
			"items": []any{map[string]any{"title": "Tea", "amount": 4.5, "quantity": 2, "currency": "MDL"},
				map[string]any{"title": "Cake", "amount": 1.25, "quantity": 0.5, "currency": "MDL"}}}})
		p := e.payer()
		_, body, _ := p.open(co)
		for _, want := range []string{`<td class="line">9.00 MDL</td>`, `<td class="line">0.63 MDL</td>`, `<td class="line">15.00 MDL</td>`,
			`<tr class="total" id="total"><td>Total</td><td></td><td>24.63 MDL</td></tr>`, `data-status="Initialized">Awaiting payment<`} {
			if !strings.Contains(body, want) {
				t.Errorf("checkout page lacks %s:\n%s", want, body)
			}
		}
		if strings.Contains(body, "Opened") || strings.Contains(body, `id="test-cards"`) {
			t.Error("an internal state name, or the card hint before Card was chosen")
		}
		p.method(co, "Card")
		_, body, _ = p.open(co)
		if !strings.Contains(body, `id="method-card" class="chosen" aria-pressed="true"`) || !strings.Contains(body, `id="method-qr" class="secondary"`) {
			t.Errorf("the chosen method is not highlighted:\n%s", body)
		}
		if !strings.Contains(body, `id="test-cards"`) || !strings.Contains(body, "5102 1800 6010 1124") {
			t.Error("no test-card hint in the sandbox card form")
		}
		// Expiry on the RTP and QR pages.
		rtp := e.createRTP(nil)
		_, body, _ = e.page(p.c, "GET", "/rtp/"+rtp+"?lang=en", nil, nil)
		if !strings.Contains(body, `id="expires"`) || !strings.Contains(body, "Valid until") {
			t.Errorf("the RTP page shows no expiry:\n%s", body)
		}
		dyn := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 10, "currency": "MDL", "description": "d", "expiresAt": e.exp(time.Hour)})
		_, body, _ = e.page(p.c, "GET", "/qr/"+dyn+"?lang=en", nil, nil)
		if !strings.Contains(body, `id="expires"`) || !strings.Contains(body, `id="qr-image"`) {
			t.Errorf("an active Dynamic QR page lacks its expiry or code:\n%s", body)
		}
		e.pay(dyn, 10).wantOK()
		if _, body, _ = e.page(p.c, "GET", "/qr/"+dyn, nil, nil); strings.Contains(body, `id="qr-image"`) {
			t.Error("a paid QR still shows a scannable code")
		}
		st := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		e.as("POST", "/v2/instant/qr/"+st+"/cancel", map[string]any{"reason": "closed"}).wantOK()
		if _, body, _ = e.page(p.c, "GET", "/qr/"+st, nil, nil); strings.Contains(body, `id="qr-image"`) {
			t.Error("a cancelled QR still shows a scannable code")
		}
		// Unknown ids: a styled page in the payer's language.
		for path, want := range map[string]string{
			"/checkout/01a1fd38-56fa-7f9d-ba9b-1038a64df444?lang=ru": "Страница не найдена",
			"/rtp/nope?lang=en": "Page not found", "/qr/01a1fd38-56fa-7f9d-ba9b-1038a64df444": "Pagina nu a fost găsită", "/nowhere": "Pagina nu a fost găsită",
		} {
			status, body, hdr := e.page(p.c, "GET", path, nil, nil)
			if status != 404 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(body, want) || !strings.Contains(body, "<style>") {
				t.Errorf("GET %s: %d %s, want a styled page saying %q:\n%s", path, status, hdr.Get("Content-Type"), want, body)
			}
		}
	})
}

// TestPayerPagesLimitedPerAddress: the payer's pages take at most
// PageRateAddr requests a minute from one address (an IPv6 client's /64),
// then answer 429 with Retry-After until the bucket refills; another
// address is served meanwhile, and the API's own limits are apart.
func TestPayerPagesLimitedPerAddress(t *testing.T) {
	cfg := testConfig()
	cfg.PageRateAddr = 5
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		id := e.createRTP(nil)
		b := e.browser()
		from := func(addr string) (int, http.Header) {
			status, _, hdr := e.page(b, "GET", "/rtp/"+id, nil, map[string]string{"X-Forwarded-For": addr})
			return status, hdr
		}
		for i := range 5 {
			if s, _ := from("2001:db8:1:2::1"); s != 200 {
				t.Fatalf("request %d: %d", i, s)
			}
		}
		s, hdr := from("2001:db8:1:2::ffff") // the same /64
		if s != 429 || hdr.Get("Retry-After") == "" {
			t.Errorf("6th request from one /64: %d, Retry-After %q; want 429 with Retry-After", s, hdr.Get("Retry-After"))
		}
		if s, _ := from("2001:db8:1:3::1"); s != 200 {
			t.Errorf("another /64: %d", s)
		}
		e.as("GET", "/v2/rtp/"+id, nil).wantOK()
		e.clock.Advance(time.Minute)
		if s, _ := from("2001:db8:1:2::1"); s != 200 {
			t.Errorf("a minute later: %d", s)
		}
	})
}
