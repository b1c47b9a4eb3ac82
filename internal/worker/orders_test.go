package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// recordingRails takes orders as a connector would, keeping the order in
// which each object's orders arrived; it refuses an object's first
// delivery when told to, and holds each delivery a moment so that
// parallel deliveries overlap.
type recordingRails struct {
	mu          sync.Mutex
	got         map[string][]payd.OrderKind
	refuseOnce  map[string]bool
	inFlight    int
	maxInFlight int
}

func (r *recordingRails) Deliver(ctx context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	r.mu.Lock()
	if r.refuseOnce[o.ObjectID] {
		delete(r.refuseOnce, o.ObjectID)
		r.mu.Unlock()
		return payd.Taken{}, errors.New("connector answered 503")
	}
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
	r.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	r.mu.Lock()
	r.inFlight--
	r.got[o.ObjectID] = append(r.got[o.ObjectID], o.Kind)
	r.mu.Unlock()
	return payd.Taken{}, nil
}

// TestOrdersKeepEachObjectsOrder: RTPs and their cancels, delivered in
// parallel across RTPs, each RTP's pain.013 before its camt.055, also
// when the connector refused the pain.013 once; every order delivered once.
func TestOrdersKeepEachObjectsOrder(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		now := storetest.Epoch
		cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", IBAN: "MD24AG000225100013104168"}, now)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := s.Merchant(ctx, cr.MerchantID)
		rails := &recordingRails{got: map[string][]payd.OrderKind{}, refuseOnce: map[string]bool{}}
		var ids []string
		for i := 0; i < 20; i++ {
			amount, exp := payd.Money(100), now.Add(time.Hour)
			r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369000001", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "x"}, m.ID, now)
			if err := s.CreateRTP(ctx, m, r); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CancelRTP(ctx, m.ID, r.ID, "changed", now); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
			if i%5 == 0 {
				rails.refuseOnce[r.ID] = true
			}
		}
		clock := payd.NewFakeClock(now)
		o := &Orders{Store: s, Rails: rails, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "t", Parallel: 8}
		for i := 0; i < 10; i++ {
			if _, err := o.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)
		}
		for _, id := range ids {
			got := rails.got[id]
			if len(got) != 2 || got[0] != payd.OrderSendRTP || got[1] != payd.OrderCancelRTP {
				t.Errorf("RTP %s: orders arrived as %v", id, got)
			}
		}
		if n, _, err := s.PendingOrders(ctx, clock.Now()); err != nil || n != 0 {
			t.Errorf("%d orders still pending (%v)", n, err)
		}
		if rails.maxInFlight < 2 {
			t.Errorf("deliveries never overlapped (at most %d at once)", rails.maxInFlight)
		}
	})
}

// stoppingRails takes every order and ends the pass's context as it does,
// as a stop arriving during a delivery would.
type stoppingRails struct{ stop context.CancelFunc }

func (r stoppingRails) Deliver(context.Context, *payd.RailsOrder) (payd.Taken, error) {
	r.stop()
	return payd.Taken{}, nil
}

// TestOrdersTakenAtAStopAreMarked: orders the network took while the pass
// was being stopped are still recorded as delivered, not left leased to
// be sent again once their lease runs out.
func TestOrdersTakenAtAStopAreMarked(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		now := storetest.Epoch
		m := ordersShop(t, s, now)
		for range 3 {
			newRTP(t, s, m, now)
		}
		pass, stop := context.WithCancel(ctx)
		defer stop()
		o := &Orders{Store: s, Rails: stoppingRails{stop}, Clock: payd.NewFakeClock(now), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "t"}
		if n, err := o.RunOnce(pass); n != 3 || err != nil {
			t.Fatalf("the pass: %d orders, %v", n, err)
		}
		if n, _, err := s.PendingOrders(ctx, now.Add(time.Hour)); err != nil || n != 0 {
			t.Errorf("%d orders the network took still pending after the stop (%v)", n, err)
		}
	})
}

// refusingRails refuses every order for good, as an acquirer that will
// not make a reversal does.
type refusingRails struct{ calls int }

func (r *refusingRails) Deliver(context.Context, *payd.RailsOrder) (payd.Taken, error) {
	r.calls++
	return payd.Taken{}, fmt.Errorf("%w: acquirer answered 409 13117 Refund is not allowed", payd.ErrOrderRefused)
}

// TestRefusedOrderIsKeptFailed: a card reversal the acquirer refuses is
// not marked delivered: it is kept failed with the answer (counted by
// FailedOrders, the payd_rails_orders_failed gauge), logged as an error,
// and never sent again.
func TestRefusedOrderIsKeptFailed(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		now := storetest.Epoch
		cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", IBAN: "MD24AG000225100013104168"}, now)
		if err != nil {
			t.Fatal(err)
		}
		amount := payd.Money(12050)
		c := payd.NewCheckout(payd.CheckoutInput{Amount: &amount, Currency: "MDL", Language: "en"}, cr.MerchantID, time.Hour, now)
		if err := s.CreateCheckout(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SelectCheckoutMethod(ctx, c.ID, payd.MethodCard, func(*payd.Checkout) bool { return true }, "https://payd.example/checkout/"+c.ID, now); err != nil {
			t.Fatal(err)
		}
		claim, err := s.ClaimCardSession(ctx, c.ID, cr.MerchantID, now, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.OpenCardSession(ctx, claim.ID, payd.CardSession{ID: "acq-r", URL: "https://acquirer.example/pay/acq-r"}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelCheckout(ctx, cr.MerchantID, c.ID, now); err != nil {
			t.Fatal(err)
		}
		if _, p, err := s.CardPaid(ctx, c.ID, payd.CardResult{Approved: true, Reference: "acq-r", Amount: &amount, Currency: "MDL"}, now); err != nil || p != nil {
			t.Fatalf("approval of a cancelled checkout: %v %+v", err, p)
		}
		var logs bytes.Buffer
		rails := &refusingRails{}
		clock := payd.NewFakeClock(now)
		o := &Orders{Store: s, Rails: rails, Clock: clock, Log: slog.New(slog.NewTextHandler(&logs, nil)), Owner: "t"}
		for range 3 {
			if _, err := o.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
		}
		if rails.calls != 1 {
			t.Errorf("the refused reversal was sent %d times, want once", rails.calls)
		}
		if n, err := s.FailedOrders(ctx); err != nil || n != 1 {
			t.Errorf("failed orders %d %v, want 1", n, err)
		}
		if n, _, err := s.PendingOrders(ctx, clock.Now()); err != nil || n != 0 {
			t.Errorf("pending orders %d %v, want 0", n, err)
		}
		if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "13117") {
			t.Errorf("no error log line with the acquirer's answer:\n%s", logs.String())
		}
	})
}
