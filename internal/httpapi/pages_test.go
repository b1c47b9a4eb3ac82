package httpapi

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

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

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

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
