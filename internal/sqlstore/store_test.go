package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/seed"
	"payd/internal/sqlstore/storetest"
	"payd/internal/worker"
)

var ctx = context.Background()

func newMerchant(t *testing.T, s *sqlstore.Store, rate int) (*payd.Merchant, *payd.Credentials) {
	t.Helper()
	c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", CommissionBP: rate}, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Merchant(ctx, c.MerchantID)
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		applied, err := s.Migrate(ctx, storetest.Epoch)
		if err != nil || len(applied) != 0 {
			t.Fatalf("second Migrate = %v, %v; want nothing applied", applied, err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMerchantCredentials(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, c := newMerchant(t, s, 0)
		if m.SecretHash == c.ClientSecret || !payd.SecretMatches(c.ClientSecret, m.SecretHash) {
			t.Fatal("secret not stored as its hash")
		}
		now := storetest.Epoch
		tok, err := s.IssueToken(ctx, m, 300*time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Authenticate(ctx, tok, now.Add(299*time.Second))
		if err != nil || got.ID != m.ID {
			t.Fatalf("Authenticate = %v, %v", got, err)
		}
		if _, err := s.Authenticate(ctx, tok, now.Add(300*time.Second)); !errors.Is(err, payd.ErrNotFound) {
			t.Errorf("expired token: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Authenticate(ctx, tok+"x", now); !errors.Is(err, payd.ErrNotFound) {
			t.Errorf("altered token: err = %v", err)
		}
		rot, err := s.RotateSecret(ctx, c.ClientID, now)
		if err != nil || rot.ClientSecret == c.ClientSecret {
			t.Fatalf("RotateSecret = %v, %v", rot, err)
		}
		if _, err := s.Authenticate(ctx, tok, now); !errors.Is(err, payd.ErrNotFound) {
			t.Errorf("token after rotation: err = %v, want ErrNotFound", err)
		}
		m2, _ := s.Merchant(ctx, m.ID)
		if payd.SecretMatches(c.ClientSecret, m2.SecretHash) || !payd.SecretMatches(rot.ClientSecret, m2.SecretHash) {
			t.Error("rotation did not replace the secret")
		}
		tok2, _ := s.IssueToken(ctx, m2, time.Minute, now)
		if _, err := s.Authenticate(ctx, tok2, now); err != nil {
			t.Errorf("token issued after rotation: %v", err)
		}
	})
}

func newRTP(t *testing.T, s *sqlstore.Store, m *payd.Merchant, alias string, now time.Time) *payd.RTP {
	t.Helper()
	return newDescribedRTP(t, s, m, alias, "Order", now)
}

// newDescribedRTP is newRTP with this description.
func newDescribedRTP(t *testing.T, s *sqlstore.Store, m *payd.Merchant, alias, description string, now time.Time) *payd.RTP {
	t.Helper()
	amount, exp := payd.Money(5000), now.Add(time.Hour)
	r, err := payd.NewRTP(payd.RTPInput{Alias: alias, Amount: &amount, ExpiresAt: &exp, Currency: "MDL",
		Description: description, OrderID: "o-1", CallbackURL: "https://merchant.example/cb"}, m.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRTP(ctx, m, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRTPAcceptWritesPaymentAndCallbackTogether(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 150)
		now := storetest.Epoch
		r := newRTP(t, s, m, "37369112221", now)
		got, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != payd.RTPAccepted || p.Commission != 75 || p.ReferenceNumber != "MIA000000000001" {
			t.Errorf("accept = %+v, payment %+v", got, p)
		}
		cbs, err := s.Callbacks(ctx, payd.CallbackPending, 10)
		if err != nil || len(cbs) != 1 || cbs[0].SubjectID != p.ID || cbs[0].Event != payd.EventRTPAccepted {
			t.Fatalf("callbacks = %v, %v", cbs, err)
		}
		// A second acceptance is refused and writes nothing.
		if _, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now.Add(2*time.Second)); !payd.IsCode(err, payd.CodeRTPState) {
			t.Errorf("second accept: %v", err)
		}
		if cbs, _ := s.Callbacks(ctx, "", 10); len(cbs) != 1 {
			t.Errorf("callbacks after refused accept = %d", len(cbs))
		}
	})
}

func TestRTPConcurrentAcceptsMakeOnePayment(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		r := newRTP(t, s, m, "37369112221", now)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case payd.IsCode(err, payd.CodeRTPState) || errors.Is(err, payd.ErrConflict):
					refused++
				default:
					t.Errorf("accept: %v", err)
				}
			}()
		}
		wg.Wait()
		ps, total, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: m.ID})
		if ok != 1 || refused != 19 || err != nil || total != 1 || len(ps) != 1 {
			t.Errorf("ok=%d refused=%d payments=%d (%v)", ok, refused, total, err)
		}
	})
}

