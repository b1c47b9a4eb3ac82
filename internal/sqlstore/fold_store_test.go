package sqlstore_test

import (
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestPaymentAndCheckoutSearchesFold: the payment list's sender and
// description searches and the checkout list's payer name search fold
// Romanian and Russian letters on both engines, as the RTP and QR searches
// do (TestSearchFoldsRomanianAndRussian); on SQLite they go through
// payd_lower too.
func TestPaymentAndCheckoutSearchesFold(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		m, _ := newMerchant(t, s, 0)
		now := storetest.Epoch
		r := newDescribedRTP(t, s, m, "37369112221", "Кофе и ЧАЙ", now)
		newRTP(t, s, m, "37369112222", now) // one that must not match
		if _, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: "ȘTEFAN Ionescu", PayerIBAN: payd.TestIBAN}, now); err != nil {
			t.Fatal(err)
		}
		for _, f := range []sqlstore.PaymentFilter{
			{MerchantID: m.ID, SenderName: "ștefan"}, {MerchantID: m.ID, Description: "кофе"}, {MerchantID: m.ID, Description: "ЧАЙ"},
		} {
			ps, total, err := s.Payments(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if total != 1 || len(ps) != 1 || ps[0].RTPID != r.ID {
				t.Errorf("Payments %+v: total %d, %d items; want the payment of %s", f, total, len(ps), r.ID)
			}
		}
		for i, name := range []string{"Анна Петрова", "Ana Pătraşcu"} {
			amount := payd.Money(5000)
			c := payd.NewCheckout(payd.CheckoutInput{Amount: &amount, Currency: "MDL", Language: "ro",
				Payer: &payd.Payer{Name: name}}, m.ID, time.Hour, now.Add(time.Duration(i)*time.Second))
			if err := s.CreateCheckout(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		for search, want := range map[string]string{"АННА": "Анна Петрова", "петрова": "Анна Петрова", "PĂTRAŞ": "Ana Pătraşcu"} {
			cs, total, err := s.Checkouts(ctx, sqlstore.CheckoutFilter{MerchantID: m.ID, PayerName: search}, now)
			if err != nil {
				t.Fatal(err)
			}
			if total != 1 || len(cs) != 1 || cs[0].Payer == nil || cs[0].Payer.Name != want {
				t.Errorf("Checkouts payerName %q: total %d, %d items; want %q", search, total, len(cs), want)
			}
		}
	})
}
