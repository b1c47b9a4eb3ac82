package httpapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"payd/internal/webhook"
	"payd/internal/worker"
)

// axeSource is axe-core's script (npm package axe-core): PAYD_AXE_JS, or
// node_modules here or in npm's global root. "" when none is installed.
func axeSource(t *testing.T) string {
	paths := []string{os.Getenv("PAYD_AXE_JS"), "node_modules/axe-core/axe.min.js", "../../node_modules/axe-core/axe.min.js"}
	if out, err := exec.Command("npm", "root", "-g").Output(); err == nil {
		paths = append(paths, filepath.Join(strings.TrimSpace(string(out)), "axe-core", "axe.min.js"))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("axe-core is required under CI (.ci/run installs it and sets PAYD_AXE_JS)")
	}
	t.Log("axe-core is not installed (npm install axe-core; or PAYD_AXE_JS): pages are not checked for accessibility")
	return ""
}

// TestBrowserConsole walks the console in a real browser on both engines:
// sign in; the overview with its figures and chart; search by order id
// and by id; a filter; an RTP accepted as the payer, with its timeline and
// callback (resent); a checkout with its order, payer and payment; a
// payment's refund form; the CSV export downloaded and parsed; the
// settlement; the operator's reconciliation; the pages in ro and ru; the
// test clock; sign out. axe-core finds no serious or critical violation
// on any page.
func TestBrowserConsole(t *testing.T) {
	cfg := testConfig()
	cfg.OperatorToken = "operator-token-0123456789-abcdefghij"
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		ctx := browserCtx(t)
		axe := axeSource(t)
		rcv := &logReceiver{}
		hooks := httptest.NewServer(rcv)
		defer hooks.Close()
		deliveries := func() int { rcv.mu.Lock(); defer rcv.mu.Unlock(); return len(rcv.got) }
		// The delivery worker, as payd runs it.
		d := &worker.Delivery{Store: e.store, Client: webhook.NewClient(true), Clock: e.clock, Owner: "console",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jitter: func() float64 { return 0 }, Clocked: true}
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() {
			for wctx.Err() == nil {
				d.RunOnce(wctx)
				time.Sleep(30 * time.Millisecond)
			}
		}()
		wait := func(what string, cond func() bool) {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("waited 10 s for %s", what)
				}
			}
		}
		do, text, attr := tab{t, ctx}.do, tab{t, ctx}.text, tab{t, ctx}.attr
		checked := 0
		accessible := func(page string) {
			t.Helper()
			if axe == "" {
				return
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](axe)); err != nil {
				t.Fatalf("inject axe-core: %v", err)
			}
			out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21aa"]}})
				.then(r => JSON.stringify(r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
				.map(v => v.id + " (" + v.impact + "): " + v.nodes.map(n => n.target.join(" ")).slice(0, 5).join(", "))))`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("axe on %s: %v", page, err)
			}
			var bad []string
			json.Unmarshal([]byte(out), &bad)
			for _, v := range bad {
				t.Errorf("%s: %s", page, v)
			}
			checked++
		}
		shot := func(name string) {
			t.Helper()
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if dark := inkShare(t, png); dark < 0.005 {
				t.Errorf("%s screenshot is blank (%.4f of pixels inked)", name, dark)
			}
			if dir := os.Getenv("PAYD_SCREENSHOTS"); dir != "" {
				os.WriteFile(dir+"/console-"+name+".png", png, 0o644)
			}
		}
		rtp := e.createRTP(map[string]any{"orderId": "CONSOLE-1", "description": "Two coffees", "callbackUrl": hooks.URL + "/cb"})
		e.clock.Advance(time.Second)
		e.createRTP(map[string]any{"orderId": "OTHER-2", "description": "Not this one"})
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips jar"})
		co := e.as("POST", "/v2/checkouts", map[string]any{"amount": 1249.90, "currency": "MDL", "language": "en",
			"orderInfo": map[string]any{"id": "ORDER-77", "description": "Books", "items": []any{
				map[string]any{"title": "Atlas", "amount": 600, "quantity": 2}, map[string]any{"title": "Map", "amount": 49.90, "quantity": 1}}},
			"payerInfo": map[string]any{"name": "Ana Popescu", "email": "ana@example.md"}}).wantOK().str("result.checkoutId")

		// Sign in: the root leads to the console, the console to its form.
		do(chromedp.Navigate(e.srv.URL+"/?lang=en"), chromedp.WaitVisible(chromedp.ID("clientId")))
		accessible("sign-in")
		do(chromedp.SendKeys(chromedp.ID("clientId"), e.creds.ClientID), chromedp.SendKeys(chromedp.ID("clientSecret"), "wrong"),
			chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("signin-error")))
		do(chromedp.SendKeys(chromedp.ID("clientSecret"), e.creds.ClientSecret), chromedp.Click(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("count-rtp")))
		if got := text(`#count-rtp .count[data-status="Active"]`); got != "2" {
			t.Errorf("overview: Active RTPs %q", got)
		}
		if name, mode := text("#merchant-name"), text("#mode"); name != "Test shop" || !strings.EqualFold(mode, "Sandbox") {
			t.Errorf("who and where: %q, %q", name, mode)
		}
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#chart rect").length`)); err != nil || n != 30 {
			t.Errorf("the chart has %d bars (%v), want 30", n, err)
		}
		accessible("overview")

		// Search: by order id, then by id straight to the page.
		do(chromedp.SendKeys(chromedp.ID("q"), "CONSOLE-1"), chromedp.Click(chromedp.ID("search")), chromedp.WaitVisible(chromedp.ID("results-rtp")))
		if got := text("#results-rtp tbody"); !strings.Contains(got, "Two coffees") || strings.Contains(got, "Not this one") {
			t.Errorf("search by order id: %q", got)
		}
		accessible("search")
		do(chromedp.Navigate(e.srv.URL+"/console/search?q="+static), chromedp.WaitVisible(chromedp.ID("object-id")))
		if got := text("#object-id"); got != static {
			t.Errorf("search by id led to %q", got)
		}

		// A filtered list, newest first, and the RTP accepted as the payer.
		do(chromedp.Navigate(e.srv.URL+"/console/rtp"), chromedp.WaitVisible(chromedp.ID("f-orderId")))
		if first := attr(`#list tbody tr:first-child a`, "href"); strings.Contains(first, rtp) {
			t.Errorf("the list is not newest first: %s", first)
		}
		accessible("rtp list")
		do(chromedp.SendKeys(chromedp.ID("f-orderId"), "CONSOLE-1"), chromedp.Click(chromedp.ID("filter")))
		wait("the filtered list", func() bool {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			return err == nil && strings.Contains(loc, "orderId=CONSOLE-1")
		})
		do(chromedp.WaitVisible(chromedp.CSS(`#list a[href="/console/rtp/` + rtp + `"]`)))
		if got := text("#total"); got != "1–1 of 1" {
			t.Errorf("filtered list: %q", got)
		}
		do(chromedp.Click(chromedp.CSS(`#list a[href="/console/rtp/`+rtp+`"]`)), chromedp.WaitVisible(chromedp.ID("action-accept")),
			chromedp.Click(chromedp.ID("action-accept")), chromedp.WaitVisible(chromedp.ID("flash")))
		if got := attr("#status .badge", "data-status"); got != "Accepted" {
			t.Errorf("after accepting: %q (%s)", got, text("#flash"))
		}
		wait("the callback", func() bool { return deliveries() == 1 })
		wait("the attempt to be recorded", func() bool {
			var n int
			e.db().QueryRow("SELECT COUNT(*) FROM callback_attempts").Scan(&n)
			return n == 1
		})
		do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("timeline")))
		tl := text("#timeline")
		for _, want := range []string{"Payment · MDL\u00a050.50", "RTP · MDL\u00a050.50: Waiting → Paid by the payer", "Attempt 1 · 200"} {
			if !strings.Contains(tl, want) {
				t.Errorf("timeline lacks %q:\n%s", want, tl)
			}
		}
		if got := text(`#fields dd[data-key="amount"]`); got != "MDL\u00a050.50" {
			t.Errorf("amount shown as %q", got)
		}
		accessible("rtp")
		shot("rtp")

		// The callback page: the attempt with its answer; resend it.
		do(chromedp.Click(chromedp.CSS(`#timeline a[href^="/console/callbacks/"]`)), chromedp.WaitVisible(chromedp.ID("resend")))
		if st, att := attr("#state", "data-status"), text("#attempts tbody"); st != "Delivered" || !strings.Contains(att, "200") || !strings.Contains(att, "thanks") {
			t.Errorf("callback page: state %q, attempts %q", st, att)
		}
		accessible("callback")
		do(chromedp.Click(chromedp.ID("resend")), chromedp.WaitVisible(chromedp.ID("flash")))
		wait("the resent callback", func() bool { return deliveries() == 2 })
		rcv.mu.Lock()
		first, second := rcv.got[0], rcv.got[1]
		sameBody := rcv.bodies[0] == rcv.bodies[1]
		rcv.mu.Unlock()
		if first.Get("X-Callback-Id") != second.Get("X-Callback-Id") || !sameBody {
			t.Errorf("the resend is not the same callback: %v / %v", first, second)
		}
		wait("the second attempt to be recorded", func() bool {
			var n int
			e.db().QueryRow("SELECT COUNT(*) FROM callback_attempts").Scan(&n)
			return n == 2
		})
		do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("attempts")))
		if n := text("#attempt-count"); n != "2" {
			t.Errorf("attempts after the resend: %s", n)
		}
		shot("callback")

		// A checkout: its order lines, payer and payment, paid with the test card.
		do(chromedp.Navigate(e.srv.URL+"/console/checkouts/"+co), chromedp.WaitVisible(chromedp.ID("action-paycard")),
			chromedp.Click(chromedp.ID("action-paycard")), chromedp.WaitVisible(chromedp.ID("flash")), chromedp.WaitVisible(chromedp.ID("payments")))
		if st := attr("#status .badge", "data-status"); st != "Completed" {
			t.Errorf("checkout after paying: %s (%s)", st, text("#flash"))
		}
		if lines, total := text("#order-lines tbody"), text("#order-total"); !strings.Contains(lines, "Atlas") || !strings.Contains(lines, "MDL\u00a01,200.00") ||
			total != "MDL\u00a01,249.90" {
			t.Errorf("order lines %q, total %q", lines, total)
		}
		if p := text("#payer"); !strings.Contains(p, "Ana Popescu") {
			t.Errorf("payer: %q", p)
		}
		accessible("checkout")
		shot("checkout")
		do(chromedp.Click(chromedp.CSS(`#payments a`)), chromedp.WaitVisible(chromedp.ID("action-refund")))
		if note := text("#note-payments"); !strings.Contains(note, "Refundable: MDL\u00a01,249.90") {
			t.Errorf("refund form: %q", note)
		}
		accessible("payment")
		do(chromedp.SetValue(chromedp.ID("a-amount"), "49.90"), chromedp.Click(chromedp.ID("action-refund")), chromedp.WaitVisible(chromedp.ID("flash")))

		// The CSV export, as the browser downloads it.
		do(chromedp.Navigate(e.srv.URL+"/console/export"), chromedp.WaitVisible(chromedp.ID("download-payments")))
		accessible("export")
		day := e.clock.Now().In(time.UTC).Format(time.DateOnly)
		// The download, with the browser's session (the console's CSP lets
		// no script fetch, so the test takes the browser's cookies).
		cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{e.srv.URL + "/console/export/payments.csv"}})
		if err != nil {
			t.Fatal(err)
		}
		download := func(path string) string {
			t.Helper()
			req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
			for _, c := range cookies.Cookies {
				req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
				!strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
				t.Fatalf("%s: %d %s", path, res.StatusCode, b)
			}
			return string(b)
		}
		for _, what := range []string{"payments", "refunds"} {
			href := attr("#export-"+what, "action")
			body := download(href + "?from=" + day + "&to=" + day)
			rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || len(rows) != 3 && what == "payments" || len(rows) != 2 && what == "refunds" {
				t.Fatalf("%s CSV: %v\n%s", what, err, body)
			}
			if what == "payments" && (rows[0][0] != "paymentId" || !strings.Contains(strings.Join(rows[0], ","), "executedAt")) {
				t.Errorf("payments CSV header: %v", rows[0])
			}
			if what == "refunds" && (rows[1][4] != "49.90" || rows[0][0] != "id") {
				t.Errorf("refunds CSV: %v", rows)
			}
		}

		// The settlement of the day.
		do(chromedp.Navigate(e.srv.URL+"/console/settlement"), chromedp.WaitVisible(chromedp.ID("settlement")))
		if net := text("#net-MDL"); net != "MDL\u00a01,300.40" {
			t.Errorf("settlement net: %q", net)
		}
		accessible("settlement")

		// Romanian and Russian.
		do(chromedp.Navigate(e.srv.URL+"/console?lang=ro"), chromedp.WaitVisible(chromedp.ID("count-rtp")))
		if h, v := text("h1"), text("#stats-today"); h != "Prezentare" || !strings.Contains(v, "1\u00a0300,40\u00a0MDL") {
			t.Errorf("ro overview: %q, %q", h, v)
		}
		accessible("overview (ro)")
		shot("overview-ro")
		do(chromedp.Navigate(e.srv.URL+"/console/payments?lang=ru"), chromedp.WaitVisible(chromedp.ID("list")))
		if h, body := text("h1"), text("#list"); h != "Платежи" || !strings.Contains(body, "1\u00a0249,90\u00a0MDL") {
			t.Errorf("ru payments: %q, %q", h, body)
		}
		accessible("payments (ru)")
		do(chromedp.Navigate(e.srv.URL+"/console?lang=en"), chromedp.WaitVisible(chromedp.ID("count-rtp")))
		shot("overview")

		// The operator's reconciliation of a day the bank closed: its lines,
		// one explained, a match run again, the CSV.
		reconDate, reconPay := reconDay(t, e)
		do(chromedp.Navigate(e.srv.URL+"/console/operator"), chromedp.WaitVisible(chromedp.ID("token")))
		accessible("operator sign-in")
		do(chromedp.SendKeys(chromedp.ID("token"), cfg.OperatorToken), chromedp.Click(chromedp.ID("operator-signin")),
			chromedp.WaitVisible(chromedp.ID("recon-counts")))
		do(chromedp.Navigate(e.srv.URL+"/console/operator?from="+reconDate+"&to="+reconDate), chromedp.WaitVisible(chromedp.ID("recon-lines")))
		accessible("reconciliation")
		if got := text(`#recon-lines tr[data-outcome="matched"]`); !strings.Contains(got, reconPay.ID[len(reconPay.ID)-8:]) || !strings.Contains(got, "15.00") {
			t.Errorf("the matched line: %q", got)
		}
		if got := text("#recon-totals"); !strings.Contains(got, "42.00") {
			t.Errorf("totals: %q", got)
		}
		do(chromedp.SendKeys(chromedp.CSS(`tr[data-outcome="missing_in_payd"] input[name=note]`), "a cash deposit at the branch"),
			chromedp.Click(chromedp.CSS(`tr[data-outcome="missing_in_payd"] form.explain button`)), chromedp.WaitVisible(chromedp.ID("flash")))
		if got := text(`tr[data-outcome="missing_in_payd"] .explained`); !strings.Contains(got, "a cash deposit at the branch") || text("#flash") != "The line is explained." {
			t.Errorf("explained: %q, flash %q", got, text("#flash"))
		}
		if got := attr("#from", "value"); got != reconDate {
			t.Errorf("after explaining, the report of %q", got)
		}
		do(chromedp.Navigate(e.srv.URL+"/console/operator?from="+reconDate+"&to="+reconDate), chromedp.WaitVisible(chromedp.ID("recon-lines")),
			chromedp.Click(chromedp.ID("match-again")), chromedp.WaitVisible(chromedp.ID("flash")))
		if got := text("#flash"); got != "Matched again: 0 lines resolved." {
			t.Errorf("match again: %q", got)
		}
		opCookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{e.srv.URL + "/console/operator/export"}})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", e.srv.URL+attr("#recon-csv", "href"), nil)
		for _, c := range opCookies.Cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		reconCSV, _ := csv.NewReader(res.Body).ReadAll()
		res.Body.Close()
		if res.StatusCode != 200 || len(reconCSV) != 3 || reconCSV[0][0] != "bookingDate" {
			t.Errorf("the reconciliation CSV: %d %v", res.StatusCode, reconCSV)
		}

		// 31 days later the Static QR is Inactive.
		do(chromedp.Navigate(e.srv.URL+"/console/qr/"+static), chromedp.WaitVisible(chromedp.ID("clock-31d")),
			chromedp.Click(chromedp.ID("clock-31d")), chromedp.WaitVisible(chromedp.ID("flash")))
		if got := attr("#status .badge", "data-status"); got != "Inactive" {
			t.Errorf("Static QR 31 days later: %q (%s)", got, text("#flash"))
		}
		if got := text("#clock-offset"); got != "744h0m0s" {
			t.Errorf("clock offset shown: %q", got)
		}

		// Sign out: the console asks for credentials again.
		do(chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("clientId")),
			chromedp.Navigate(e.srv.URL+"/console/rtp"), chromedp.WaitVisible(chromedp.ID("clientId")))
		if axe != "" && checked < 14 {
			t.Errorf("axe-core checked only %d pages", checked)
		}
	})
}