func TestRefundCapUnderConcurrency(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		r := newRTP(t, s, m, "37369112221", now)
		_, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refundID := 0, ""
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rf, err := s.CreateRefund(ctx, m.ID, p.ID, payd.RefundInput{Reason: "r"}, now, time.Second)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ok++
					refundID = rf.ID
				} else if !payd.IsCode(err, payd.CodeAlreadyRefunded) {
					t.Errorf("refund: %v", err)
				}
			}()
		}
		wg.Wait()
		got, _ := s.Payment(ctx, m.ID, p.ID)
		if ok != 1 || got.RequestedRefund != p.Amount {
			t.Fatalf("ok=%d requested=%v", ok, got.RequestedRefund)
		}
		// The processor settles it: payment Refunded, RTP Refunded, callback queued.
		if _, err := s.SettleRefund(ctx, refundID, payd.RefundAccepted, now.Add(time.Second)); err != nil {
			t.Fatalf("SettleRefund: %v", err)
		}
		got, _ = s.Payment(ctx, m.ID, p.ID)
		rt, _ := s.RTP(ctx, m.ID, r.ID, now)
		if got.Status() != payd.PaymentRefunded || rt.Status != payd.RTPRefunded || got.LastRefundedAt.IsZero() {
			t.Errorf("after settle: payment %s, rtp %s", got.Status(), rt.Status)
		}
		cbs, _ := s.Callbacks(ctx, payd.CallbackPending, 10)
		if len(cbs) != 2 || cbs[0].Event != payd.EventRefundAccepted {
			t.Errorf("callbacks = %d, first %v", len(cbs), cbs)
		}
	})
}

