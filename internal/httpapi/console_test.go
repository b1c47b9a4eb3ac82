package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"payd"
)

// consoleSignIn signs c in to the console with the given credentials and
// returns the sign-in answer's status and the session's form token.
func (e *env) consoleSignIn(c *http.Client, clientID, secret string) (int, string, http.Header) {
	e.t.Helper()
	_, body, _ := e.page(c, "GET", "/console/signin", nil, nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no csrf on the sign-in form:\n%s", body)
	}
	st, _, hdr := e.page(c, "POST", "/console/signin", url.Values{"csrf": {m[1]}, "clientId": {clientID}, "clientSecret": {secret}}, nil)
	if st != http.StatusSeeOther {
		return st, "", hdr
	}
	_, body, _ = e.page(c, "GET", "/console", nil, nil)
	if m = csrfRE.FindStringSubmatch(body); m == nil {
		e.t.Fatalf("no csrf on the overview:\n%s", body)
	}
	return st, m[1], hdr
}

// TestConsoleSessions: the session cookie's attributes, CSRF on every
// form, another merchant's objects answer 404, sign out ends the session,
// sign-in shares the token endpoint's limits, and production shows no
// sandbox action.
func TestConsoleSessions(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		if st, _, hdr := e.page(e.browser(), "GET", "/", nil, nil); st != http.StatusSeeOther || hdr.Get("Location") != "/console" {
			t.Errorf("GET /: %d %s", st, hdr.Get("Location"))
		}
		if st, _, hdr := e.page(e.browser(), "GET", "/console/rtp", nil, nil); st != http.StatusSeeOther || hdr.Get("Location") != "/console/signin" {
			t.Errorf("signed out: %d %s", st, hdr.Get("Location"))
		}
		c := e.browser()
		if st, _, _ := e.consoleSignIn(c, e.creds.ClientID, "wrong"); st != http.StatusUnauthorized {
			t.Errorf("wrong secret: %d", st)
		}
		st, csrf, hdr := e.consoleSignIn(c, e.creds.ClientID, e.creds.ClientSecret)
		if st != http.StatusSeeOther {
			t.Fatalf("sign in: %d", st)
		}
		var cookie string
		for _, v := range hdr.Values("Set-Cookie") {
			if strings.HasPrefix(v, "payd_console=") {
				cookie = v
			}
		}
		if !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || !strings.Contains(cookie, "Path=/console") {
			t.Errorf("session cookie: %q", cookie)
		}
		session := strings.TrimPrefix(strings.SplitN(cookie, ";", 2)[0], "payd_console=")
		if strings.Contains(e.dbText(), session) {
			t.Error("the session token is stored in plain text")
		}
		// The session cookie is no API token.
		e.call("GET", "/v2/rtp", nil, session).wantError(401, payd.CodeUnauthorized)
		// The sign-in form's token is the server's: a token the server did
		// not issue, matched by a cookie an attacker set, does not pass.
		forged := e.browser()
		e.page(forged, "GET", "/console/signin", nil, nil)
		u, _ := url.Parse(e.srv.URL + "/console")
		forged.Jar.SetCookies(u, []*http.Cookie{{Name: "payd_console_signin", Value: "0123456789abcdef", Path: "/console"}})
		if st, _, _ := e.page(forged, "POST", "/console/signin", url.Values{"csrf": {"0123456789abcdef"}, "clientId": {e.creds.ClientID},
			"clientSecret": {e.creds.ClientSecret}}, nil); st != http.StatusForbidden {
			t.Errorf("sign-in with a cookie-matched token the server never issued: %d, want 403", st)
		}
		rtp := e.createRTP(nil)
		if st, body, hdr := e.page(c, "GET", "/console/rtp/"+rtp, nil, nil); st != 200 || !strings.Contains(body, `id="action-accept"`) ||
			!strings.Contains(hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("RTP page: %d %v", st, hdr)
		}
		// A form without its token, or posted cross-site, changes nothing.
		for _, post := range []struct {
			form url.Values
			hdr  map[string]string
		}{{url.Values{}, nil}, {url.Values{"csrf": {"0123456789abcdef0123456789abcdef"}}, nil},
			{url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{url.Values{"csrf": {csrf}}, map[string]string{"Origin": "https://evil.example"}}} {
			if st, _, _ := e.page(c, "POST", "/console/rtp/"+rtp+"/accept", post.form, post.hdr); st != http.StatusForbidden {
				t.Errorf("accept with %v %v: %d", post.form, post.hdr, st)
			}
		}
		if s := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.status"); s != "Active" {
			t.Fatalf("a refused form changed the RTP: %s", s)
		}
		if st, _, _ := e.page(c, "POST", "/console/rtp/"+rtp+"/accept", url.Values{"csrf": {csrf}}, nil); st != http.StatusSeeOther {
			t.Errorf("accept: %d", st)
		}
		if s := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.status"); s != "Accepted" {
			t.Errorf("after the console's accept: %s", s)
		}
		// A checkout paid by the test card through the hosted page, another by QR, a payment refunded.
		for action, co := range map[string]string{"paycard": e.checkout(nil), "payqr": e.checkout(nil)} {
			if st, _, _ := e.page(c, "POST", "/console/checkouts/"+co+"/"+action, url.Values{"csrf": {csrf}}, nil); st != http.StatusSeeOther {
				t.Errorf("%s: %d", action, st)
			}
			r := e.as("GET", "/v2/checkouts/"+co, nil).wantOK()
			if r.str("result.status") != "Completed" {
				t.Errorf("after the console's %s: %s", action, r.body)
			}
			payID := r.str("result.payment.paymentId")
			if st, _, _ := e.page(c, "POST", "/console/payments/"+payID+"/refund", url.Values{"csrf": {csrf}, "amount": {"1.00"}, "reason": {"console"}}, nil); st != http.StatusSeeOther {
				t.Errorf("refund: %d", st)
			}
			if v := e.as("GET", "/v2/payments/"+payID, nil).wantOK().num("result.requestedRefundAmount"); v != 1 {
				t.Errorf("after the console's refund of %s: requested %v", payID, v)
			}
		}
		// A QR paid as a payer, with the amount and name typed in.
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "tips"})
		if st, _, _ := e.page(c, "POST", "/console/qr/"+static+"/pay", url.Values{"csrf": {csrf}, "amount": {"7.25"}, "payerName": {"Ana"}}, nil); st != http.StatusSeeOther {
			t.Errorf("pay QR: %d", st)
		}
		if r := e.as("GET", "/v2/payments?paymentIntentId="+static, nil).wantOK(); r.num("result.totalCount") != 1 ||
			r.num("result.items.0.amount") != 7.25 || r.str("result.items.0.senderName") != "Ana" {
			t.Errorf("the console's QR payment: %s", r.body)
		}
		// Another merchant's console: 404 on A's objects, none in its lists.
		_, credsB, _ := e.newMerchant(0)
		cb := e.browser()
		_, csrfB, _ := e.consoleSignIn(cb, credsB.ClientID, credsB.ClientSecret)
		for _, path := range []string{"/console/rtp/" + rtp, "/console/find/" + rtp} {
			if st, _, _ := e.page(cb, "GET", path, nil, nil); st != http.StatusNotFound {
				t.Errorf("merchant B GET %s: %d", path, st)
			}
		}
		if st, _, _ := e.page(cb, "POST", "/console/rtp/"+rtp+"/reject", url.Values{"csrf": {csrfB}}, nil); st != http.StatusNotFound {
			t.Errorf("merchant B reject: %d", st)
		}
		if _, body, _ := e.page(cb, "GET", "/console/rtp", nil, nil); strings.Contains(body, rtp) {
			t.Error("merchant B's list shows A's RTP")
		}
		if s := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.status"); s != "Accepted" {
			t.Errorf("merchant B changed A's RTP: %s", s)
		}
		// A filter the API refuses shows the API's message.
		if st, body, _ := e.page(c, "GET", "/console/rtp?createdAtFrom=yesterday", nil, nil); st != http.StatusBadRequest || !strings.Contains(body, "createdAtFrom") {
			t.Errorf("bad filter: %d", st)
		}
		// Sign out ends the session's token.
		if st, _, _ := e.page(c, "POST", "/console/signout", url.Values{"csrf": {csrf}}, nil); st != http.StatusSeeOther {
			t.Errorf("sign out: %d", st)
		}
		if st, _, hdr := e.page(c, "GET", "/console", nil, nil); st != http.StatusSeeOther || hdr.Get("Location") != "/console/signin" {
			t.Errorf("after sign out: %d", st)
		}
	})
	// The token endpoint's limits hold for the console's form: 20 a minute per clientId and address.
	limited := testConfig()
	limited.TokenRateClient, limited.TokenRateAddr = 20, 60
	forEachEngine(t, limited, func(t *testing.T, e *env) {
		c := e.browser()
		var last int
		for range 21 {
			last, _, _ = e.consoleSignIn(c, e.creds.ClientID, "wrong")
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("the 21st sign-in for one clientId and address: %d", last)
		}
	})
	prod := testConfig()
	prod.Sandbox = false
	forEachEngine(t, prod, func(t *testing.T, e *env) {
		c := e.browser()
		if _, csrf, _ := e.consoleSignIn(c, e.creds.ClientID, e.creds.ClientSecret); csrf == "" {
			t.Fatal("no session in production")
		}
		rtp := e.createRTP(nil)
		st, body, _ := e.page(c, "GET", "/console/rtp/"+rtp, nil, nil)
		if st != 200 || strings.Contains(body, "action-accept") || strings.Contains(body, "clock-31d") || strings.Contains(body, "Sandbox:") {
			t.Errorf("production RTP page offers sandbox actions: %d", st)
		}
	})
}

