package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"payd"
	"payd/internal/browsertest"
	"payd/internal/httpapi"
	"payd/internal/rails/sandbox"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
	"payd/internal/web"
	"payd/internal/webhook"
	"payd/internal/worker"
)

// startPayd runs a sandbox payd on loopback with its delivery and refund
// loops, as `payd serve` does.
func startPayd(t *testing.T, s *sqlstore.Store) (string, *payd.Credentials) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	clock := payd.SystemClock{}
	cfg := httpapi.Config{Sandbox: true, PublicURL: base, AllowHTTPURLs: true, TokenRateClient: 10000, TokenRateAddr: 10000,
		RefundDelay: 100 * time.Millisecond}
	srv.Config.Handler = httpapi.New(cfg, s, clock, log, web.New(web.Config{Sandbox: true, PublicURL: base}, s, clock, log))
	srv.Start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	delivery := &worker.Delivery{Store: s, Client: webhook.NewClient(true), Clock: clock, Log: log, Owner: "shop-test"}
	refunds := &sandbox.Refunds{Store: s, Ledger: s, Clock: clock}
	for _, pass := range []worker.Pass{delivery.RunOnce, refunds.RunOnce} {
		wg.Add(1)
		go func() { defer wg.Done(); worker.Run(ctx, log, "test", 100*time.Millisecond, nil, 0, pass) }()
	}
	cr, err := s.CreateMerchant(context.Background(), sqlstore.MerchantOptions{Name: "Tea shop"}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return base, cr
}

// TestShopEndToEnd drives the shop in a real browser: buy, pay on payd's
// page with the test card, the order shows paid (from the verified
// callback), refund from the admin page, the refund callback marks it
// refunded.
func TestShopEndToEnd(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		ctx := browsertest.Context(t)
		paydURL, cr := startPayd(t, s)
		shopSrv := httptest.NewUnstartedServer(nil)
		shopURL := "http://" + shopSrv.Listener.Addr().String()
		shop := New(Config{PublicURL: shopURL, PaydURL: paydURL, ClientID: cr.ClientID, Secret: cr.ClientSecret, SignKey: cr.SignatureKey})
		shopSrv.Config.Handler = shop
		shopSrv.Start()
		defer shopSrv.Close()

		err := chromedp.Do(ctx,
			chromedp.Navigate(shopURL+"/"), chromedp.Click(chromedp.ID("buy-mug")),
			chromedp.WaitVisible(chromedp.ID("method-card")), chromedp.Click(chromedp.ID("method-card")),
			chromedp.WaitVisible(chromedp.ID("card-number")),
			chromedp.SendKeys(chromedp.ID("card-number"), payd.ApprovedCard),
			chromedp.SendKeys(chromedp.ID("card-expiry"), payd.ApprovedCardExpiry),
			chromedp.SendKeys(chromedp.ID("card-cvv"), payd.ApprovedCardCVV),
			chromedp.SendKeys(chromedp.ID("card-holder"), "Test Test"),
			chromedp.Click(chromedp.ID("card-pay")),
			chromedp.WaitVisible(chromedp.ID("order-status")),
		)
		if err != nil {
			t.Fatal(err)
		}
		waitText := func(url, id, want string) {
			t.Helper()
			var text string
			for i := 0; i < 100; i++ {
				if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID(id))); err != nil {
					t.Fatal(err)
				}
				text, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
				if err == nil && strings.TrimSpace(text) == want {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatalf("%s #%s shows %q, want %q", url, id, text, want)
		}
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		if !strings.HasPrefix(loc, shopURL+"/orders/ORD-1") {
			t.Fatalf("after paying the buyer is on %s", loc)
		}
		waitText(shopURL+"/orders/ORD-1", "order-status", "paid")
		if err := chromedp.Do(ctx, chromedp.Navigate(shopURL+"/orders"), chromedp.Click(chromedp.ID("refund-ORD-1")), chromedp.WaitNotPresent(chromedp.ID("refund-ORD-1"))); err != nil {
			t.Fatal(err)
		}
		waitText(shopURL+"/orders", "status-ORD-1", "refunded")
	})
}
