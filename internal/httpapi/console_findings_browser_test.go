package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserConsoleShowsWhatIs walks the console in a real browser for
// what a newcomer found wrong: a refusal is an error, not the success
// banner; short ids differ where the ids do; the checkouts list shows
// their order id and payer; filters are labelled in words and take a plain
// date; a Static QR paid twice is Active, not Waiting; the test clock has
// its unit and a reset, and the counts are current right after it moves;
// on a phone the search button fits on the screen.
func TestBrowserConsoleShowsWhatIs(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		ctx := browserCtx(t)
		do, text, attr := tab{t, ctx}.do, tab{t, ctx}.text, tab{t, ctx}.attr
		// Two RTPs made in the same millisecond: their ids share their start.
		a := e.createRTP(map[string]any{"orderId": "SAME-MS-A", "expiresAt": e.exp(time.Hour)})
		b := e.createRTP(map[string]any{"orderId": "SAME-MS-B", "expiresAt": e.exp(time.Hour)})
		co := e.as("POST", "/v2/checkouts", map[string]any{"amount": 99.50, "currency": "MDL", "language": "en",
			"orderInfo": map[string]any{"id": "ORDER-9", "description": "Tea"}, "payerInfo": map[string]any{"name": "Ion Rusu"}}).wantOK().str("result.checkoutId")
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips"})
		e.pay(static, 10).wantOK()
		e.pay(static, 20).wantOK()
		pay := e.as("POST", "/v2/rtp/"+a+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		e.as("POST", "/v2/payments/"+pay+"/refund", map[string]any{"reason": "once"}).wantOK()

		do(chromedp.Navigate(e.srv.URL+"/console/signin?lang=en"), chromedp.WaitVisible(chromedp.ID("clientId")),
			chromedp.SendKeys(chromedp.ID("clientId"), e.creds.ClientID), chromedp.SendKeys(chromedp.ID("clientSecret"), e.creds.ClientSecret),
			chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("count-rtp")))

		// Short ids: the distinguishing end, which differs.
		do(chromedp.Navigate(e.srv.URL+"/console/rtp"), chromedp.WaitVisible(chromedp.ID("list")))
		shortA, shortB := text(`#list a[href="/console/rtp/`+a+`"]`), text(`#list a[href="/console/rtp/`+b+`"]`)
		if shortA == shortB || !strings.HasSuffix(a, strings.TrimPrefix(shortA, "…")) || !strings.HasSuffix(b, strings.TrimPrefix(shortB, "…")) {
			t.Errorf("short ids %q and %q of %s and %s", shortA, shortB, a, b)
		}
		// Filters in words; a plain date is taken.
		if got := text(`label[for="f-orderId"]`); got != "Order ID" {
			t.Errorf("the orderId filter is labelled %q", got)
		}
		if typ := attr("#f-createdAtFrom", "type"); typ != "date" {
			t.Errorf("the createdAtFrom filter is a %q input, want a date", typ)
		}
		today := e.clock.Now().UTC().Format(time.DateOnly)
		do(chromedp.Navigate(e.srv.URL+"/console/rtp?createdAtFrom="+today+"&createdAtTo="+today), chromedp.WaitVisible(chromedp.ID("list")))
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#list tbody a").length`)); err != nil || n != 2 ||
			strings.Contains(text("main"), "must be") {
			t.Errorf("a plain date filter: %d rows (%v), page %q", n, err, text("main"))
		}
		// The checkouts list shows the order id and the payer.
		do(chromedp.Navigate(e.srv.URL+"/console/checkouts"), chromedp.WaitVisible(chromedp.ID("list")))
		if row := text(`#list tbody tr`); !strings.Contains(row, "ORDER-9") || !strings.Contains(row, "Ion Rusu") {
			t.Errorf("checkout %s's row: %q", co, row)
		}
		// A Static QR paid twice takes payments: Active, not Waiting.
		do(chromedp.Navigate(e.srv.URL+"/console/qr/"+static), chromedp.WaitVisible(chromedp.ID("status")))
		if got := text("#status .badge"); got != "Active" || !strings.Contains(attr("#status .badge", "class"), "b-ok") {
			t.Errorf("a Static QR paid twice is badged %q (%s)", got, attr("#status .badge", "class"))
		}
		// A refusal is an error, never the success banner.
		do(chromedp.Navigate(e.srv.URL+"/console/qr/"+static), chromedp.WaitVisible(chromedp.ID("action-pay")),
			chromedp.SetValue(chromedp.ID("a-amount"), "0"), chromedp.Click(chromedp.ID("action-pay")),
			chromedp.WaitVisible(chromedp.ID("flash")))
		if cls := attr("#flash", "class"); cls != "error" || attr("#flash", "role") != "alert" {
			t.Errorf("a refused payment shows %q in a %q banner", text("#flash"), cls)
		}
		// The clock: its unit, then counts current right after it moves, then its reset.
		do(chromedp.Navigate(e.srv.URL+"/console"), chromedp.WaitVisible(chromedp.ID("clock-unit")))
		if got := text("#clock-unit"); got != "seconds" {
			t.Errorf("the clock box's unit: %q", got)
		}
		do(chromedp.Click(chromedp.ID("clock-1d")), chromedp.WaitVisible(chromedp.ID("clock-reset")), chromedp.WaitVisible(chromedp.ID("flash")))
		if got := text(`#count-rtp .count[data-status="Expired"]`); got != "1" {
			t.Errorf("right after the clock moved a day the overview counts %q expired RTPs, want 1 (the open one expired)", got)
		}
		if cls := attr("#flash", "class"); cls != "ok" {
			t.Errorf("the clock's success shows in a %q banner", cls)
		}
		do(chromedp.Click(chromedp.ID("clock-reset")), chromedp.WaitNotPresent(chromedp.ID("clock-reset")), chromedp.WaitVisible(chromedp.ID("flash")))
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#clock-offset, #clock-reset").length`)); err != nil || n != 0 {
			t.Errorf("after the reset the clock still shows an offset or a reset (%d, %v)", n, err)
		}
		// On a phone the search button fits.
		do(chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(2)), chromedp.Navigate(e.srv.URL+"/console"), chromedp.WaitVisible(chromedp.ID("search")))
		if fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const r = document.getElementById("search").getBoundingClientRect();
			return r.left >= 0 && r.right <= document.documentElement.clientWidth })()`)); err != nil || !fits {
			t.Errorf("on a 360 px screen the search button is cut off (%v)", err)
		}
	})
}
