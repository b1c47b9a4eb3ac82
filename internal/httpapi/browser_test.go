package httpapi

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"payd"
	"payd/internal/browsertest"
	"payd/internal/webhook"
	"payd/internal/worker"
)

func browserCtx(t *testing.T) context.Context { return browsertest.Context(t) }

// TestBrowserCheckout drives the hosted checkout in a real browser: a card
// payment, a QR payment and a declined card, with the merchant's shop and
// callback endpoint on loopback, and screenshots in every language.
func TestBrowserCheckout(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		ctx := browserCtx(t)
		var mu sync.Mutex
		var hooks []*http.Request
		var hookBodies [][]byte
		shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/cb" {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				hooks, hookBodies = append(hooks, r), append(hookBodies, b)
				mu.Unlock()
				return
			}
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body><h1 id=shop>"+r.URL.Path+"</h1></body></html>")
		}))
		defer shop.Close()
		over := map[string]any{"successUrl": shop.URL + "/ok", "failUrl": shop.URL + "/fail", "callbackUrl": shop.URL + "/cb", "language": "en"}
		landing := func(want string) url.Values {
			t.Helper()
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("shop"))); err != nil {
				t.Fatalf("waiting for the shop: %v", err)
			}
			loc, err := chromedp.Run(ctx, chromedp.Location())
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(loc)
			if u.Path != want {
				t.Fatalf("landed on %s, want %s", loc, want)
			}
			return u.Query()
		}

		// 1. Card: opening the page initializes the checkout; the approved card completes it.
		id := e.checkout(over)
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/checkout/"+id), chromedp.WaitVisible(chromedp.ID("method-card"))); err != nil {
			t.Fatal(err)
		}
		if s := e.checkoutStatus(id); s != "Initialized" {
			t.Errorf("after opening in the browser: %s", s)
		}
		err := chromedp.Do(ctx,
			chromedp.Click(chromedp.ID("method-card")),
			chromedp.WaitVisible(chromedp.ID("card-number")),
			chromedp.SendKeys(chromedp.ID("card-number"), payd.ApprovedCard),
			chromedp.SendKeys(chromedp.ID("card-expiry"), payd.ApprovedCardExpiry),
			chromedp.SendKeys(chromedp.ID("card-cvv"), payd.ApprovedCardCVV),
			chromedp.SendKeys(chromedp.ID("card-holder"), "Test Test"),
			chromedp.Click(chromedp.ID("card-pay")),
		)
		if err != nil {
			t.Fatal(err)
		}
		q := landing("/ok")
		if q.Get("checkoutId") != id || q.Get("checkoutStatus") != "Completed" || q.Get("orderId") != "ORD-7" {
			t.Errorf("success query = %v", q)
		}
		// The merchant receives the signed callback.
		d := &worker.Delivery{Store: e.store, Client: webhook.NewClient(true), Clock: e.clock, Owner: "test",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if n, err := d.RunOnce(t.Context()); n != 1 || err != nil {
			t.Fatalf("delivery = %d, %v", n, err)
		}
		mu.Lock()
		if len(hooks) != 1 || hooks[0].Header.Get("X-Callback-Event") != "checkout.completed" ||
			hooks[0].Header.Get("X-Signature") != "sha256="+payd.HMACSignature(e.merchant.SignatureKey, hookBodies[0], atoi64(hooks[0].Header.Get("X-Signature-Timestamp"))) ||
			!bytes.Contains(hookBodies[0], []byte(`"checkoutId":"`+id+`"`)) {
			t.Errorf("callback: %d received", len(hooks))
		}
		mu.Unlock()

		// 2. QR: the page shows the code; the sandbox simulator pays it; the browser returns to the shop.
		id2 := e.checkout(over)
		err = chromedp.Do(ctx,
			chromedp.Navigate(e.srv.URL+"/checkout/"+id2),
			chromedp.Click(chromedp.ID("method-qr")),
			chromedp.WaitVisible(chromedp.ID("qr-image")),
			chromedp.Click(chromedp.ID("qr-pay")),
		)
		if err != nil {
			t.Fatal(err)
		}
		if q := landing("/ok"); q.Get("checkoutId") != id2 || q.Get("checkoutStatus") != "Completed" {
			t.Errorf("QR success query = %v", q)
		}
		if r := e.as("GET", "/v2/checkouts/"+id2, nil); r.str("result.payment.paymentMethod") != "MiaQr" {
			t.Errorf("QR-paid checkout = %s", r.body)
		}

		// 2b. The page notices a payment made elsewhere (test-pay) without a manual reload.
		id3 := e.checkout(over)
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/checkout/"+id3), chromedp.Click(chromedp.ID("method-qr")),
			chromedp.WaitVisible(chromedp.ID("qr-image"))); err != nil {
			t.Fatal(err)
		}
		list := e.as("GET", "/v2/instant/qr?count=10&offset=0&status=Active&orderId=ORD-7", nil).wantOK()
		e.pay(list.str("result.items.0.qrId"), 200).wantOK()
		if q := landing("/ok"); q.Get("checkoutId") != id3 {
			t.Errorf("auto-refresh landing = %v", q)
		}

		// 3. A declined card goes to failUrl.
		id4 := e.checkout(over)
		err = chromedp.Do(ctx,
			chromedp.Navigate(e.srv.URL+"/checkout/"+id4),
			chromedp.Click(chromedp.ID("method-card")),
			chromedp.WaitVisible(chromedp.ID("card-number")),
			chromedp.SendKeys(chromedp.ID("card-number"), "4000000000000002"),
			chromedp.SendKeys(chromedp.ID("card-expiry"), "12/30"),
			chromedp.SendKeys(chromedp.ID("card-cvv"), "123"),
			chromedp.SendKeys(chromedp.ID("card-holder"), "Test Test"),
			chromedp.Click(chromedp.ID("card-pay")),
		)
		if err != nil {
			t.Fatal(err)
		}
		if q := landing("/fail"); q.Get("checkoutStatus") != "Failed" || q.Get("checkoutId") != id4 {
			t.Errorf("fail query = %v", q)
		}

		// 4. A screenshot of the page in each language, checked for content.
		id5 := e.checkout(map[string]any{"orderInfo": map[string]any{"id": "SHOT", "description": "Screenshot", "items": []any{
			map[string]any{"title": "Carte", "amount": 100, "currency": "MDL", "quantity": 2}}}})
		for lang, word := range map[string]string{"ro": "Alegeți metoda de plată", "ru": "Выберите способ оплаты", "en": "Choose how to pay"} {
			err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/checkout/"+id5+"?lang="+lang), chromedp.WaitVisible(chromedp.ID("method-card")))
			if err != nil {
				t.Fatal(err)
			}
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
			if err != nil {
				t.Fatal(err)
			}
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, word) {
				t.Errorf("%s page text lacks %q", lang, word)
			}
			if dark := inkShare(t, shot); dark < 0.005 {
				t.Errorf("%s screenshot is blank (%.4f of pixels inked)", lang, dark)
			}
			if dir := os.Getenv("PAYD_SCREENSHOTS"); dir != "" {
				os.WriteFile(dir+"/checkout-"+lang+".png", shot, 0o644)
			}
		}
	})
}

