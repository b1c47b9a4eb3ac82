package sqlstore_test

import (
	"database/sql"
	"errors"
	"fmt"
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
	c, err := s.SelectCheckoutMethod(ctx, c.ID, payd.MethodCard, func(*payd.Checkout) bool { return true }, "https://payd.example/checkout/"+c.ID, now)
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
		later := now.Add(31 * time.Second)
		claim, err := s.ClaimCardSession(ctx, c.ID, m.ID, later, 30*time.Second)
		if !claim.Mine {
			t.Fatalf("a claim whose lease passed was not taken over: %+v %v", claim, err)
		}
		// The acquirer failed: until the retry time every claim is told so
		// (no request asks the acquirer again), then one is given it.
		if err := s.DropCardSession(ctx, claim.ID, later.Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Duration{0, time.Second, 4999 * time.Millisecond} {
			if claim, err := s.ClaimCardSession(ctx, c.ID, m.ID, later.Add(at), 30*time.Second); err != nil || claim.Mine || !claim.RetryAt.Equal(later.Add(5*time.Second)) {
				t.Errorf("claim %v after a failed start: %+v %v, want told to retry at +5s", at, claim, err)
			}
		}
		claim, err = s.ClaimCardSession(ctx, c.ID, m.ID, later.Add(5*time.Second), 30*time.Second)
		if err != nil || !claim.Mine || !claim.RetryAt.IsZero() {
			t.Fatalf("claim once the retry is due: %+v %v", claim, err)
		}
		if err := s.OpenCardSession(ctx, claim.ID, payd.CardSession{ID: "acq-1", URL: "https://acquirer.example/pay/acq-1"}, now); err != nil {
			t.Fatal(err)
		}
		claim, err = s.ClaimCardSession(ctx, c.ID, m.ID, now, 30*time.Second)
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
		s.SetRails("iso20022")
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
		if err := s.CloseCardSession(ctx, "acq-abandoned", payd.SessionAbandoned, now); err != nil {
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

// TestCardSessionAskedOnceAWhile: the payer's pages are granted an ask of
// the acquirer about an open session at most once every interval, however
// many ask at once; none for a checkout without an open session.
func TestCardSessionAskedOnceAWhile(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		c := cardCheckout(t, s, m, now)
		if id, err := s.CardSessionToAsk(ctx, c.ID, now, 5*time.Second); err != nil || id != "" {
			t.Errorf("no session open: %q %v", id, err)
		}
		openSession(t, s, c, "acq-ask", now)
		var mu sync.Mutex
		granted := 0
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, err := s.CardSessionToAsk(ctx, c.ID, now, 5*time.Second)
				if err != nil {
					t.Error(err)
				}
				if id != "" {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if granted != 1 {
			t.Errorf("%d of 20 concurrent asks granted, want 1", granted)
		}
		if id, _ := s.CardSessionToAsk(ctx, c.ID, now.Add(4*time.Second), 5*time.Second); id != "" {
			t.Errorf("asked again after 4 s")
		}
		if id, _ := s.CardSessionToAsk(ctx, c.ID, now.Add(5*time.Second), 5*time.Second); id != "acq-ask" {
			t.Errorf("not granted after 5 s: %q", id)
		}
	})
}

// TestLateCardApprovals: an approval of a session closed without a charge
// (timed out, declined, returned) is never dropped: it becomes the
// payment when the checkout can still take it, else a reversal order, in
// the transaction that closes the session; a decline after the close, or
// an approval of a session whose charge was recorded, changes nothing. An
// approval whose amount the acquirer did not say is given back.
func TestLateCardApprovals(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		amount := payd.Money(12050)
		approved := func(id string) payd.CardResult {
			return payd.CardResult{Approved: true, Reference: id, RRN: "", ApprovalCode: "654321", Mask: "411111******1111",
				Amount: &amount, Currency: "MDL"}
		}
		reversals := func() int {
			os, err := s.ClaimOrders(ctx, "test", now.Add(time.Hour), time.Millisecond, 100)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, o := range os {
				if o.Kind == payd.OrderCardReverse {
					n++
				}
			}
			return n
		}
		payments := func(c *payd.Checkout) int {
			ps, _, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: m.ID, Count: 100})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range ps {
				if p.CheckoutID == c.ID && !p.Failed {
					n++
				}
			}
			return n
		}

		// Timed out, then approved: the checkout can still take it.
		c := cardCheckout(t, s, m, now)
		openSession(t, s, c, "acq-timedout", now)
		if err := payd.ApplyCardOutcome(ctx, s, c.ID, payd.CardOutcome{State: payd.CardTimedOut, Result: payd.CardResult{Reference: "acq-timedout"}}, now); err != nil {
			t.Fatal(err)
		}
		if err := payd.ApplyCardOutcome(ctx, s, c.ID, payd.CardOutcome{State: payd.CardDeclined, Result: payd.CardResult{Reference: "acq-timedout"}}, now); err != nil {
			t.Errorf("a decline after the timeout: %v", err)
		}
		got, p, err := s.CardPaid(ctx, c.ID, approved("acq-timedout"), now)
		if err != nil || p == nil || got.Status != payd.CheckoutCompleted {
			t.Fatalf("approval after a timeout: %v %+v %+v", err, got, p)
		}
		if _, _, err := s.CardPaid(ctx, c.ID, approved("acq-timedout"), now); !errors.Is(err, payd.ErrDuplicate) {
			t.Errorf("the approval again: %v, want ErrDuplicate", err)
		}
		if n := payments(c); n != 1 {
			t.Errorf("%d payments of the timed-out checkout, want 1", n)
		}

		// Declined (the checkout failed), then approved: given back.
		c2 := cardCheckout(t, s, m, now)
		openSession(t, s, c2, "acq-declined", now)
		if got, _, err := s.CardPaid(ctx, c2.ID, payd.CardResult{Reference: "acq-declined"}, now); err != nil || got.Status != payd.CheckoutFailed {
			t.Fatalf("declined: %v %+v", err, got)
		}
		if got, p, err := s.CardPaid(ctx, c2.ID, approved("acq-declined"), now); err != nil || p != nil || got.Status != payd.CheckoutFailed {
			t.Errorf("approval after a decline: %v %+v %+v, want a reversal and the checkout left Failed", err, got, p)
		}
		if _, _, err := s.CardPaid(ctx, c2.ID, approved("acq-declined"), now); !errors.Is(err, payd.ErrDuplicate) {
			t.Errorf("the approval after a decline again: %v, want ErrDuplicate", err)
		}

		// Timed out, the checkout cancelled meanwhile, then approved: given back.
		c3 := cardCheckout(t, s, m, now)
		openSession(t, s, c3, "acq-cancelled", now)
		if err := s.CloseCardSession(ctx, "acq-cancelled", payd.SessionTimedOut, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelCheckout(ctx, m.ID, c3.ID, now); err != nil {
			t.Fatal(err)
		}
		if got, p, err := s.CardPaid(ctx, c3.ID, approved("acq-cancelled"), now); err != nil || p != nil || got.Status != payd.CheckoutCancelled {
			t.Errorf("approval after a timeout and a cancel: %v %+v %+v", err, got, p)
		}

		// An approval without an amount is not taken on trust.
		c4 := cardCheckout(t, s, m, now)
		openSession(t, s, c4, "acq-no-amount", now)
		noAmount := approved("acq-no-amount")
		noAmount.Amount = nil
		if got, p, err := s.CardPaid(ctx, c4.ID, noAmount, now); err != nil || p != nil || got.Status != payd.CheckoutMethodSelected {
			t.Errorf("approval without an amount: %v %+v %+v, want a reversal", err, got, p)
		}
		if n := reversals(); n != 3 {
			t.Errorf("%d reversal orders, want 3 (declined, cancelled, no amount)", n)
		}

		// Charged and given back at the acquirer before payd knew: no
		// payment, and the checkout may be paid again.
		c5 := cardCheckout(t, s, m, now)
		openSession(t, s, c5, "acq-returned", now)
		if err := payd.ApplyCardOutcome(ctx, s, c5.ID, payd.CardOutcome{State: payd.CardReturned, Result: approved("acq-returned")}, now); err != nil {
			t.Fatal(err)
		}
		if n := payments(c5); n != 0 {
			t.Errorf("%d payments of a charge returned before payd knew", n)
		}
		if claim, err := s.ClaimCardSession(ctx, c5.ID, m.ID, now, 30*time.Second); err != nil || !claim.Mine {
			t.Errorf("a new session after a returned one: %+v %v", claim, err)
		}
	})
}

