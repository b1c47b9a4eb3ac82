package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/client"
	"payd/internal/httpapi"
	"payd/internal/rails/sandbox"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
	"payd/internal/web"
)

// server is a real payd (sandbox) on loopback, with the system clock.
type server struct {
	url   string
	store *sqlstore.Store
	creds *payd.Credentials
}

func start(t *testing.T, s *sqlstore.Store) *server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	clock := payd.SystemClock{}
	cfg := httpapi.Config{Sandbox: true, PublicURL: base, AllowHTTPURLs: true, TokenRateClient: 10000, TokenRateAddr: 10000,
		RefundDelay: time.Millisecond}
	srv.Config.Handler = httpapi.New(cfg, s, clock, log, web.New(web.Config{Sandbox: true, PublicURL: base}, s, clock, log))
	srv.Start()
	t.Cleanup(srv.Close)
	cr, err := s.CreateMerchant(context.Background(), sqlstore.MerchantOptions{Name: "Client test", CommissionBP: 100}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &server{url: base, store: s, creds: cr}
}

func money(s string) payd.Money {
	m, err := payd.ParseMoney(s)
	if err != nil {
		panic(err)
	}
	return m
}

// settleRefunds runs the sandbox's refund processing once.
func settleRefunds(t *testing.T, s *sqlstore.Store) {
	t.Helper()
	r := &sandbox.Refunds{Store: s, Ledger: s, Clock: payd.SystemClock{}}
	time.Sleep(5 * time.Millisecond) // past PAYD_REFUND_DELAY
	if _, err := r.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestEveryMethod calls every method of the client against a real payd.
func TestEveryMethod(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		srv := start(t, s)
		c := client.New(srv.url, srv.creds.ClientID, srv.creds.ClientSecret)
		ctx := context.Background()
		exp := time.Now().Add(time.Hour)

		// RTP: create, get, list, accept, refund, reject, cancel.
		r, err := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: 5000, Currency: "MDL", Description: "Order 42", OrderID: "42", ExpiresAt: exp})
		if err != nil || r.RTPID == "" || r.OrderID != "42" {
			t.Fatalf("CreateRTP = %+v, %v", r, err)
		}
		if got, err := c.RTP(ctx, r.RTPID); err != nil || got.Status != "Active" || got.Amount != 5000 || got.URL == "" {
			t.Errorf("RTP = %+v, %v", got, err)
		}
		if page, err := c.RTPs(ctx, client.ListOptions{Count: 10, Filters: map[string]string{"orderId": "42"}}); err != nil || page.TotalCount != 1 || page.Items[0].RTPID != r.RTPID {
			t.Errorf("RTPs = %+v, %v", page, err)
		}
		acc, err := c.TestAcceptRTP(ctx, r.RTPID, 5000)
		if err != nil || acc.RTPStatus != "Accepted" || acc.PayID == "" || acc.Commission != 50 || acc.Signature == "" {
			t.Fatalf("TestAcceptRTP = %+v, %v", acc, err)
		}
		rf, err := c.RefundRTP(ctx, acc.PayID, client.RTPRefund{Reason: "returned"})
		if err != nil || rf.RefundID == "" {
			t.Fatalf("RefundRTP = %+v, %v", rf, err)
		}
		r2, _ := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: 100, Currency: "MDL", Description: "x", ExpiresAt: exp})
		if rej, err := c.TestRejectRTP(ctx, r2.RTPID); err != nil || rej.RTPStatus != "Rejected" || rej.Commission != 0 {
			t.Errorf("TestRejectRTP = %+v, %v", rej, err)
		}
		r3, _ := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: 100, Currency: "MDL", Description: "x", ExpiresAt: exp})
		if st, err := c.CancelRTP(ctx, r3.RTPID, "changed"); err != nil || st.Status != "Cancelled" {
			t.Errorf("CancelRTP = %+v, %v", st, err)
		}

		// QR: create each kind, pay, read, list, cancel; extensions.
		dyn, err := c.CreateQR(ctx, client.QRRequest{Type: "Dynamic", AmountType: "Fixed", Amount: money("100.00"), Currency: "MDL",
			Description: "Table 4", OrderID: "T4", ExpiresAt: exp})
		if err != nil || dyn.QRID == "" || dyn.URL == "" {
			t.Fatalf("CreateQR = %+v, %v", dyn, err)
		}
		paid, err := c.TestPayQR(ctx, dyn.QRID, 10000, "TEST QR PAYMENT", payd.TestIBAN)
		if err != nil || paid.QRStatus != "Paid" || paid.SignatureKey != srv.creds.SignatureKey {
			t.Fatalf("TestPayQR = %+v, %v", paid, err)
		}
		if q, err := c.QR(ctx, dyn.QRID); err != nil || q.Status != "Paid" || q.Amount != 10000 {
			t.Errorf("QR = %+v, %v", q, err)
		}
		if page, err := c.QRs(ctx, client.ListOptions{Count: 5, Filters: map[string]string{"orderId": "T4"}}); err != nil || page.TotalCount != 1 {
			t.Errorf("QRs = %+v, %v", page, err)
		}
		if p, err := c.QRPayment(ctx, paid.PayID); err != nil || p.Amount != 10000 || p.PayerIBAN != payd.TestIBAN {
			t.Errorf("QRPayment = %+v, %v", p, err)
		}
		if page, err := c.QRPayments(ctx, client.ListOptions{Count: 5, Filters: map[string]string{"qrId": dyn.QRID}}); err != nil || page.TotalCount != 1 {
			t.Errorf("QRPayments = %+v, %v", page, err)
		}
		st, err := c.CreateQR(ctx, client.QRRequest{Type: "Static", AmountType: "Free", Currency: "MDL", Description: "Tips"})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := c.CancelQR(ctx, st.QRID, "closed"); err != nil || s.Status != "Cancelled" {
			t.Errorf("CancelQR = %+v, %v", s, err)
		}
		hyb, err := c.CreateHybridQR(ctx, client.HybridRequest{AmountType: "Fixed", Currency: "MDL",
			Extension: client.ExtensionRequest{Amount: money("5.00"), Description: "Coffee", ExpiresAt: exp}})
		if err != nil || hyb.ExtensionID == "" {
			t.Fatalf("CreateHybridQR = %+v, %v", hyb, err)
		}
		ext2, err := c.CreateExtension(ctx, hyb.QRID, client.ExtensionRequest{Amount: money("7.50"), Description: "Tea", ExpiresAt: exp})
		if err != nil || ext2 == "" || ext2 == hyb.ExtensionID {
			t.Fatalf("CreateExtension = %q, %v", ext2, err)
		}
		if page, err := c.Extensions(ctx, client.ListOptions{Count: 10, Filters: map[string]string{"qrId": hyb.QRID}}); err != nil || page.TotalCount != 2 {
			t.Errorf("Extensions = %+v, %v", page, err)
		}
		if id, err := c.CancelExtension(ctx, hyb.QRID); err != nil || id != ext2 {
			t.Errorf("CancelExtension = %q, %v", id, err)
		}

		// Checkouts.
		co, err := c.CreateCheckout(ctx, client.CheckoutRequest{Amount: 2463, Currency: "MDL", Language: "en",
			OrderInfo: &client.OrderInfo{ID: "ORD-1", Items: []client.OrderItem{{Title: "Tea", Amount: money("4.50"), Quantity: 2}}},
			PayerInfo: &client.PayerInfo{Name: "Ion"}})
		if err != nil || co.CheckoutURL == "" {
			t.Fatalf("CreateCheckout = %+v, %v", co, err)
		}
		if got, err := c.Checkout(ctx, co.CheckoutID); err != nil || got.Status != "WaitingForInit" || got.Amount != 2463 ||
			got.Order == nil || got.Order.ID != "ORD-1" || len(got.Order.OrderItems) != 1 || got.Order.OrderItems[0].Quantity != 2 || got.Payer == nil || got.Payer.Name != "Ion" {
			t.Errorf("Checkout = %+v, %v", got, err)
		}
		if page, err := c.Checkouts(ctx, client.ListOptions{Count: 5}); err != nil || page.TotalCount != 1 {
			t.Errorf("Checkouts = %+v, %v", page, err)
		}
		if s, err := c.CancelCheckout(ctx, co.CheckoutID); err != nil || s.Status != "Cancelled" {
			t.Errorf("CancelCheckout = %+v, %v", s, err)
		}

		// Payments and refunds.
		if p, err := c.Payment(ctx, paid.PayID); err != nil || p.Status != "Executed" || p.RefundableAmount != 10000 || p.PaymentEntryPoint != "API" {
			t.Errorf("Payment = %+v, %v", p, err)
		}
		if page, err := c.Payments(ctx, client.ListOptions{Count: 10}); err != nil || page.TotalCount != 2 {
			t.Errorf("Payments = %+v, %v", page, err)
		}
		part, err := c.Refund(ctx, paid.PayID, client.RefundRequest{Amount: money("25.00"), Reason: "partial"})
		if err != nil {
			t.Fatal(err)
		}
		settleRefunds(t, s)
		if got, err := c.RefundStatus(ctx, part.RefundID); err != nil || got.Status != "Accepted" || got.Amount != 2500 || got.RefundType != "Partial" ||
			got.ExecutedAt.IsZero() || got.RefundID != part.RefundID {
			t.Errorf("RefundStatus = %+v, %v", got, err)
		}
		if p, _ := c.Payment(ctx, paid.PayID); p.Status != "PartiallyRefunded" || p.RefundedAmount != 2500 {
			t.Errorf("after the refund: %+v", p)
		}

		// The callback log.
		cbRTP, _ := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: 100, Currency: "MDL", Description: "cb",
			ExpiresAt: exp, CallbackURL: "http://127.0.0.1:1/cb"})
		if _, err := c.TestAcceptRTP(ctx, cbRTP.RTPID, 100); err != nil {
			t.Fatal(err)
		}
		cbs, err := c.Callbacks(ctx, client.ListOptions{Count: 10, Filters: map[string]string{"objectId": cbRTP.RTPID}})
		if err != nil || cbs.TotalCount != 1 || cbs.Items[0].Event != "rtp.accepted" {
			t.Fatalf("Callbacks = %+v, %v", cbs, err)
		}
		if d, err := c.Callback(ctx, cbs.Items[0].CallbackID); err != nil || d.Body == "" || d.Headers["X-Signature"] == "" {
			t.Errorf("Callback = %+v, %v", d, err)
		}
		if r, err := c.ResendCallback(ctx, cbs.Items[0].CallbackID); err != nil || r.State != "Pending" {
			t.Errorf("ResendCallback = %+v, %v", r, err)
		}

		// The test clock.
		if clk, err := c.AdvanceSandboxClock(ctx, 2*time.Hour); err != nil || clk.OffsetSeconds != 7200 {
			t.Errorf("AdvanceSandboxClock = %+v, %v", clk, err)
		}
		if got, err := c.RTP(ctx, r2.RTPID); err != nil || got.Status != "Rejected" {
			t.Errorf("a rejected RTP after the advance: %+v, %v", got, err)
		}
		if clk, err := c.SandboxClock(ctx); err != nil || clk.Now.Before(time.Now().Add(119*time.Minute)) {
			t.Errorf("SandboxClock = %+v, %v", clk, err)
		}
		if clk, err := c.ResetSandboxClock(ctx); err != nil || clk.OffsetSeconds != 0 {
			t.Errorf("ResetSandboxClock = %+v, %v", clk, err)
		}

		// Errors are typed.
		_, err = c.RTP(ctx, "01a1fd38-56fa-7f9d-ba9b-1038a64df444")
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "23000" || apiErr.Args["rtpId"] == "" {
			t.Errorf("unknown RTP: %#v", err)
		}
		_, err = c.CreateRTP(ctx, client.RTPRequest{Alias: "1", Amount: 0, Currency: "MDL", ExpiresAt: exp})
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || len(apiErr.Errors) < 2 {
			t.Errorf("invalid RTP: %#v", err)
		}
		bad := client.New(srv.url, srv.creds.ClientID, "wrong")
		if _, err := bad.RTPs(ctx, client.ListOptions{}); !errors.As(err, &apiErr) || apiErr.Code != "11000" {
			t.Errorf("bad secret: %v", err)
		}
	})
}