func atoi64(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

// inkShare is the share of a screenshot's pixels that are not near-white.
func inkShare(t *testing.T, shot []byte) float64 {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	ink, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r+g+bl < 3*0xd000 {
				ink++
			}
		}
	}
	return float64(ink) / float64(total)
}

// TestBrowserPayerPolish checks in a real browser what the payer sees: the
// line totals and the total row, the chosen method drawn differently from
// the other, the sandbox's test-card hint, and the styled 404 page.
func TestBrowserPayerPolish(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		ctx := browserCtx(t)
		co := e.checkout(map[string]any{"amount": 24.63, "language": "en", "orderInfo": map[string]any{"id": "ORD-9", "deliveryAmount": 15, "deliveryCurrency": "MDL",
			"items": []any{map[string]any{"title": "Tea", "amount": 4.5, "quantity": 2, "currency": "MDL"},
				map[string]any{"title": "Cake", "amount": 1.25, "quantity": 0.5, "currency": "MDL"}}}})
		err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/checkout/"+co), chromedp.WaitVisible(chromedp.ID("method-card")),
			chromedp.Click(chromedp.ID("method-card")), chromedp.WaitVisible(chromedp.ID("test-cards")))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("td.line")].map(td => td.innerText)`))
		if err != nil {
			t.Fatal(err)
		}
		total, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("total")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(lines, "|") != "9.00 MDL|0.63 MDL|15.00 MDL" || !strings.Contains(total, "24.63 MDL") {
			t.Errorf("line totals %q, total row %q", lines, total)
		}
		colors, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["method-card","method-qr"].map(id => getComputedStyle(document.getElementById(id)).backgroundColor)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(colors) != 2 || colors[0] == colors[1] || colors[0] == "rgb(229, 231, 235)" {
			t.Errorf("the chosen method is not drawn apart from the other: %v", colors)
		}
		hint, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("test-cards")))
		if err != nil || !strings.Contains(hint, "5102 1800 6010 1124") {
			t.Errorf("test-card hint %q, %v", hint, err)
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv("PAYD_SCREENSHOTS"); dir != "" {
			os.WriteFile(dir+"/checkout-card.png", shot, 0o644)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/checkout/01a1fd38-56fa-7f9d-ba9b-1038a64df444?lang=ru"), chromedp.WaitVisible(chromedp.ID("not-found"))); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil || !strings.Contains(text, "Страница не найдена") {
			t.Errorf("404 page text %q, %v", text, err)
		}
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if dark := inkShare(t, shot); dark < 0.005 {
			t.Errorf("the 404 page is blank (%.4f inked)", dark)
		}
	})
}

// tab drives one browser context for a test: steps that must succeed,
// and an element's text or attribute.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func (b tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func (b tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b tab) attr(sel, name string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil {
		b.t.Fatalf("%s of %s: %v", name, sel, err)
	}
	return v.Value
}
