package main

import (
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"payd/internal/browsertest"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// The acquirer's project, as payd-bank plays it and payd is configured.
const (
	acqProject      = "payd-test-project"
	acqSecret       = "project-secret-0123456789"
	acqSignatureKey = "8508706b-3454-4733-8295-56e617c4abcf"
	approvedCard    = "4111111111111111" // payd-bank: approved after the 3-D Secure code 123456
	declinedCard    = "4000000000000002"
)

// cardsEnv is production payd on PostgreSQL behind a TLS front (its https
// public URL), with payd-bank as the rails connector and the card
// acquirer (whose callbacks trust the front's certificate).
type cardsEnv struct {
	env   map[string]string
	bank  *bankProc
	front *httptest.Server
	db    string
}

func newCardsEnv(t *testing.T, dbURL string) *cardsEnv {
	paydAddr := freeAddr(t)
	target, _ := url.Parse("http://" + paydAddr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // payd killed on purpose: 502s, said by the tests that care
	front := httptest.NewUnstartedServer(proxy)
	front.StartTLS()
	t.Cleanup(front.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "front.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o600)
	secretFile, keyFile := filepath.Join(dir, "secret"), filepath.Join(dir, "signature-key")
	os.WriteFile(secretFile, []byte(acqSecret), 0o600)
	os.WriteFile(keyFile, []byte(acqSignatureKey), 0o600)
	bank := startBank(t, freeAddr(t), "http://"+paydAddr+"/rails/iso20022", "-ca-file", ca, "-acquirer-project", acqProject,
		"-acquirer-secret-file", secretFile, "-acquirer-signature-key-file", keyFile, "-acquirer-token-life", "4s")
	env := map[string]string{
		"PAYD_DATABASE_URL": dbURL, "PAYD_MODE": "production", "PAYD_PUBLIC_URL": front.URL, "PAYD_ADDR": paydAddr,
		"PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": bank.base + "/iso20022", "PAYD_RAILS_KEY": railsKey, "PAYD_RAILS_BIC": paydBIC,
		"PAYD_CARD_ACQUIRER": "maib-ecomm", "PAYD_ACQUIRER_URL": bank.base, "PAYD_ACQUIRER_PROJECT_ID": acqProject,
		"PAYD_ACQUIRER_PROJECT_SECRET": acqSecret, "PAYD_ACQUIRER_SIGNATURE_KEY": acqSignatureKey,
		"PAYD_ALLOW_HTTP_URLS": "true", "PAYD_CALLBACK_ALLOW": "127.0.0.0/8", "PAYD_CALLBACK_SCHEDULE": "200ms,500ms,1s",
		"PAYD_TRUSTED_PROXIES": "127.0.0.0/8",
	}
	return &cardsEnv{env: env, bank: bank, front: front, db: dbURL}
}

// acquirerPayment is a payment as payd-bank's acquirer lists it.
type acquirerPayment struct {
	PayID, OrderID, Status, RRN, Approval, CardNumber string
	RefundAmount                                      *float64
}

func (e *cardsEnv) acquirerPayments(t *testing.T) map[string]acquirerPayment {
	t.Helper()
	res, err := http.Get(e.bank.base + "/acquirer/payments")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list []acquirerPayment
	json.NewDecoder(res.Body).Decode(&list)
	out := map[string]acquirerPayment{}
	for _, p := range list {
		out[p.OrderID] = p // the orderId is the checkoutId
	}
	return out
}

// payer is a payer's browser without a browser: a cookie jar, the TLS
// front's certificate trusted, redirects not followed.
func payerClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// startCard opens a checkout's page, chooses Card and asks to pay: payd's
// answer (a 303 to the acquirer's page, or a page saying why not).
func startCard(t *testing.T, hc *http.Client, pageURL string) *http.Response {
	t.Helper()
	payerChooses(t, hc, pageURL, "Card")
	return postForm(t, hc, pageURL+"/card", url.Values{"csrf": {csrfOf(t, hc, pageURL)}})
}

// csrfOf is the form token of the checkout page at pageURL.
func csrfOf(t *testing.T, hc *http.Client, pageURL string) string {
	t.Helper()
	res, err := hc.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfRE.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no form on the checkout page (%d):\n%s", res.StatusCode, b)
	}
	return m[1]
}

func postForm(t *testing.T, hc *http.Client, url string, form url.Values) *http.Response {
	t.Helper()
	res, err := hc.PostForm(url, form)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// payerChooses is the payer choosing a checkout's method on its page.
func payerChooses(t *testing.T, hc *http.Client, pageURL, method string) {
	t.Helper()
	postForm(t, hc, pageURL+"/method", url.Values{"csrf": {csrfOf(t, hc, pageURL)}, "method": {method}}).Body.Close()
}

// payAtAcquirer is the payer on the acquirer's page: the card, then the
// 3-D Secure code for a card that asks one. The acquirer's redirect back
// to payd is returned, not followed (the payer closed the tab).
func payAtAcquirer(t *testing.T, hc *http.Client, payURL, card string) {
	t.Helper()
	res, err := hc.PostForm(payURL, url.Values{"pan": {card}, "exp": {"12/30"}, "cvv": {"123"}, "holder": {"TEST PAYER"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if card == approvedCard {
		res, err = hc.PostForm(strings.Replace(payURL, "/ecomm/pay/", "/ecomm/3ds/", 1), url.Values{"otp": {"123456"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if res.StatusCode != http.StatusFound {
		t.Fatalf("the acquirer's page answered %d", res.StatusCode)
	}
}

// TestCards_postgres: production payd on PostgreSQL takes cards on
// payd-bank's acquirer page, in a real browser: approved after 3-D
// Secure, declined, paid with the tab closed (completed by asking the
// acquirer), duplicate and forged callbacks, refunds through the outbox,
// the acquirer down for a while. No card number reaches payd's database
// or logs.
func TestCards_postgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes and a browser")
	}
	_, dbURL := storetest.Postgres(t)
	e := newCardsEnv(t, dbURL)
	cr := newMerchantCreds(t, e.env)
	recv := &signedReceiver{key: cr.SignatureKey, got: map[string][]map[string]any{}}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>shop</title><h1 id="shop">%s</h1>`, r.URL.Path)
	}))
	defer shop.Close()
	p := startProc(t, e.env, e.env["PAYD_ADDR"])
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, p.base, cr)}
	newCheckout := func() (id, pageURL string) {
		t.Helper()
		s, v := c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": 120.50, "currency": "MDL", "language": "en",
			"callbackUrl": hook.URL, "successUrl": shop.URL + "/ok", "failUrl": shop.URL + "/fail",
			"orderInfo": map[string]any{"id": "order-7", "description": "Two books",
				"items": []any{map[string]any{"title": "Book", "amount": 60.25, "quantity": 2}}}})
		if s != 200 {
			t.Fatalf("checkout: %d %v", s, v)
		}
		return str(result(v), "checkoutId"), str(result(v), "checkoutUrl")
	}
	checkout := func(id string) map[string]any {
		_, v := c.do("GET", p.base+"/v2/checkouts/"+id, nil)
		return result(v)
	}
	paymentOf := func(checkoutID string) map[string]any {
		_, l := c.do("GET", p.base+"/v2/payments?paymentIntentId="+checkoutID, nil)
		items, _ := result(l)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("payments of checkout %s: %v", checkoutID, l)
		}
		return items[0].(map[string]any)
	}
	waitStatus := func(id, want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if str(checkout(id), "status") == want {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("checkout %s is %s, want %s", id, str(checkout(id), "status"), want)
	}

	ctx := browsertest.Context(t, chromedp.Flag("ignore-certificate-errors", true))
	payInBrowser := func(pageURL, card string) string {
		t.Helper()
		err := chromedp.Do(ctx,
			chromedp.Navigate(pageURL),
			chromedp.Click(chromedp.ID("method-card")),
			chromedp.WaitVisible(chromedp.ID("card-pay")),
			chromedp.Click(chromedp.ID("card-pay")),
			chromedp.WaitVisible(chromedp.ID("pan")),
			chromedp.SendKeys(chromedp.ID("pan"), card),
			chromedp.SendKeys(chromedp.ID("exp"), "12/30"),
			chromedp.SendKeys(chromedp.ID("cvv"), "123"),
			chromedp.SendKeys(chromedp.ID("holder"), "TEST PAYER"),
			chromedp.Click(chromedp.ID("pay")),
		)
		if err == nil && card == approvedCard {
			err = chromedp.Do(ctx,
				chromedp.WaitVisible(chromedp.ID("otp")),
				chromedp.SendKeys(chromedp.ID("otp"), "123456"),
				chromedp.Click(chromedp.ID("otp-submit")),
			)
		}
		var where string
		if err == nil {
			if err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("shop"))); err == nil {
				where, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("shop")))
			}
		}
		if err != nil {
			t.Fatalf("the payer's browser: %v\npayd's logs:\n%s", err, tail(p.logs.String(), 3000))
		}
		return where
	}

	var paidCheckout, paidPayment string
	t.Run("approved after 3-D Secure", func(t *testing.T) {
		id, pageURL := newCheckout()
		if !strings.HasPrefix(pageURL, e.front.URL) {
			t.Fatalf("checkout url %s is not under the public URL %s", pageURL, e.front.URL)
		}
		if where := payInBrowser(pageURL, approvedCard); where != "/ok" {
			t.Errorf("the payer came back to the shop's %s, want /ok", where)
		}
		if st := str(checkout(id), "status"); st != "Completed" {
			t.Fatalf("checkout after the approval: %s", st)
		}
		pay := paymentOf(id)
		acq := e.acquirerPayments(t)[id]
		if acq.Status != "OK" || str(pay, "referenceNumber") != acq.RRN || str(pay, "approvalCode") != acq.Approval ||
			str(pay, "paymentMethod") != "Card" || len(acq.RRN) != 12 {
			t.Errorf("payment %v, acquirer's %+v", pay, acq)
		}
		cb := recv.wait(t, str(pay, "paymentId"))
		if cb["checkoutId"] != id || cb["paymentStatus"] != "Executed" || cb["approvalCode"] != acq.Approval {
			t.Errorf("merchant callback: %v", cb)
		}
		paidCheckout, paidPayment = id, str(pay, "paymentId")
	})

	t.Run("declined", func(t *testing.T) {
		id, pageURL := newCheckout()
		if where := payInBrowser(pageURL, declinedCard); where != "/fail" {
			t.Errorf("the payer came back to the shop's %s, want /fail", where)
		}
		if st := str(checkout(id), "status"); st != "Failed" {
			t.Errorf("checkout after the decline: %s", st)
		}
	})

	t.Run("tab closed after paying: completed by asking the acquirer", func(t *testing.T) {
		e.bank.call(t, "POST", "/acquirer/callbacks?mode=drop", nil)
		defer e.bank.call(t, "POST", "/acquirer/callbacks?mode=normal", nil)
		id, pageURL := newCheckout()
		hc := payerClient()
		res := startCard(t, hc, pageURL)
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), e.bank.base+"/ecomm/pay/") {
			t.Fatalf("card start: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		// A reload, or a second click, goes to the same acquirer payment.
		again := startCard(t, hc, pageURL)
		again.Body.Close()
		if again.Header.Get("Location") != res.Header.Get("Location") {
			t.Errorf("a second click made another acquirer payment: %s, then %s", res.Header.Get("Location"), again.Header.Get("Location"))
		}
		payAtAcquirer(t, hc, res.Header.Get("Location"), approvedCard)
		waitStatus(id, "Completed", 30*time.Second)
	})

	t.Run("duplicate and forged callbacks", func(t *testing.T) {
		e.bank.call(t, "POST", "/acquirer/callbacks?mode=duplicate", nil)
		defer e.bank.call(t, "POST", "/acquirer/callbacks?mode=normal", nil)
		id, pageURL := newCheckout()
		hc := payerClient()
		res := startCard(t, hc, pageURL)
		res.Body.Close()
		payAtAcquirer(t, hc, res.Header.Get("Location"), approvedCard)
		waitStatus(id, "Completed", 10*time.Second)
		payID := e.acquirerPayments(t)[id].PayID
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && len(e.callbacksOf(t, payID)) < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		if n := len(e.callbacksOf(t, payID)); n != 2 {
			t.Fatalf("the acquirer posted %d callbacks, want the duplicate pair", n)
		}
		for _, cb := range e.callbacksOf(t, payID) {
			if cb.Status != 200 {
				t.Errorf("a genuine callback was answered %d", cb.Status)
			}
		}
		paymentOf(id) // exactly one
		recv.mu.Lock()
		n := len(recv.got[str(paymentOf(id), "paymentId")])
		recv.mu.Unlock()
		if n > 1 {
			t.Errorf("the merchant was called back %d times", n)
		}
		_, forged := e.bank.call(t, "POST", "/acquirer/payments/"+payID+"/callback?forged=true", nil)
		if forged["status"] != 401.0 {
			t.Errorf("a forged callback was answered %v", forged["status"])
		}
	})

	t.Run("refunds through the acquirer", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/payments/"+paidPayment+"/refund", map[string]any{"amount": 20, "reason": "one book back",
			"callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("refund: %d %v", s, v)
		}
		refundID := str(result(v), "refundId")
		if cb := recv.wait(t, refundID); cb["status"] != "Accepted" {
			t.Errorf("refund callback: %v", cb)
		}
		if a := e.acquirerPayments(t)[paidCheckout]; a.RefundAmount == nil || *a.RefundAmount != 20 {
			t.Errorf("the acquirer's refund: %+v", a)
		}
		if s, v := c.do("POST", p.base+"/v2/payments/"+paidPayment+"/refund", map[string]any{"amount": 10, "reason": "again"}); s != 409 {
			t.Errorf("a second refund of a card payment: %d %v", s, v)
		}
	})

	t.Run("the acquirer down for a while", func(t *testing.T) {
		id, pageURL := newCheckout()
		e.bank.call(t, "POST", "/acquirer/down", nil)
		hc := payerClient()
		res := startCard(t, hc, pageURL)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "not available right now") {
			t.Errorf("card start with the acquirer down: %d", res.StatusCode)
		}
		e.bank.call(t, "POST", "/acquirer/up", nil)
		// A failed start holds the next for 5 s (no call to the acquirer
		// meanwhile): the payer's retry after that goes through.
		var loc string
		for deadline := time.Now().Add(10 * time.Second); loc == "" && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			res = startCard(t, hc, pageURL)
			res.Body.Close()
			loc = res.Header.Get("Location")
		}
		if loc == "" {
			t.Fatal("the card start never went through once the acquirer was back")
		}
		payAtAcquirer(t, hc, loc, approvedCard)
		waitStatus(id, "Completed", 10*time.Second)
		payID := str(paymentOf(id), "paymentId")

		e.bank.call(t, "POST", "/acquirer/down", nil)
		calls := func() (n int) { // any endpoint: without a live token payd asks for one first
			for _, c := range e.acquirerCalls(t) {
				n += c
			}
			return n
		}
		asked := calls()
		s, v := c.do("POST", p.base+"/v2/payments/"+payID+"/refund", map[string]any{"reason": "all back", "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("refund: %d %v", s, v)
		}
		refundID := str(result(v), "refundId")
		// payd has asked the acquirer while it was down, and been refused.
		waitUntil(t, 10*time.Second, "payd to ask the acquirer for the refund while it is down", func() bool { return calls() > asked })
		if _, g := c.do("GET", p.base+"/v2/payments/refunds/"+refundID, nil); str(result(g), "status") == "Accepted" {
			t.Errorf("a refund settled while the acquirer was down")
		}
		e.bank.call(t, "POST", "/acquirer/up", nil)
		if cb := recv.wait(t, refundID); cb["status"] != "Accepted" {
			t.Errorf("refund callback after the acquirer came back: %v", cb)
		}
		if a := e.acquirerPayments(t)[id]; a.RefundAmount == nil || *a.RefundAmount != 120.5 {
			t.Errorf("the acquirer's refund: %+v", a)
		}
	})

	t.Run("no card number in the database or the logs", func(t *testing.T) {
		db := openDB(t, e.db)
		defer db.Close()
		found := searchDatabase(t, db, approvedCard, declinedCard)
		for _, pan := range []string{approvedCard, declinedCard} {
			if strings.Contains(p.logs.String(), pan) {
				found = append(found, "payd's logs")
			}
		}
		if len(found) > 0 {
			t.Errorf("a card number was found in: %v", found)
		}
	})
	recv.mu.Lock()
	if recv.bad != 0 {
		t.Errorf("%d callbacks had a bad signature", recv.bad)
	}
	recv.mu.Unlock()
}

type acquirerCallback struct {
	PayID  string
	Status int
	Forged bool
}

func (e *cardsEnv) callbacksOf(t *testing.T, payID string) []acquirerCallback {
	t.Helper()
	res, err := http.Get(e.bank.base + "/acquirer/callbacks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var all, out []acquirerCallback
	json.NewDecoder(res.Body).Decode(&all)
	for _, cb := range all {
		if cb.PayID == payID && !cb.Forged {
			out = append(out, cb)
		}
	}
	return out
}

// searchDatabase reads every row of every table of the test's schema as
// text and reports the tables where one of the needles appears.
func searchDatabase(t *testing.T, db *sql.DB, needles ...string) []string {
	t.Helper()
	rows, err := db.Query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("only %d tables searched", len(tables))
	}
	var found []string
	for _, table := range tables {
		var hit bool
		q := `SELECT EXISTS (SELECT 1 FROM "` + table + `" t WHERE ` + strings.Repeat("CAST(t AS TEXT) LIKE ? OR ", len(needles))
		q = strings.TrimSuffix(q, " OR ") + ")"
		args := []any{}
		for i, n := range needles {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i+1), 1)
			args = append(args, "%"+n+"%")
		}
		if err := db.QueryRow(q, args...).Scan(&hit); err != nil {
			t.Fatalf("search %s: %v", table, err)
		}
		if hit {
			found = append(found, table)
		}
	}
	return found
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestCrashRecoveryCards: payd in production with the card acquirer is
// SIGKILLed while payers pay by card (the callbacks, the payers' returns
// and the poller all racing the kills) and merchants refund. Then every
// payment the acquirer approved is one payment in payd, none is two,
// and every refund payd acknowledged reached the acquirer once and
// settled.
func TestCrashRecoveryCards(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the binary many times")
	}
	kills := envInt("PAYD_CRASH_KILLS", 20) / 2
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		e := newCardsEnv(t, dbURL)
		e.env["PAYD_CALLBACK_LEASE"], e.env["PAYD_TOKEN_TTL"] = "1s", "1h"
		cr := newMerchantCreds(t, e.env)
		p := startProc(t, e.env, e.env["PAYD_ADDR"])
		defer p.stop()
		c := &client{http: &http.Client{Timeout: 3 * time.Second}, token: token(t, p.base, cr)}
		var mu sync.Mutex
		var refunds []string
		ops := []func(stop <-chan struct{}){
			func(<-chan struct{}) { // a payer pays by card
				s, v := c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": 25, "currency": "MDL", "language": "ro"})
				if s != 200 {
					return
				}
				hc := payerClient()
				defer func() { recover() }() // a request cut by a kill ends this payer
				res := startCardQuiet(hc, str(result(v), "checkoutUrl"))
				if res == nil || res.StatusCode != http.StatusSeeOther {
					return
				}
				payAtAcquirerQuiet(hc, res.Header.Get("Location"))
			},
			func(<-chan struct{}) { // a merchant refunds part of a card payment
				if id := refundRecent(c, p.base, map[string]any{"amount": 5, "reason": "crash"}); id != "" {
					mu.Lock()
					refunds = append(refunds, id)
					mu.Unlock()
				}
			},
		}
		stop := load(4, func(stop <-chan struct{}) { ops[rand.IntN(len(ops))](stop) })
		killRestart(p, kills, 300*time.Millisecond, 700*time.Millisecond)
		stop()

		db := openDB(t, dbURL)
		defer db.Close()
		ph := map[bool]string{true: "$1", false: "?"}[strings.HasPrefix(dbURL, "postgres")]
		// Every approval reaches payd (callbacks, returns and the poller
		// after the kills): wait for the last ones.
		approved := func() (recorded, missing int) {
			for _, a := range e.acquirerPayments(t) {
				if a.Status != "OK" {
					continue
				}
				var n int
				db.QueryRow("SELECT COUNT(*) FROM payments WHERE network_ref = "+ph, a.PayID).Scan(&n)
				switch n {
				case 1:
					recorded++
				case 0:
					missing++
				default:
					t.Errorf("acquirer payment %s is %d payments in payd", a.PayID, n)
				}
			}
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for _, m := approved(); m > 0 && time.Now().Before(deadline); _, m = approved() {
			time.Sleep(500 * time.Millisecond)
		}
		recorded, missing := approved()
		if missing > 0 {
			t.Errorf("%d payments the acquirer approved are not in payd", missing)
		}
		// Every acknowledged refund reached the acquirer once and settled.
		settled := func() (n int) {
			for _, id := range refunds {
				var st string
				db.QueryRow("SELECT status FROM refunds WHERE id = "+ph, id).Scan(&st)
				if st == "Accepted" {
					n++
				}
			}
			return n
		}
		for time.Now().Before(deadline) && settled() < len(refunds) {
			time.Sleep(500 * time.Millisecond)
		}
		if n := settled(); n != len(refunds) {
			t.Errorf("%d of %d acknowledged refunds settled", n, len(refunds))
		}
		// A refund payd committed whose answer a kill cut is still a refund:
		// the acquirer refunded each refund payd holds, once.
		var held, heldSettled int
		for {
			db.QueryRow("SELECT COUNT(*), COUNT(CASE WHEN status = 'Accepted' THEN 1 END) FROM refunds").Scan(&held, &heldSettled)
			if heldSettled == held || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		refundedAtAcquirer := 0
		for _, a := range e.acquirerPayments(t) {
			if a.RefundAmount != nil {
				refundedAtAcquirer++
			}
		}
		if refundedAtAcquirer != held || heldSettled != held || held < len(refunds) {
			t.Errorf("payd holds %d refunds (%d settled, %d acknowledged); the acquirer refunded %d payments", held, heldSettled, len(refunds), refundedAtAcquirer)
		}
		if recorded == 0 || len(refunds) == 0 {
			t.Errorf("too little traffic to show anything: %d card payments, %d refunds", recorded, len(refunds))
		}
		t.Logf("%d kills; %d card payments approved and recorded once, %d refunds sent once and settled", kills, recorded, len(refunds))
	})
}

// startCardQuiet is startCard for the crash test: any failure is nil.
func startCardQuiet(hc *http.Client, pageURL string) *http.Response {
	form := func() string {
		res, err := hc.Get(pageURL)
		if err != nil {
			return ""
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if m := csrfRE.FindStringSubmatch(string(b)); m != nil {
			return m[1]
		}
		return ""
	}
	tok := form()
	if tok == "" {
		return nil
	}
	res, err := hc.PostForm(pageURL+"/method", url.Values{"csrf": {tok}, "method": {"Card"}})
	if err != nil {
		return nil
	}
	res.Body.Close()
	if tok = form(); tok == "" {
		return nil
	}
	res, err = hc.PostForm(pageURL+"/card", url.Values{"csrf": {tok}})
	if err != nil {
		return nil
	}
	res.Body.Close()
	return res
}

// payAtAcquirerQuiet pays with the approved card and follows the way back
// to payd half the time (the other half, the payer closes the tab).
func payAtAcquirerQuiet(hc *http.Client, payURL string) {
	res, err := hc.PostForm(payURL, url.Values{"pan": {approvedCard}, "exp": {"12/30"}, "cvv": {"123"}, "holder": {"CRASH PAYER"}})
	if err != nil {
		return
	}
	res.Body.Close()
	res, err = hc.PostForm(strings.Replace(payURL, "/ecomm/pay/", "/ecomm/3ds/", 1), url.Values{"otp": {"123456"}})
	if err != nil {
		return
	}
	res.Body.Close()
	if back := res.Header.Get("Location"); back != "" && rand.IntN(2) == 0 {
		if res, err := hc.Get(back); err == nil {
			res.Body.Close()
		}
	}
}

// acquirerCalls is how many calls payd-bank's acquirer API had, by endpoint.
func (e *cardsEnv) acquirerCalls(t *testing.T) map[string]int {
	t.Helper()
	res, err := http.Get(e.bank.base + "/acquirer/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]int{}
	json.NewDecoder(res.Body).Decode(&out)
	return out
}

// TestCardPagesAskTheAcquirerSparingly: the payer's pages, which anyone
// may request, never become acquirer calls one for one. A checkout below
// the acquirer's minimum offers no card; a hundred returns from the
// acquirer's page ask it once; twenty starts while the acquirer is down
// call /v1/pay once.
func TestCardPagesAskTheAcquirerSparingly(t *testing.T) {
	e := newCardsEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "cards.db"))
	cr := newMerchantCreds(t, e.env)
	p := startProc(t, e.env, e.env["PAYD_ADDR"])
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, p.base, cr)}
	newCheckout := func(amount float64) (id, pageURL string) {
		t.Helper()
		s, v := c.do("POST", p.base+"/v2/checkouts", map[string]any{"amount": amount, "currency": "MDL", "language": "en"})
		if s != 200 {
			t.Fatalf("checkout: %d %v", s, v)
		}
		return str(result(v), "checkoutId"), str(result(v), "checkoutUrl")
	}

	_, small := newCheckout(0.50)
	hc := payerClient()
	res, err := hc.Get(small)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(b), `id="method-card"`) {
		t.Errorf("a checkout of 0.50 MDL, below the acquirer's minimum, offers cards")
	}
	if m := csrfRE.FindStringSubmatch(string(b)); m != nil {
		res, err := hc.PostForm(small+"/method", url.Values{"csrf": {m[1]}, "method": {"Card"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("choosing Card for 0.50 MDL: %d, want 400", res.StatusCode)
		}
	}

	_, pageURL := newCheckout(120.50)
	if res := startCard(t, hc, pageURL); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), e.bank.base) {
		t.Fatalf("card start: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	before := e.acquirerCalls(t)["GET /v1/pay-info/{payId}"]
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				res, err := payerClient().Get(pageURL + "/card/return")
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				if res.StatusCode != http.StatusSeeOther {
					t.Errorf("worker %d: return answered %d", w, res.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	// One ask for the hundred; the poller may ask once more meanwhile.
	if n := e.acquirerCalls(t)["GET /v1/pay-info/{payId}"] - before; n < 1 || n > 2 {
		t.Errorf("100 returns made %d pay-info calls, want 1 (or 2 with the poller's)", n)
	}

	if _, err := http.Post(e.bank.base+"/acquirer/down", "", nil); err != nil {
		t.Fatal(err)
	}
	_, downURL := newCheckout(99.00)
	total := func() int {
		n := 0
		for _, k := range e.acquirerCalls(t) {
			n += k
		}
		return n
	}
	before = total()
	for i := range 20 {
		res := startCard(t, payerClient(), downURL)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("start %d with the acquirer down: %d, want 503", i, res.StatusCode)
		}
	}
	// One start asks (its token, with the refresh token and then the
	// project's credentials, or /v1/pay); the others are told at once.
	if n := total() - before; n < 1 || n > 2 {
		t.Errorf("20 starts with the acquirer down made %d acquirer calls, want 1 or 2 (one start's)", n)
	}
}