// TestRefundCallbackHanded: with callbacks handed over, a refund's
// settlement writes its callback leased to the instance and hands it to its
// delivery in memory, as the payment's was: another instance cannot claim
// it within the lease.
func TestRefundCallbackHanded(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := storetest.Epoch
		s.HandCallbacks("a", 30*time.Second, payd.NewFakeClock(now))
		m, _ := newMerchant(t, s, 0)
		r := newRTP(t, s, m, "37369112221", now)
		_, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := s.CreateRefund(ctx, m.ID, p.ID, payd.RefundInput{Reason: "r"}, now, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleRefund(ctx, rf.ID, payd.RefundAccepted, now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if st := s.HandedCallbackStats(); st.Handed != 2 || st.Queued != 2 {
			t.Errorf("handed callbacks' stats = %+v, want the payment's and the refund's handed", st)
		}
		if got, err := s.ClaimCallbacks(ctx, "b", now.Add(time.Second), 30*time.Second, 10); err != nil || len(got) != 0 {
			t.Errorf("b claimed %d handed callbacks (%v)", len(got), err)
		}
		cbs, _ := s.Callbacks(ctx, payd.CallbackPending, 10)
		if len(cbs) != 2 || cbs[0].Event != payd.EventRefundAccepted {
			t.Errorf("callbacks = %d, first %v", len(cbs), cbs)
		}

		// A refund the network settles as it takes its order (an acquirer
		// answers at once): the settlement's callback is handed too.
		s.SetRails("iso20022")
		r2 := newRTP(t, s, m, "37369112222", now)
		_, p2, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r2.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateRefund(ctx, m.ID, p2.ID, payd.RefundInput{Reason: "r"}, now, time.Second); err != nil {
			t.Fatal(err)
		}
		os, err := s.ClaimOrders(ctx, "a", now.Add(time.Hour), time.Minute, 100)
		var refund *payd.RailsOrder
		for _, o := range os {
			if o.Kind.RefundKind() {
				refund = o
			}
		}
		if err != nil || refund == nil {
			t.Fatalf("the refund's order: %v (%d claimed)", err, len(os))
		}
		if err := s.OrderDelivered(ctx, refund, payd.Taken{Refund: payd.RefundAccepted}, "a", now.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if st := s.HandedCallbackStats(); st.Handed != 4 {
			t.Errorf("handed callbacks' stats = %+v, want the second payment's and its refund's handed too", st)
		}
		if got, err := s.ClaimCallbacks(ctx, "b", now.Add(2*time.Second), 30*time.Second, 10); err != nil || len(got) != 0 {
			t.Errorf("b claimed %d handed callbacks (%v)", len(got), err)
		}
	})
}

func TestExpireRTPs(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		r := newRTP(t, s, m, "37369112221", now)
		later := r.ExpiresAt.Add(time.Second)
		got, _ := s.RTP(ctx, m.ID, r.ID, later)
		if got.Status != payd.RTPExpired || !got.UpdatedAt.Equal(r.ExpiresAt) {
			t.Errorf("lazy read = %s at %v", got.Status, got.UpdatedAt)
		}
		if n, err := s.ExpireRTPs(ctx, later, 100); err != nil || n != 1 {
			t.Fatalf("ExpireRTPs = %d, %v", n, err)
		}
		got, _ = s.RTP(ctx, m.ID, r.ID, now) // even read "in the past", the row now says Expired
		if got.Status != payd.RTPExpired {
			t.Errorf("stored status = %s", got.Status)
		}
	})
}

// TestSecretsAreRandomV4: new client secrets and signature keys are UUIDv4,
// sharing no timestamp bits with the clientId (they used to be UUIDv7).
func TestSecretsAreRandomV4(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "v4"}, storetest.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		rot, err := s.RotateSecret(ctx, c.ClientID, storetest.Epoch)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"clientSecret": c.ClientSecret, "signatureKey": c.SignatureKey, "rotated secret": rot.ClientSecret} {
			if _, ok := payd.ParseID(v); !ok || v[14] != '4' || v[:8] == c.ClientID[:8] {
				t.Errorf("%s %s is not a random UUIDv4 independent of clientId %s", name, v, c.ClientID)
			}
		}
	})
}

// TestRTPCountsKept: the counters that answer an unfiltered list's total
// (migration 015) equal the merchant's rows after every way RTPs are
// inserted: one create, concurrent creates (a shared statement on
// PostgreSQL), bulk seeding, and a shared statement that fails and
// retries its rows one by one, whose refused row is counted nowhere.
func TestRTPCountsKept(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, url string) {
		now := storetest.Epoch
		a, _ := newMerchant(t, s, 100)
		b, _ := newMerchant(t, s, 100)
		check := func(when string) {
			t.Helper()
			for _, m := range []*payd.Merchant{a, b} {
				var rows int64
				err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
					rows, err = w.Count(ctx, "SELECT COUNT(*) FROM rtps WHERE merchant_id = ?", m.ID)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				_, total, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m.ID, Count: 5}, now)
				if err != nil {
					t.Fatal(err)
				}
				if int64(total) != rows {
					t.Fatalf("%s: the list's total is %d, the merchant has %d RTPs", when, total, rows)
				}
			}
		}
		check("before any")
		newRTP(t, s, a, "37369000001", now)
		check("after one create")
		concurrently(t, 32, func(g int) error {
			m := a
			if g%3 == 0 {
				m = b
			}
			return createRTPs(s, m, 5, now, nil)
		})
		check("after concurrent creates")
		if err := seed.RTPs(ctx, s.WriteDB(), s.Engine() == sqlstore.Postgres, []string{a.ID, b.ID}, 1001, now); err != nil {
			t.Fatal(err)
		}
		check("after seeding")
		if strings.HasPrefix(url, "postgres") && !s.Plain() { // the RTP inserter's shared statement (coalesce.go)
			var rs []*payd.RTP
			for _, m := range []*payd.Merchant{a, b, a} {
				r, err := unsavedRTP(m, now)
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, r)
			}
			rs[1].Amount = 0 // refused by the database: the statement fails, each row is retried alone
			if errs := s.InsertRTPsTogether(rs); errs[0] != nil || errs[1] == nil || errs[2] != nil {
				t.Fatalf("a shared insert with a refused row: %v", errs)
			}
			check("after a shared insert that failed")
		}
	})
}

