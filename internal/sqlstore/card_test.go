package sqlstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// cardCheckout is a checkout whose payer chose Card.
func cardCheckout(t *testing.T, s *sqlstore.Store, m *payd.Merchant, now time.Time) *payd.Checkout {
	t.Helper()
	return cardCheckoutTo(t, s, m, now, "")
}

// cardCheckoutTo is cardCheckout with its callbacks sent to callbackURL.
func cardCheckoutTo(t *testing.T, s *sqlstore.Store, m *payd.Merchant, now time.Time, callbackURL string) *payd.Checkout {
	t.Helper()
	amount := payd.Money(12050)
	c := payd.NewCheckout(payd.CheckoutInput{Amount: &amount, Currency: "MDL", Language: "en", CallbackURL: callbackURL}, m.ID, time.Hour, now)
	if err := s.CreateCheckout(ctx, c); err != nil {
		t.Fatal(err)
	}
	c, err := s.SelectCheckoutMethod(ctx, c.ID, payd.MethodCard, true, "https://payd.example/checkout/"+c.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openSession claims and opens the checkout's card session as acquirer id.
func openSession(t *testing.T, s *sqlstore.Store, c *payd.Checkout, id string, now time.Time) {
	t.Helper()
	claim, err := s.ClaimCardSession(ctx, c.ID, c.MerchantID, now, 30*time.Second)
	if err != nil || !claim.Mine {
		t.Fatalf("claim: %+v %v", claim, err)
	}
	if err := s.OpenCardSession(ctx, claim.ID, payd.CardSession{ID: id, URL: "https://acquirer.example/pay/" + id}, now); err != nil {
		t.Fatal(err)
	}
}

// TestCardSessionIsCreatedOnce: concurrent claims of one checkout's card
// session give it to one caller; the others see it being created, then
// its page; a claim whose holder gave up (dropped) or died (lease passed)
// is claimed again.
func TestCardSessionIsCreatedOnce(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		c := cardCheckout(t, s, m, now)
		var mu sync.Mutex
		mine := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				claim, err := s.ClaimCardSession(ctx, c.ID, m.ID, now, 30*time.Second)
				if errors.Is(err, payd.ErrConflict) { // lost an insert race; the caller asks again
					claim, err = s.ClaimCardSession(ctx, c.ID, m.ID, now, 30*time.Second)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if claim.Mine {
					mu.Lock()
					mine++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if mine != 1 {
			t.Fatalf("%d of 8 concurrent claims were told to create the acquirer's payment", mine)
		}
		if claim, _ := s.ClaimCardSession(ctx, c.ID, m.ID, now.Add(31*time.Second), 30*time.Second); !claim.Mine {
			t.Errorf("a claim whose lease passed was not taken over: %+v", claim)
		} else if err := s.DropCardSession(ctx, claim.ID); err != nil {
			t.Fatal(err)
		}
		openSession(t, s, c, "acq-1", now)
		claim, err := s.ClaimCardSession(ctx, c.ID, m.ID, now, 30*time.Second)
		if err != nil || claim.Mine || claim.URL != "https://acquirer.example/pay/acq-1" {
			t.Errorf("claim of an open session: %+v %v; want its page", claim, err)
		}
	})
}

// TestCardCallbackHanded: with callbacks handed over, a card payment's
// callback is written leased to the instance and handed to its delivery
// in memory, as an RTP's or a QR's is: another instance cannot claim it.
func TestCardCallbackHanded(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := storetest.Epoch
		s.HandCallbacks("a", 30*time.Second, payd.NewFakeClock(now))
		m, _ := newMerchant(t, s, 0)
		amount := payd.Money(12050)
		c := cardCheckoutTo(t, s, m, now, "https://merchant.example/cb")
		openSession(t, s, c, "acq-handed", now)
		if _, p, err := s.CardPaid(ctx, c.ID, payd.CardResult{Approved: true, Reference: "acq-handed", RRN: "123456789013",
			ApprovalCode: "654321", Mask: "411111******1111", Amount: &amount, Currency: "MDL"}, now); err != nil || p == nil {
			t.Fatalf("approved: %v %+v", err, p)
		}
		if st := s.HandedCallbackStats(); st.Handed != 1 || st.Queued != 1 {
			t.Errorf("handed callbacks' stats = %+v, want the card payment's callback handed", st)
		}
		if got, err := s.ClaimCallbacks(ctx, "b", now, 30*time.Second, 10); err != nil || len(got) != 0 {
			t.Errorf("b claimed %d handed callbacks (%v)", len(got), err)
		}
		if got, err := s.ClaimCallbacks(ctx, "b", now.Add(31*time.Second), 30*time.Second, 10); err != nil || len(got) != 1 ||
			got[0].Event != payd.EventCheckoutCompleted {
			t.Errorf("b claimed %d callbacks after a's lease (%v), want the checkout's completion", len(got), err)
		}
	})
}