// TestConsoleExportsNeutraliseFormulas: text from outside (a description,
// an orderId, a refund reason) that a spreadsheet would run as a formula
// is written as text in every CSV download; amounts stay numbers.
func TestConsoleExportsNeutraliseFormulas(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(map[string]any{"orderId": "+1+2"})
		pay := e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		e.as("POST", "/v2/payments/"+pay+"/refund", map[string]any{"reason": "@SUM(1)"}).wantOK()
		c := e.browser()
		if st, _, _ := e.consoleSignIn(c, e.creds.ClientID, e.creds.ClientSecret); st != http.StatusSeeOther {
			t.Fatalf("sign in: %d", st)
		}
		for _, path := range []string{"/console/export/payments.csv", "/console/export/refunds.csv"} {
			st, body, _ := e.page(c, "GET", path, nil, nil)
			if st != 200 {
				t.Fatalf("%s: %d", path, st)
			}
			for _, line := range strings.Split(body, "\n") {
				for _, cell := range strings.Split(line, ",") {
					cell = strings.TrimPrefix(cell, `"`)
					if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) {
						t.Errorf("%s: a cell a spreadsheet would run: %q", path, cell)
					}
				}
			}
			if path == "/console/export/payments.csv" && (!strings.Contains(body, ",'+1+2,") || !strings.Contains(body, ",50.50,")) {
				t.Errorf("%s: the orderId is not kept as text, or the amount changed:\n%s", path, body)
			}
			if path == "/console/export/refunds.csv" && (!strings.Contains(body, "'@SUM(1)") || !strings.Contains(body, ",50.50,")) {
				t.Errorf("%s: the reason or the amount:\n%s", path, body)
			}
		}
	})
}