// createRTPs creates n RTPs of m one after another, calling then, if
// given, with each (safe to call off the test's goroutine).
func createRTPs(s *sqlstore.Store, m *payd.Merchant, n int, now time.Time, then func(i int, r *payd.RTP) error) error {
	for i := 0; i < n; i++ {
		r, err := unsavedRTP(m, now)
		if err == nil {
			err = s.CreateRTP(ctx, m, r)
		}
		if err == nil && then != nil {
			err = then(i, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// unsavedRTP is a valid RTP of m, not stored (safe to call off the test's
// goroutine).
func unsavedRTP(m *payd.Merchant, now time.Time) (*payd.RTP, error) {
	amount, exp := payd.Money(100), now.Add(time.Hour)
	return payd.NewRTP(payd.RTPInput{Alias: "37369000002", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "x"}, m.ID, now)
}

// TestRTPStatusCountsKept: a status filter alone takes its total from the
// counts kept per merchant and stored status (migration 017). After every
// way an RTP's status moves (creates, acceptances, rejections and
// cancellations made concurrently while two compactors, as two instances'
// expiry loops, fold the counts,
// deadlines passing unwritten, the expiry loop writing some then all of
// them, a refund settling), every status's total, alone and in sets, equals
// the whole list's as of then, for each merchant. The expiry loop's pass
// leaves one row per merchant and status.
func TestRTPStatusCountsKept(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, url string) {
		now := storetest.Epoch
		a, _ := newMerchant(t, s, 0)
		b, _ := newMerchant(t, s, 0)
		sets := [][]payd.RTPStatus{{payd.RTPCreated}, {payd.RTPActive}, {payd.RTPAccepted}, {payd.RTPRejected}, {payd.RTPExpired},
			{payd.RTPCancelled}, {payd.RTPRefunded}, {payd.RTPCreated, payd.RTPActive}, {payd.RTPExpired, payd.RTPActive},
			{payd.RTPCreated, payd.RTPExpired, payd.RTPAccepted}, {payd.RTPExpired, payd.RTPExpired}}
		check := func(when string, at time.Time) {
			t.Helper()
			seen := map[payd.RTPStatus]bool{}
			for _, m := range []*payd.Merchant{a, b} {
				whole, _, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m.ID}, at)
				if err != nil {
					t.Fatal(err)
				}
				for _, sts := range sets {
					want := 0
					for _, r := range whole {
						if slices.Contains(sts, r.Status) {
							want++
							seen[r.Status] = true
						}
					}
					if _, total, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m.ID, Statuses: sts, Count: 5}, at); err != nil || total != want {
						t.Errorf("%s: statuses %v: total %d, %v; the whole list has %d", when, sts, total, err, want)
					}
				}
			}
			t.Logf("%s: statuses present %v", when, seen)
		}

		// Two compactors, as two instances' expiry loops: they take turns.
		var compactions atomic.Int64
		stop := make(chan struct{})
		compacted := make(chan error, 2)
		for range 2 {
			go func() {
				for {
					select {
					case <-stop:
						compacted <- nil
						return
					default:
					}
					if _, err := s.CompactRTPCounts(ctx); err != nil {
						compacted <- err
						return
					}
					compactions.Add(1)
					time.Sleep(time.Millisecond)
				}
			}()
		}
		var accepted sync.Map // merchant id → a payment of it
		concurrently(t, 16, func(g int) error {
			m := a
			if g%4 == 0 {
				m = b
			}
			return createRTPs(s, m, 6, now, func(i int, r *payd.RTP) (err error) {
				switch i {
				case 1:
					var p *payd.Payment
					_, p, err = s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now)
					if err == nil {
						accepted.Store(m.ID, p)
					}
				case 2:
					_, err = s.RejectRTP(ctx, m.ID, r.ID, now)
				case 3:
					_, err = s.CancelRTP(ctx, m.ID, r.ID, "no longer needed", now)
				}
				return err
			})
		})
		close(stop)
		for range 2 {
			if err := <-compacted; err != nil {
				t.Fatal(err)
			}
		}
		check("after concurrent changes", now)

		later := now.Add(2 * time.Hour) // every open RTP past its deadline, none written Expired
		check("deadlines passed, none written", later)
		if n, err := s.ExpireRTPs(ctx, later, 10); err != nil || n == 0 {
			t.Fatalf("ExpireRTPs = %d, %v", n, err)
		}
		check("some written Expired", later)
		for {
			n, err := s.ExpireRTPs(ctx, later, 100)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		check("all written Expired", later)

		v, _ := accepted.Load(a.ID)
		p := v.(*payd.Payment)
		rf, err := s.CreateRefund(ctx, a.ID, p.ID, payd.RefundInput{Reason: "r"}, later, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleRefund(ctx, rf.ID, payd.RefundAccepted, later.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		check("a refund settled", later.Add(time.Second))

		rows := func() (n int64) {
			t.Helper()
			err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) (err error) {
				n, err = w.Count(ctx, "SELECT COUNT(*) FROM rtp_status_counts WHERE merchant_id = ?", a.ID)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := rows()
		// The expiry loop's pass is what compacts in a running payd.
		if _, err := (&worker.Expiry{Store: s, Clock: payd.NewFakeClock(later.Add(time.Second))}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		after := rows()
		t.Logf("%d compaction passes during the changes; merchant a's count rows %d before the last, %d after", compactions.Load(), before, after)
		if after > 7 || (strings.HasPrefix(url, "postgres") && before <= after) {
			t.Errorf("compaction: %d rows of merchant a's counts before, %d after (want at most one per status, and fewer on PostgreSQL)", before, after)
		}
		check("after compaction", later.Add(time.Second))
	})
}

// TestOrdersDelivered: marking orders delivered counts only those still
// pending under the caller's lease, on each engine's statement.
func TestOrdersDelivered(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("iso20022")
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		for _, alias := range []string{"37369112221", "37369112222", "37369112223"} {
			newRTP(t, s, m, alias, now)
		}
		orders, err := s.ClaimOrders(ctx, "a", now, time.Minute, 10)
		if err != nil || len(orders) != 3 {
			t.Fatalf("claimed %d orders (%v)", len(orders), err)
		}
		if n, err := s.OrdersDelivered(ctx, orders, "b", now); err != nil || n != 0 {
			t.Errorf("another owner marked %d delivered (%v)", n, err)
		}
		if n, err := s.OrdersDelivered(ctx, orders[:2], "a", now); err != nil || n != 2 {
			t.Errorf("marked %d delivered (%v), want 2", n, err)
		}
		if n, err := s.OrdersDelivered(ctx, orders, "a", now); err != nil || n != 1 {
			t.Errorf("marked %d delivered (%v), want only the one still pending", n, err)
		}
		if n, _, err := s.PendingOrders(ctx, now); err != nil || n != 0 {
			t.Errorf("pending orders = %d (%v)", n, err)
		}
	})
}
