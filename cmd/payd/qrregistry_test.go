package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"payd"
	"payd/internal/browsertest"
)

// registryRecord is a code as payd-bank's registry keeps it.
type registryRecord struct {
	payd.QRRegistration
	Messages int `json:"messages"`
}

func (b *bankProc) registry(t *testing.T) map[string]registryRecord {
	t.Helper()
	res, err := http.Get(b.base + "/registry")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list []registryRecord
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	out := map[string]registryRecord{}
	for _, r := range list {
		out[r.QRID] = r
	}
	return out
}

// zbar decodes a QR image with zbarimg (zbar-tools), the reader a payer's
// camera app would be; without it the test skips, under CI it fails.
func zbar(t *testing.T, img []byte) string {
	t.Helper()
	if _, err := exec.LookPath("zbarimg"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("zbarimg is required under CI (zbar-tools)")
		}
		t.Skip("zbarimg is not installed (Debian: zbar-tools)")
	}
	f := filepath.Join(t.TempDir(), "qr.png")
	if err := os.WriteFile(f, img, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("zbarimg", "-q", "--raw", f).Output()
	if err != nil {
		t.Fatalf("zbarimg: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// svgReads is what an SVG image reads as a QR code once a browser
// (Chromium) has drawn it.
func svgReads(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("svg"))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	return zbar(t, shot)
}

// TestQRRegistry_postgres: production payd registers every QR with the
// national registry (payd-bank plays it) through the connector. Each
// QR's url is a MIA link of the registry's shape under payd's PSP code,
// distinct for each, and its images decode to exactly it. A payer's bank
// app pays a Dynamic, a Static (Free) and a Hybrid code from the link
// alone; a paid, a cancelled and a replaced code's link pays nothing.
// After every change the registry holds what payd holds, also after the
// connector was away and came back.
func TestQRRegistry_postgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	env, paydAddr, bank := railsEnv(t)
	out, code := runCmd(t, env, "merchant", "create", "--name", "Cafe Codru", "--iban", shopIBAN)
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	p := startProc(t, env, paydAddr)
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, p.base, cr)}
	linkRE := regexp.MustCompile(`^https://mia-qr\.bnm\.md/1/[mei0]/BNM/` + paydBIC[:3] + `[0-9a-f]{32}$`)

	// payd's QR as the registry must hold it.
	matches := func(id string) string {
		_, v := c.do("GET", p.base+"/v2/instant/qr/"+id, nil)
		q := result(v)
		reg, ok := bank.registry(t)[id]
		if !ok {
			return "not registered"
		}
		var diffs []string
		check := func(what string, payd, registry any) {
			if fmt.Sprint(payd) != fmt.Sprint(registry) {
				diffs = append(diffs, fmt.Sprintf("%s: payd %v, registry %v", what, payd, registry))
			}
		}
		check("link", q["url"], reg.Link)
		check("status", q["status"], reg.Status)
		check("type", q["type"], reg.QRType)
		check("amountType", q["amountType"], reg.AmountType)
		check("iban", shopIBAN, reg.CreditorAccount.IBAN)
		check("dba", "Cafe Codru", reg.DBA)
		x := reg.Extension
		if x == nil {
			check("terms", q["extensionId"], nil)
			return strings.Join(diffs, "; ")
		}
		num := func(m *payd.Money) any {
			if m == nil {
				return nil
			}
			return float64(*m) / 100
		}
		check("amount", q["amount"], num(x.Amount))
		check("amountMin", q["amountMin"], num(x.AmountMin))
		check("amountMax", q["amountMax"], num(x.AmountMax))
		if ext, _ := q["extensionId"].(string); ext != "" {
			check("extension", ext, x.ExtensionID)
			check("creditorRef", strings.ReplaceAll(ext, "-", ""), x.CreditorRef)
		} else {
			check("creditorRef", strings.ReplaceAll(id, "-", ""), x.CreditorRef)
		}
		if exp, ok := q["expiresAt"].(string); ok && q["type"] != "Static" {
			at, _ := time.Parse(time.RFC3339Nano, exp)
			if x.ValidUntil == nil || !x.ValidUntil.Equal(at) {
				diffs = append(diffs, fmt.Sprintf("validUntil: payd %s, registry %v", exp, x.ValidUntil))
			}
		}
		return strings.Join(diffs, "; ")
	}
	same := func(what, id string) {
		t.Helper()
		var why string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if why = matches(id); why == "" {
				return
			}
		}
		t.Fatalf("%s: the registry does not hold what payd does: %s", what, why)
	}
	payLink := func(link, amount string) (int, map[string]any) {
		t.Helper()
		return bank.call(t, "POST", "/pay-link", map[string]any{"link": link, "amount": amount, "payerName": "ION POPESCU", "iban": "MD88AG000000011621810140"})
	}
	image := func(id, ext string) []byte {
		t.Helper()
		res, err := http.Get(p.base + "/qr/" + id + "." + ext + "?size=300")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("%s image: %d", ext, res.StatusCode)
		}
		return b
	}
	exp := payd.FormatTime(time.Now().Add(time.Hour))
	links := map[string]bool{}
	browser := browsertest.Context(t)
	create := func(path string, body map[string]any) (string, string) {
		t.Helper()
		s, v := c.do("POST", p.base+path, body)
		if s != 200 {
			t.Fatalf("create %v: %d %v", body, s, v)
		}
		id, link := str(result(v), "qrId"), str(result(v), "url")
		if !linkRE.MatchString(link) || !strings.HasSuffix(link, strings.ReplaceAll(id, "-", "")) || links[link] {
			t.Fatalf("url %q of %s", link, id)
		}
		links[link] = true
		// The image encodes exactly the link, read by a real QR reader.
		img := image(id, "png")
		if _, err := png.Decode(bytes.NewReader(img)); err != nil {
			t.Fatal(err)
		}
		if got := zbar(t, img); got != link {
			t.Errorf("the PNG of %s reads %q, want %q", id, got, link)
		}
		if got := svgReads(t, browser, p.base+"/qr/"+id+".svg?size=300"); got != link {
			t.Errorf("the SVG of %s reads %q, want %q", id, got, link)
		}
		return id, link
	}

	t.Run("dynamic", func(t *testing.T) {
		id, link := create("/v2/instant/qr", map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 42, "currency": "MDL",
			"description": "Order 7", "expiresAt": exp})
		if !strings.Contains(link, "/1/m/BNM/") {
			t.Errorf("a QR's context: %s", link)
		}
		same("created", id)
		if s, v := payLink(link, ""); s != 200 || v["status"] != "ACCC" {
			t.Fatalf("pay the link: %d %v", s, v)
		}
		same("paid", id)
		if s, v := payLink(link, ""); s != 409 {
			t.Errorf("a paid code's link: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/payments?paymentIntentId="+id, nil)
		if items := result(l)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["amount"] != 42.0 {
			t.Errorf("payments of the code: %v", items)
		}
	})

	t.Run("static", func(t *testing.T) {
		id, link := create("/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips"})
		same("created", id)
		if s, v := payLink(link, ""); s != 409 {
			t.Errorf("a Free code without the payer's amount: %d %v", s, v)
		}
		for _, amount := range []string{"15.50", "3.00"} {
			if s, v := payLink(link, amount); s != 200 || v["status"] != "ACCC" {
				t.Fatalf("pay %s: %d %v", amount, s, v)
			}
		}
		same("paid twice", id)
		if s, _ := c.do("POST", p.base+"/v2/instant/qr/"+id+"/cancel", map[string]any{"reason": "closed"}); s != 200 {
			t.Fatalf("cancel: %d", s)
		}
		same("cancelled", id)
		if s, v := payLink(link, "5.00"); s != 409 {
			t.Errorf("a cancelled code's link: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/payments?paymentIntentId="+id, nil)
		if items := result(l)["items"].([]any); len(items) != 2 {
			t.Errorf("%d payments of the cancelled code, want 2", len(items))
		}
	})

	t.Run("hybrid", func(t *testing.T) {
		id, link := create("/v2/instant/qr/hybrid", map[string]any{"amountType": "Controlled", "currency": "MDL",
			"extension": map[string]any{"amount": 50, "amountMin": 10, "amountMax": 100, "description": "Table 4", "expiresAt": exp}})
		same("created", id)
		if s, v := payLink(link, "120.00"); s != 409 {
			t.Errorf("past the code's maximum: %d %v", s, v)
		}
		if s, v := payLink(link, "60.00"); s != 200 || v["status"] != "ACCC" {
			t.Fatalf("pay: %d %v", s, v)
		}
		// New terms replace the extension; the same link pays the new ones.
		if s, v := c.do("POST", p.base+"/v2/instant/qr/"+id+"/extension", map[string]any{"amount": 20, "amountMin": 20, "amountMax": 30,
			"description": "Table 5", "expiresAt": exp}); s != 200 {
			t.Fatalf("extension: %d %v", s, v)
		}
		same("extended", id)
		if s, v := payLink(link, "60.00"); s != 409 {
			t.Errorf("the replaced terms' amount: %d %v", s, v)
		}
		if s, v := payLink(link, "25.00"); s != 200 || v["status"] != "ACCC" {
			t.Fatalf("pay the new terms: %d %v", s, v)
		}
		if s, _ := c.do("POST", p.base+"/v2/instant/qr/"+id+"/extension/cancel", nil); s != 200 {
			t.Fatalf("cancel the extension: %d", s)
		}
		same("extension cancelled", id)
		if s, v := payLink(link, "25.00"); s != 409 {
			t.Errorf("a code without terms: %d %v", s, v)
		}
	})

	t.Run("checkout", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": 120.50, "currency": "MDL", "language": "en",
			"orderInfo": map[string]any{"id": "order-8", "description": "Two books"}})
		if s != 200 {
			t.Fatalf("checkout: %d %v", s, v)
		}
		coID := str(result(v), "checkoutId")
		hc := payerClient()
		payerChooses(t, hc, p.base+"/checkout/"+coID, "MiaQr")
		_, qv := c.do("GET", p.base+"/v2/instant/qr?count=10&offset=0&orderId=order-8", nil)
		items, _ := result(qv)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("the checkout's QR: %v", qv)
		}
		qrID, link := str(items[0].(map[string]any), "qrId"), str(items[0].(map[string]any), "url")
		if !linkRE.MatchString(link) || !strings.Contains(link, "/1/e/BNM/") {
			t.Fatalf("a checkout's QR: %q", link)
		}
		if got := zbar(t, image(qrID, "png")); got != link {
			t.Errorf("the checkout's QR image reads %q", got)
		}
		same("the checkout's QR", qrID)
		if s, v := payLink(link, ""); s != 200 || v["status"] != "ACCC" {
			t.Fatalf("pay the checkout's link: %d %v", s, v)
		}
		var cv map[string]any
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, cv = c.do("GET", p.base+"/v2/checkouts/"+coID, nil); str(result(cv), "status") == "Completed" {
				break
			}
		}
		if st := str(result(cv), "status"); st != "Completed" {
			t.Errorf("the checkout after its link was paid: %s", st)
		}
		same("the checkout's QR paid", qrID)

		// A checkout cancelled by its merchant: its QR is, and the
		// registry learns it (the QR was cancelled without a transition
		// of its own).
		s, v = c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": 20, "currency": "MDL", "language": "en",
			"orderInfo": map[string]any{"id": "order-9", "description": "A pen"}})
		if s != 200 {
			t.Fatalf("checkout: %d %v", s, v)
		}
		coID = str(result(v), "checkoutId")
		payerChooses(t, hc, p.base+"/checkout/"+coID, "MiaQr")
		_, qv = c.do("GET", p.base+"/v2/instant/qr?count=10&offset=0&orderId=order-9", nil)
		items, _ = result(qv)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("the second checkout's QR: %v", qv)
		}
		qrID, link = str(items[0].(map[string]any), "qrId"), str(items[0].(map[string]any), "url")
		same("the second checkout's QR", qrID)
		if s, v := c.do("POST", p.base+"/v2/checkouts/"+coID+"/cancel", nil); s != 200 {
			t.Fatalf("cancel the checkout: %d %v", s, v)
		}
		same("the checkout cancelled", qrID)
		if s, v := payLink(link, ""); s != 409 {
			t.Errorf("a cancelled checkout's link: %d %v", s, v)
		}
	})

	t.Run("connector away", func(t *testing.T) {
		bank.call(t, "POST", "/down", nil)
		id, link := create("/v2/instant/qr", map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 7, "currency": "MDL",
			"description": "While away", "expiresAt": exp})
		if s, _ := c.do("POST", p.base+"/v2/instant/qr/"+id+"/cancel", map[string]any{"reason": "changed"}); s != 200 {
			t.Fatalf("cancel: %d", s)
		}
		if s, v := payLink(link, ""); s != 404 {
			t.Errorf("a code the registry has not heard of yet: %d %v", s, v)
		}
		bank.call(t, "POST", "/up", nil)
		same("after the connector came back", id)
		if reg := bank.registry(t)[id]; reg.Status != payd.QRCancelled || reg.Revision != 2 {
			t.Errorf("the registry holds %+v", reg.QRRegistration)
		}
		if s, v := payLink(link, ""); s != 409 {
			t.Errorf("the cancelled code once registered: %d %v", s, v)
		}
	})
}
