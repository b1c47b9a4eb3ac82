package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"payd/internal/webhook"
	"payd/internal/worker"
)

// TestBrowserConsole drives the console in a real browser: sign in, find an
// RTP through a filter, accept it, see the payment and the delivered
// callback with its attempt, resend it and see the second delivery arrive,
// advance the clock 31 days and see a Static QR Inactive, sign out.
func TestBrowserConsole(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		ctx := browserCtx(t)
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
		text := func(sel string) string {
			t.Helper()
			s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
			if err != nil {
				t.Fatalf("text of %s: %v", sel, err)
			}
			return s
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
		e.createRTP(map[string]any{"orderId": "OTHER-2", "description": "Not this one"})
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips jar"})

		// Sign in: the root leads to the console, the console to its form.
		err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("clientId")),
			chromedp.SendKeys(chromedp.ID("clientId"), e.creds.ClientID),
			chromedp.SendKeys(chromedp.ID("clientSecret"), "wrong"),
			chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("signin-error")))
		if err != nil {
			t.Fatal(err)
		}
		err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("clientSecret"), e.creds.ClientSecret),
			chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("count-rtp")))
		if err != nil {
			t.Fatal(err)
		}
		if got := text("#count-rtp"); !strings.Contains(got, "Active: 2") {
			t.Errorf("overview RTP counts: %q", got)
		}

		// Find the RTP through a filter and accept it as the payer.
		err = chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/console/rtp"), chromedp.WaitVisible(chromedp.ID("f-orderId")),
			chromedp.SendKeys(chromedp.ID("f-orderId"), "CONSOLE-1"), chromedp.Click(chromedp.ID("filter")))
		if err != nil {
			t.Fatal(err)
		}
		wait("the filtered list", func() bool {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			return err == nil && strings.Contains(loc, "orderId=CONSOLE-1")
		})
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#list a[href="/console/rtp/`+rtp+`"]`))); err != nil {
			t.Fatal(err)
		}
		if got := text("#total"); got != "1–1 of 1" {
			t.Errorf("filtered list: %q", got)
		}
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#list a[href="/console/rtp/`+rtp+`"]`)), chromedp.WaitVisible(chromedp.ID("action-accept")),
			chromedp.Click(chromedp.ID("action-accept")), chromedp.WaitVisible(chromedp.ID("flash")))
		if err != nil {
			t.Fatal(err)
		}
		if got := text("#status"); got != "Accepted" {
			t.Errorf("after accepting: %q (%s)", got, text("#flash"))
		}
		wait("the callback", func() bool { return deliveries() == 1 })
		wait("the attempt to be recorded", func() bool {
			var n int
			e.db().QueryRow("SELECT COUNT(*) FROM callback_attempts").Scan(&n)
			return n == 1
		})
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("timeline"))); err != nil {
			t.Fatal(err)
		}
		tl := text("#timeline")
		for _, want := range []string{"payment executed 50.5 MDL", "rtp Active → Accepted by the payer", "Attempt 1 · 200"} {
			if !strings.Contains(tl, want) {
				t.Errorf("timeline lacks %q:\n%s", want, tl)
			}
		}
		shot("rtp")

		// The callback page: the attempt with its answer; resend it.
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#timeline a[href^="/console/callbacks/"]`)), chromedp.WaitVisible(chromedp.ID("resend")))
		if err != nil {
			t.Fatal(err)
		}
		if st, att := text("#state"), text("#attempts tbody"); st != "Delivered" || !strings.Contains(att, "200") || !strings.Contains(att, "thanks") {
			t.Errorf("callback page: state %q, attempts %q", st, att)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("resend")), chromedp.WaitVisible(chromedp.ID("flash"))); err != nil {
			t.Fatal(err)
		}
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
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("attempts"))); err != nil {
			t.Fatal(err)
		}
		if n := text("#attempt-count"); n != "2" {
			t.Errorf("attempts after the resend: %s", n)
		}
		shot("callback")

		// 31 days later the Static QR is Inactive.
		err = chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/console/qr/"+static), chromedp.WaitVisible(chromedp.ID("clock-31d")),
			chromedp.Click(chromedp.ID("clock-31d")), chromedp.WaitVisible(chromedp.ID("flash")))
		if err != nil {
			t.Fatal(err)
		}
		if got := text("#status"); got != "Inactive" {
			t.Errorf("Static QR 31 days later: %q (%s)", got, text("#flash"))
		}
		if got := text("#clock-offset"); got != "744h0m0s" {
			t.Errorf("clock offset shown: %q", got)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/console"), chromedp.WaitVisible(chromedp.ID("count-rtp"))); err != nil {
			t.Fatal(err)
		}
		shot("overview")

		// Sign out: the console asks for credentials again.
		err = chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("clientId")),
			chromedp.Navigate(e.srv.URL+"/console/rtp"), chromedp.WaitVisible(chromedp.ID("clientId")))
		if err != nil {
			t.Fatal(err)
		}
	})
}