// flaky is a proxy in front of payd that can answer for it.
type flaky struct {
	target  *url.URL
	proxy   *httputil.ReverseProxy
	tokens  atomic.Int64
	mu      sync.Mutex
	answers []func(w http.ResponseWriter, r *http.Request) bool // consumed in order; true: handled
	keys    []string
}

func newFlaky(t *testing.T, target string) *httptest.Server {
	u, _ := url.Parse(target)
	f := &flaky{target: u, proxy: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	flakies[srv.URL] = f
	return srv
}

var flakies = map[string]*flaky{}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/auth/token" {
		f.tokens.Add(1)
		time.Sleep(20 * time.Millisecond) // a slow fetch, so concurrent callers overlap
	}
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
	var next func(w http.ResponseWriter, r *http.Request) bool
	if len(f.answers) > 0 && r.URL.Path != "/v2/auth/token" {
		next, f.answers = f.answers[0], f.answers[1:]
	}
	f.mu.Unlock()
	if next != nil && next(w, r) {
		return
	}
	f.proxy.ServeHTTP(w, r)
}

func (f *flaky) push(a ...func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, a...)
}

// TestRetriesAreSafe: 503 and 429 (with Retry-After) are retried, a lost
// answer is retried with the same Idempotency-Key so the RTP is created
// once, other 4xx are not retried, and concurrent callers share one token
// fetch.
func TestRetriesAreSafe(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		srv := start(t, s)
		px := newFlaky(t, srv.url)
		f := flakies[px.URL]
		c := client.New(px.URL, srv.creds.ClientID, srv.creds.ClientSecret)
		ctx := context.Background()
		exp := time.Now().Add(time.Hour)

		// 20 concurrent first calls: one token fetch.
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.RTPs(ctx, client.ListOptions{Count: 1}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := f.tokens.Load(); n != 1 {
			t.Errorf("%d token fetches for 20 concurrent calls", n)
		}

		unavailable := func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"ok":false,"errors":[{"errorCode":"90009","errorMessage":"Service unavailable."}]}`, http.StatusServiceUnavailable)
			return true
		}
		limited := func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"ok":false,"errors":[{"errorCode":"90005","errorMessage":"Too many requests."}]}`, http.StatusTooManyRequests)
			return true
		}
		// The request reaches payd, then the connection drops before the answer.
		lost := func(w http.ResponseWriter, r *http.Request) bool {
			rec := httptest.NewRecorder()
			f.proxy.ServeHTTP(rec, r)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return true
		}
		f.push(unavailable, limited, lost)
		start := time.Now()
		r, err := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: 700, Currency: "MDL", Description: "retried", OrderID: "RETRY", ExpiresAt: exp})
		if err != nil {
			t.Fatalf("CreateRTP through 503, 429 and a lost answer: %v", err)
		}
		if time.Since(start) < time.Second {
			t.Error("Retry-After: 1 was not honoured")
		}
		page, _ := c.RTPs(ctx, client.ListOptions{Count: 10, Filters: map[string]string{"orderId": "RETRY"}})
		if page.TotalCount != 1 || page.Items[0].RTPID != r.RTPID {
			t.Errorf("a retried POST created %d RTPs", page.TotalCount)
		}
		f.mu.Lock()
		keys := f.keys[len(f.keys)-5 : len(f.keys)-1] // the four attempts of the create
		f.mu.Unlock()
		if keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] || keys[2] != keys[3] {
			t.Errorf("attempts carried Idempotency-Keys %q", keys)
		}

		// A 4xx is not retried.
		calls := 0
		f.push(func(w http.ResponseWriter, r *http.Request) bool { calls++; return false })
		_, err = c.CreateRTP(ctx, client.RTPRequest{Alias: "37360000001", Amount: 700, Currency: "MDL", Description: "x", ExpiresAt: exp})
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Code != "24006" || calls != 1 {
			t.Errorf("a 409 was retried or not typed: %v after %d calls", err, calls)
		}
		// A key given by the caller is used, and replays.
		kctx := client.WithIdempotencyKey(ctx, "order-77")
		a, err1 := c.CreateRTP(kctx, client.RTPRequest{Alias: "37369112221", Amount: 700, Currency: "MDL", Description: "k", ExpiresAt: exp})
		b, err2 := c.CreateRTP(kctx, client.RTPRequest{Alias: "37369112221", Amount: 700, Currency: "MDL", Description: "k", ExpiresAt: exp})
		if err1 != nil || err2 != nil || a.RTPID != b.RTPID {
			t.Errorf("the same key created %s and %s (%v, %v)", a.RTPID, b.RTPID, err1, err2)
		}
		// The retry time is bounded.
		c.MaxRetryTime = 300 * time.Millisecond
		down := func(w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		for i := 0; i < 50; i++ {
			f.push(down)
		}
		start = time.Now()
		if _, err := c.RTPs(ctx, client.ListOptions{}); !errors.As(err, &apiErr) || apiErr.Status != 503 {
			t.Errorf("after the retry time: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("gave up after %v", d)
		}
	})
}
