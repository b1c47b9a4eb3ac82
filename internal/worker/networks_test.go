package worker

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestOrdersGoToTheirNetwork: each order goes to the network it names. A
// refund goes back through its payment's network while the rails that
// took the RTPs are away (their orders wait, the refunds' do not), and an
// order to a network the deployment does not run stays pending, with the
// reason, and reaches no other network.
func TestOrdersGoToTheirNetwork(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		s.SetRails("rails-a")
		now := storetest.Epoch
		clock := payd.NewFakeClock(now)
		m := ordersShop(t, s, now)
		a := &awayRails{tried: map[string]bool{}, got: map[string][]int{}}
		b := &awayRails{tried: map[string]bool{}, got: map[string][]int{}}
		o := &Orders{Store: s, Rails: &payd.Networks{Rails: "rails-a", ByName: map[string]payd.Rails{"rails-a": a, "rails-b": b}},
			Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "t", Parallel: 4}
		pass := func() {
			t.Helper()
			if _, err := o.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}

		var paid []*payd.Payment
		for _, network := range []string{"rails-b", "rails-b", "rails-c"} {
			r := newRTP(t, s, m, now)
			pass() // its pain.013, to rails-a
			_, p, err := s.CreditRTP(ctx, m.ID, payd.Credit{Network: network, TargetID: r.ID, PayerName: payd.TestRTPPayer,
				PayerIBAN: payd.TestIBAN, Reference: "ref-" + r.ID}, now)
			if err != nil {
				t.Fatal(err)
			}
			paid = append(paid, p)
		}
		if a.count() != 3 || b.count() != 0 {
			t.Fatalf("the RTPs' orders: %d to rails-a, %d to rails-b; want 3 and 0", a.count(), b.count())
		}

		a.set(true)
		for range 20 {
			newRTP(t, s, m, now)
		}
		refunds := map[string]string{} // refund id → its payment's network
		for _, p := range paid {
			rf, err := s.CreateRefund(ctx, m.ID, p.ID, payd.RefundInput{Reason: "r"}, now, 0)
			if err != nil {
				t.Fatal(err)
			}
			refunds[rf.ID] = p.Network
		}
		for range 3 {
			pass()
		}
		if !o.Away("rails-a") || o.Away("rails-b") {
			t.Errorf("away: rails-a %v, rails-b %v; want rails-a only", o.Away("rails-a"), o.Away("rails-b"))
		}
		for id, network := range refunds {
			_, took := b.got[id]
			if took != (network == "rails-b") || a.tried[id] {
				t.Errorf("refund %s (a payment of %s): rails-b took it %v, rails-a was asked %v", id, network, took, a.tried[id])
			}
		}
		if pending, _, err := s.PendingOrders(ctx, clock.Now()); err != nil || pending != 21 {
			t.Errorf("%d orders pending (%v), want the 20 RTPs' and the refund to rails-c", pending, err)
		}
		if n, err := s.FailedOrders(ctx); err != nil || n != 0 {
			t.Errorf("%d orders failed for good (%v), want none", n, err)
		}
		later, err := s.ClaimOrders(ctx, "check", clock.Now().Add(24*time.Hour), time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		var toC *payd.RailsOrder
		for _, ord := range later {
			if refunds[ord.ObjectID] == "rails-c" {
				toC = ord
			}
		}
		if toC == nil || toC.Network != "rails-c" || toC.Attempts == 0 || !strings.Contains(toC.LastError, "no such network") {
			t.Errorf("the refund to rails-c's order: %+v, want it attempted and kept with the reason", toC)
		}
	})
}