// TestCardApprovalRacesQRCredit: a card approval and a payer's credit of
// the same checkout's QR, run at once, take their locks in one order (the
// QR, then the checkout): on PostgreSQL neither is ended as a deadlock.
// Exactly one pays the checkout; the other is refused (the credit) or
// given back (the card).
func TestCardApprovalRacesQRCredit(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		amount := payd.Money(12050)
		for i := range 20 {
			c := payd.NewCheckout(payd.CheckoutInput{Amount: &amount, Currency: "MDL", Language: "en"}, m.ID, time.Hour, now)
			if err := s.CreateCheckout(ctx, c); err != nil {
				t.Fatal(err)
			}
			takes := func(*payd.Checkout) bool { return true }
			c, err := s.SelectCheckoutMethod(ctx, c.ID, payd.MethodMiaQr, takes, "https://payd.example/checkout/"+c.ID, now)
			if err != nil || c.QRID == "" {
				t.Fatalf("MiaQr: %v %+v", err, c)
			}
			if c, err = s.SelectCheckoutMethod(ctx, c.ID, payd.MethodCard, takes, "https://payd.example/checkout/"+c.ID, now); err != nil {
				t.Fatal(err)
			}
			ref := fmt.Sprintf("acq-race-%d", i)
			openSession(t, s, c, ref, now)
			var wg sync.WaitGroup
			var cardErr, creditErr error
			var cardPay, creditPay *payd.Payment
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, cardPay, cardErr = s.CardPaid(ctx, c.ID, payd.CardResult{Approved: true, Reference: ref, Amount: &amount, Currency: "MDL"}, now)
			}()
			go func() {
				defer wg.Done()
				creditPay, creditErr = s.Credit(ctx, payd.Credit{TargetID: c.QRID, Amount: &amount, Currency: "MDL", Reference: "RACE" + ref,
					Routed: true, CreditorIBAN: m.IBAN}, now)
			}()
			wg.Wait()
			var refused *payd.Refused
			if cardErr != nil || creditErr != nil && !errors.As(creditErr, &refused) {
				t.Fatalf("race %d: card %v, credit %v", i, cardErr, creditErr)
			}
			if (cardPay != nil) == (creditPay != nil) {
				t.Fatalf("race %d: card payment %v, credit payment %v: want exactly one", i, cardPay != nil, creditPay != nil)
			}
		}
	})
}