// TestHostedCardOutcomes: an acquirer's outcome applies once through
// CardPaid; an approval for a checkout that moved on, or for another
// amount, is given back (a reversal order) and leaves the checkout; a
// late approval of an abandoned session still counts.
func TestHostedCardOutcomes(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRailsOrders(true)
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		amount := payd.Money(12050)
		approved := func(id string) payd.CardResult {
			return payd.CardResult{Approved: true, Reference: id, RRN: "123456789012", ApprovalCode: "654321", Mask: "411111******1111",
				Amount: &amount, Currency: "MDL"}
		}
		orders := func() map[payd.OrderKind]int {
			os, err := s.ClaimOrders(ctx, "test", now.Add(time.Hour), time.Millisecond, 100)
			if err != nil {
				t.Fatal(err)
			}
			out := map[payd.OrderKind]int{}
			for _, o := range os {
				out[o.Kind]++
			}
			return out
		}

		c := cardCheckout(t, s, m, now)
		openSession(t, s, c, "acq-ok", now)
		got, p, err := s.CardPaid(ctx, c.ID, approved("acq-ok"), now)
		if err != nil || got.Status != payd.CheckoutCompleted || p.ReferenceNumber != "123456789012" || p.NetworkRef != "acq-ok" || p.ApprovalCode != "654321" {
			t.Fatalf("approved: %v %+v %+v", err, got, p)
		}
		if _, _, err := s.CardPaid(ctx, c.ID, approved("acq-ok"), now); !errors.Is(err, payd.ErrDuplicate) {
			t.Errorf("the same outcome again: %v, want ErrDuplicate", err)
		}
		if ps, _, _ := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: m.ID, Count: 10}); len(ps) != 1 {
			t.Errorf("%d payments after an outcome applied twice", len(ps))
		}

		c2 := cardCheckout(t, s, m, now)
		openSession(t, s, c2, "acq-declined", now)
		if got, p, err := s.CardPaid(ctx, c2.ID, payd.CardResult{Reference: "acq-declined", Mask: "400000******0002"}, now); err != nil ||
			got.Status != payd.CheckoutFailed || !p.Failed {
			t.Errorf("declined: %v %+v", err, got)
		}

		c3 := cardCheckout(t, s, m, now)
		openSession(t, s, c3, "acq-late", now)
		if _, err := s.CancelCheckout(ctx, m.ID, c3.ID, now); err != nil {
			t.Fatal(err)
		}
		got, p, err = s.CardPaid(ctx, c3.ID, approved("acq-late"), now)
		if err != nil || p != nil || got.Status != payd.CheckoutCancelled {
			t.Errorf("approved after the cancel: %v %+v %+v", err, got, p)
		}

		c4 := cardCheckout(t, s, m, now)
		openSession(t, s, c4, "acq-amount", now)
		other := approved("acq-amount")
		less := payd.Money(100)
		other.Amount = &less
		if got, p, err := s.CardPaid(ctx, c4.ID, other, now); err != nil || p != nil || got.Status != payd.CheckoutMethodSelected {
			t.Errorf("approved for another amount: %v %+v %+v", err, got, p)
		}
		if o := orders(); o[payd.OrderCardReverse] != 2 {
			t.Errorf("orders %v: want the two charges no checkout took reversed", o)
		}

		c5 := cardCheckout(t, s, m, now)
		openSession(t, s, c5, "acq-abandoned", now)
		if err := s.CloseCardSession(ctx, "acq-abandoned", "abandoned", now); err != nil {
			t.Fatal(err)
		}
		// (Its RRN is the first payment's: references are unique, so payd draws one.)
		if got, p, err := s.CardPaid(ctx, c5.ID, approved("acq-abandoned"), now); err != nil || p == nil || got.Status != payd.CheckoutCompleted ||
			p.ReferenceNumber == "" || p.ReferenceNumber == "123456789012" {
			t.Errorf("a late approval of an abandoned session: %v %+v %+v", err, got, p)
		}
		if _, _, err := s.CardPaid(ctx, c5.ID, approved("acq-abandoned"), now); !errors.Is(err, payd.ErrDuplicate) {
			t.Errorf("the late approval again: %v", err)
		}
		if _, _, err := s.CardPaid(ctx, c5.ID, approved("acq-unknown"), now); !errors.Is(err, payd.ErrNotFound) {
			t.Errorf("an outcome for a session payd never opened: %v", err)
		}
	})
}
