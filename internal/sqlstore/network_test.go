package sqlstore_test

import (
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestNetworksAreRecorded: a payment keeps the network its credit or card
// result came from; a refund's order goes back through that network, an
// RTP's to the deployment's rails, and one of a payment recorded before
// payments named their network to the rails (a credit) or to no named
// network (a card: it goes by its kind); a card session is asked about
// at its own acquirer only.
func TestNetworksAreRecorded(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("rails-a")
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		claimed := map[string]*payd.RailsOrder{} // by object
		claim := func() {
			t.Helper()
			os, err := s.ClaimOrders(ctx, "test", now.Add(time.Hour), time.Millisecond, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range os {
				claimed[o.ObjectID] = o
			}
		}
		order := func(objectID string, kind payd.OrderKind, network string) {
			t.Helper()
			claim()
			o := claimed[objectID]
			if o == nil || o.Kind != kind || o.Network != network {
				t.Errorf("the order of %s = %+v, want a %s to network %q", objectID, o, kind, network)
			}
		}
		credit := func(alias, network string) *payd.Payment {
			t.Helper()
			r := newRTP(t, s, m, alias, now)
			order(r.ID, payd.OrderSendRTP, "rails-a")
			_, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{Network: network, TargetID: r.ID, PayerName: payd.TestRTPPayer,
				PayerIBAN: payd.TestIBAN, Reference: "ref-" + alias}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Payment(ctx, m.ID, p.ID); err != nil || got.Network != network {
				t.Errorf("payment read back: network %q (%v), want %q", got.Network, err, network)
			}
			return p
		}
		refund := func(p *payd.Payment) string {
			t.Helper()
			rf, err := s.CreateRefund(ctx, m.ID, p.ID, payd.RefundInput{Reason: "r"}, now, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return rf.ID
		}
		order(refund(credit("37369110001", "rails-b")), payd.OrderRefund, "rails-b")
		order(refund(credit("37369110002", "")), payd.OrderRefund, "rails-a")

		cardPayment := func(acquirer, id string) *payd.Payment {
			t.Helper()
			c := cardCheckout(t, s, m, now)
			claim, err := s.ClaimCardSession(ctx, c.ID, c.MerchantID, now, 30*time.Second)
			if err != nil || !claim.Mine {
				t.Fatalf("claim: %+v %v", claim, err)
			}
			if err := s.OpenCardSession(ctx, claim.ID, payd.CardSession{Network: acquirer, ID: id, URL: "https://acquirer.example/" + id}, now); err != nil {
				t.Fatal(err)
			}
			amount := payd.Money(12050)
			_, p, err := s.CardPaid(ctx, c.ID, payd.CardResult{Network: acquirer, Approved: true, Reference: id, RRN: "123456789012",
				ApprovalCode: "654321", Mask: "411111******1111", Amount: &amount, Currency: "MDL"}, now)
			if err != nil || p == nil || p.Network != acquirer {
				t.Fatalf("card payment: %+v %v, want one of network %q", p, err, acquirer)
			}
			return p
		}
		order(refund(cardPayment("cards-a", "acq-1")), payd.OrderCardRefund, "cards-a")
		order(refund(cardPayment("", "acq-2")), payd.OrderCardRefund, "")

		// Sessions still open, due to be asked: each acquirer sees its own
		// and those recorded before sessions named one.
		for _, sess := range []struct{ network, id string }{{"cards-a", "acq-3"}, {"cards-b", "acq-4"}, {"", "acq-5"}} {
			c := cardCheckout(t, s, m, now)
			claim, err := s.ClaimCardSession(ctx, c.ID, c.MerchantID, now, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.OpenCardSession(ctx, claim.ID, payd.CardSession{Network: sess.network, ID: sess.id, URL: "https://acquirer.example/" + sess.id}, now); err != nil {
				t.Fatal(err)
			}
		}
		for network, want := range map[string][]string{"cards-a": {"acq-3", "acq-5"}, "cards-b": {"acq-4", "acq-5"}} {
			due, err := s.DueCardSessions(ctx, network, now.Add(24*time.Hour), 100)
			got := map[string]bool{}
			for _, d := range due {
				got[d.AcquirerID] = true
			}
			if err != nil || len(got) != len(want) || !got[want[0]] || !got[want[1]] {
				t.Errorf("sessions due at %s: %v (%v), want %v", network, got, err, want)
			}
		}
	})
}