// TestCardLocksInOneOrder_postgres: with a payer's credit of a checkout's
// QR holding the QR's lock (as Credit takes it first) and about to lock
// the checkout, a card approval of the same checkout waits for the QR
// before it locks the checkout: the credit's transaction gets the checkout
// at once, and neither is ended as a deadlock. (Locking the checkout first
// made PostgreSQL end one of them after its deadlock_timeout.)
func TestCardLocksInOneOrder_postgres(t *testing.T) {
	s, dbURL := storetest.Postgres(t)
	m, _ := newMerchant(t, s, 0)
	now := storetest.Epoch
	amount := payd.Money(12050)
	c := payd.NewCheckout(payd.CheckoutInput{Amount: &amount, Currency: "MDL", Language: "en"}, m.ID, time.Hour, now)
	if err := s.CreateCheckout(ctx, c); err != nil {
		t.Fatal(err)
	}
	takes := func(*payd.Checkout) bool { return true }
	c, err := s.SelectCheckoutMethod(ctx, c.ID, payd.MethodMiaQr, takes, "https://payd.example/checkout/"+c.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = s.SelectCheckoutMethod(ctx, c.ID, payd.MethodCard, takes, "https://payd.example/checkout/"+c.ID, now); err != nil {
		t.Fatal(err)
	}
	openSession(t, s, c, "acq-order", now)
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	credit, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer credit.Rollback()
	if _, err := credit.ExecContext(ctx, "SELECT 1 FROM qrs WHERE id = $1 FOR UPDATE", c.QRID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.CardPaid(ctx, c.ID, payd.CardResult{Approved: true, Reference: "acq-order", Amount: &amount, Currency: "MDL"}, now)
		done <- err
	}()
	// Wait until the approval is blocked on a lock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").
			Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the card approval never waited for the QR's lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := credit.ExecContext(ctx, "SELECT 1 FROM checkouts WHERE id = $1 FOR UPDATE", c.ID); err != nil {
		t.Fatalf("the credit's lock of the checkout: %v", err)
	}
	if err := credit.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("the card approval: %v", err)
	}
}