// TestOperatorSessions: the operator's token is checked once at the
// console's sign-in and never kept: the cookie holds a session token (not
// the operator's, stored only hashed) that the API takes from the console
// alone; sign out ends it. Wrong operator tokens are limited per address:
// past FailedOperatorAttempts a minute they answer 429, the right one
// still passes.
func TestOperatorSessions(t *testing.T) {
	cfg := testConfig()
	cfg.OperatorToken = "operator-token-0123456789-abcdefghij"
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		c := e.browser()
		st, _, hdr := e.page(c, "POST", "/console/operator", url.Values{"token": {cfg.OperatorToken}}, nil)
		if st != http.StatusSeeOther {
			t.Fatalf("operator sign-in: %d", st)
		}
		var session, cookie string
		for _, v := range hdr.Values("Set-Cookie") {
			if strings.HasPrefix(v, "payd_console_operator=") {
				cookie = v
				session = strings.TrimPrefix(strings.SplitN(v, ";", 2)[0], "payd_console_operator=")
			}
		}
		if session == "" || strings.Contains(cookie, cfg.OperatorToken) || !strings.HasPrefix(session, "console.operator.") ||
			!strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "Path=/console/operator") {
			t.Fatalf("operator cookie %q", cookie)
		}
		if txt := e.dbText(); strings.Contains(txt, session) || strings.Contains(txt, cfg.OperatorToken) {
			t.Error("the operator's session or token is stored in plain text")
		}
		st, body, _ := e.page(c, "GET", "/console/operator", nil, nil)
		if st != 200 || !strings.Contains(body, `id="recon-counts"`) || !strings.Contains(body, `id="operator-signout"`) {
			t.Fatalf("operator page: %d\n%s", st, body)
		}
		// The session is no bearer token for the API.
		e.call("GET", "/v2/reports/reconciliation?date=2026-03-01", nil, session).wantError(401, payd.CodeUnauthorized)
		m := csrfRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no csrf on the operator page")
		}
		if st, _, _ := e.page(c, "POST", "/console/operator/signout", url.Values{"csrf": {"forged"}}, nil); st != http.StatusForbidden {
			t.Errorf("sign out with a forged form token: %d", st)
		}
		if st, _, _ := e.page(c, "POST", "/console/operator/signout", url.Values{"csrf": {m[1]}}, nil); st != http.StatusSeeOther {
			t.Errorf("sign out: %d", st)
		}
		// The old session opens nothing, even replayed by hand.
		replay := e.browser()
		u, _ := url.Parse(e.srv.URL + "/console/operator")
		replay.Jar.SetCookies(u, []*http.Cookie{{Name: "payd_console_operator", Value: session, Path: "/console/operator"}})
		if _, body, _ := e.page(replay, "GET", "/console/operator", nil, nil); strings.Contains(body, `id="recon-counts"`) {
			t.Error("a signed-out session still opens the report")
		}
		// Guessing: 10 wrong tokens a minute from one address, then 429.
		for i := range FailedOperatorAttempts {
			e.call("GET", "/v2/reports/reconciliation?date=2026-03-01", nil, fmt.Sprintf("wrong-operator-token-%02d-0123456789abc", i)).
				wantError(401, payd.CodeUnauthorized)
		}
		e.call("GET", "/v2/reports/reconciliation?date=2026-03-01", nil, "wrong-operator-token-xx-0123456789abc").wantError(429, payd.CodeRateLimited)
		e.call("GET", "/v2/reports/reconciliation?date=2026-03-01", nil, cfg.OperatorToken).wantOK()
		if st, _, _ := e.page(e.browser(), "POST", "/console/operator", url.Values{"token": {"wrong-operator-token-yy-0123456789abc"}}, nil); st != http.StatusTooManyRequests {
			t.Errorf("console sign-in past the limit: %d, want 429", st)
		}
		e.clock.Advance(time.Minute)
		e.call("GET", "/v2/reports/reconciliation?date=2026-03-01", nil, "wrong-operator-token-zz-0123456789abc").wantError(401, payd.CodeUnauthorized)
	})
}
