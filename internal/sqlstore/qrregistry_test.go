package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// registrations takes every registry order the outbox hands out, in the
// order it hands them (each QR's in turn), as "qr rev status terms".
func registrations(t *testing.T, s *sqlstore.Store, now time.Time) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for range 50 {
		os, err := s.ClaimOrders(ctx, "test", now, time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(os) == 0 {
			return out
		}
		for _, o := range os {
			if o.Kind == payd.OrderRegisterQR {
				r := o.Data.QR
				terms := "none"
				if x := r.Extension; x != nil {
					terms = string(x.Status)
					if x.Amount != nil {
						terms += " " + x.Amount.String()
					}
					if x.ExtensionID != "" {
						terms += " " + x.ExtensionID
					}
				}
				if !payd.MIALinkPattern.MatchString(r.Link) || r.QRID != o.ObjectID {
					t.Errorf("registration of %s: link %q", o.ObjectID, r.Link)
				}
				out[r.QRID] = append(out[r.QRID], fmt.Sprintf("%d %s %s", r.Revision, r.Status, terms))
			}
			if err := s.OrderDelivered(ctx, o, payd.Taken{}, "test", now); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("the outbox never emptied")
	return nil
}

// TestQRRegistryOrders: with a registry, every change of what a payer's
// bank reads of a QR writes a registration in its transaction, numbered
// in order: each kind's creation, a Hybrid's extensions added, replaced
// and cancelled, a Dynamic paid, a cancel, an expiry by the pass; a
// Static QR's payment writes none. Without one (the sandbox), none.
func TestQRRegistryOrders(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		s.SetRails("iso20022")
		s.SetQRRegistry("AGR")
		shop := newReconShop(t, s, 0, now) // a Static QR, created with the registry on
		shop.credit(t, 500, "TX1", now.Add(time.Minute))
		amount := payd.Money(4200)
		soon := now.Add(time.Hour)
		newQR := func(in payd.QRInput) *payd.QR {
			t.Helper()
			q, ext := payd.NewQR(in, shop.m.ID, now)
			if err := s.CreateQR(ctx, q, ext); err != nil {
				t.Fatal(err)
			}
			return q
		}
		dyn := newQR(payd.QRInput{Type: "Dynamic", AmountType: "Fixed", Currency: "MDL", Ext: payd.ExtensionInput{Amounts: payd.Amounts{Amount: &amount}, ExpiresAt: &soon}})
		if _, err := s.Credit(ctx, payd.Credit{TargetID: dyn.ID, Amount: &amount, Currency: "MDL", Reference: "TX2", Routed: true,
			CreditorIBAN: shop.iban, PayerName: "P"}, now.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		late := newQR(payd.QRInput{Type: "Dynamic", AmountType: "Fixed", Currency: "MDL", Ext: payd.ExtensionInput{Amounts: payd.Amounts{Amount: &amount}, ExpiresAt: &soon}})
		hy := newQR(payd.QRInput{Type: "Hybrid", AmountType: "Fixed", Currency: "MDL"})
		x1, err := s.CreateExtension(ctx, shop.m.ID, hy.ID, payd.ExtensionInput{Amounts: payd.Amounts{Amount: &amount}, ExpiresAt: &soon}, now)
		if err != nil {
			t.Fatal(err)
		}
		other := payd.Money(100)
		x2, err := s.CreateExtension(ctx, shop.m.ID, hy.ID, payd.ExtensionInput{Amounts: payd.Amounts{Amount: &other}, ExpiresAt: &soon}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelExtension(ctx, shop.m.ID, hy.ID, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelQR(ctx, shop.m.ID, hy.ID, "closed", now); err != nil {
			t.Fatal(err)
		}
		if n, err := s.ExpireQRs(ctx, soon.Add(time.Minute), 100); err != nil || n != 1 {
			t.Fatalf("expire: %d %v", n, err)
		}
		got := registrations(t, s, soon.Add(2*time.Minute))
		want := map[string][]string{
			shop.qrID: {"1 Active Active"},
			dyn.ID:    {"1 Active Active 42.00", "2 Paid Active 42.00"},
			late.ID:   {"1 Active Active 42.00", "2 Expired Active 42.00"},
			hy.ID: {"1 Active none", "2 Active Active 42.00 " + x1.ID, "3 Active Active 1.00 " + x2.ID,
				"4 Active none", "5 Cancelled none"}, // a cancelled extension leaves no terms to pay
		}
		for id, w := range want {
			if strings.Join(got[id], "; ") != strings.Join(w, "; ") {
				t.Errorf("%s:\n got %q\nwant %q", id, got[id], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("registrations of %d QRs, want %d: %v", len(got), len(want), got)
		}

		// Without a registry nothing is registered.
		s.SetQRRegistry("")
		newQR(payd.QRInput{Type: "Static", AmountType: "Free", Currency: "MDL"})
		if got := registrations(t, s, soon.Add(3*time.Minute)); len(got) != 0 {
			t.Errorf("the sandbox registered %v", got)
		}
	})
}
