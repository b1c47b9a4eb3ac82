package sqlstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

const reconIBAN = "MD24AG000225100013104168"

// reconShop is a merchant with an IBAN and a Static QR, credited through
// the rails as a bank's pacs.008 would.
type reconShop struct {
	s    *sqlstore.Store
	m    *payd.Merchant
	qrID string
	iban string
}

func newReconShop(t *testing.T, s *sqlstore.Store, rate int, now time.Time) *reconShop {
	return newReconShopAt(t, s, reconIBAN, rate, now)
}

// newReconShopAt is a shop whose account is iban.
func newReconShopAt(t *testing.T, s *sqlstore.Store, iban string, rate int, now time.Time) *reconShop {
	t.Helper()
	cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", CommissionBP: rate, IBAN: iban}, now)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Merchant(ctx, cr.MerchantID)
	q, ext := payd.NewQR(payd.QRInput{Type: "Static", AmountType: "Free", Currency: "MDL", Ext: payd.ExtensionInput{Description: "Tips"}}, m.ID, now)
	if err := s.CreateQR(ctx, q, ext); err != nil {
		t.Fatal(err)
	}
	return &reconShop{s: s, m: m, qrID: q.ID, iban: iban}
}

// credit is a payer's credit of amount with the network's reference tx.
func (r *reconShop) credit(t *testing.T, amount payd.Money, tx string, at time.Time) *payd.Payment {
	t.Helper()
	p, err := r.s.Credit(ctx, payd.Credit{TargetID: r.qrID, Amount: &amount, Currency: "MDL", Reference: tx, Routed: true,
		CreditorIBAN: r.iban, PayerName: "PAYER"}, at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *reconShop) refund(t *testing.T, p *payd.Payment, amount payd.Money, at time.Time) *payd.Refund {
	t.Helper()
	rf, err := r.s.CreateRefund(ctx, r.m.ID, p.ID, payd.RefundInput{Amount: &amount, Reason: "back"}, at, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rf, err = r.s.SettleRefund(ctx, rf.ID, payd.RefundAccepted, at); err != nil {
		t.Fatal(err)
	}
	return rf
}

// TestSettlementTotals: the settlement report's days and totals equal the
// sums of the merchant's payments and refunds themselves, on both engines.
func TestSettlementTotals(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		shop := newReconShop(t, s, 175, start)
		other := newReconShop(t, s, 0, start) // not in the report
		rng := rand.New(rand.NewPCG(7, 11))
		for i := range 300 {
			at := start.Add(time.Duration(rng.IntN(5*24*60)) * time.Minute)
			p := shop.credit(t, payd.Money(100+rng.IntN(100000)), fmt.Sprintf("S%d", i), at)
			if i%7 == 0 {
				shop.refund(t, p, p.Amount/2, at.Add(time.Duration(rng.IntN(48*60))*time.Minute))
			}
			if i%10 == 0 {
				other.credit(t, 500, fmt.Sprintf("O%d", i), at)
			}
		}
		from, to := "2026-11-21", "2026-11-23"
		// As of the 23rd (every day summed live), then as of the 30th (the
		// days kept: summed once, then read back), then after a late credit
		// backdated into a kept day.
		days, err := s.Settlement(ctx, shop.m.ID, from, to, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		later := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for range 2 {
			kept, err := s.Settlement(ctx, shop.m.ID, from, to, later)
			if err != nil || fmt.Sprint(kept) != fmt.Sprint(days) {
				t.Fatalf("the kept sums differ from the live ones: %v\n%v\n%v", err, kept, days)
			}
		}
		late, err := s.Credit(ctx, payd.Credit{TargetID: shop.qrID, Amount: ptr(payd.Money(999)), Currency: "MDL", Reference: "LATE", Routed: true,
			CreditorIBAN: reconIBAN, At: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}, later)
		if err != nil || late.ExecutedAt.Format(time.DateOnly) != "2026-11-22" {
			t.Fatalf("late credit: %v %+v", err, late)
		}
		days, err = s.Settlement(ctx, shop.m.ID, from, to, later)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
		// What the payments and refunds themselves sum to.
		want := map[string]*payd.SettlementDay{}
		get := func(date string) *payd.SettlementDay {
			if want[date] == nil {
				want[date] = &payd.SettlementDay{Date: date, Currency: "MDL"}
			}
			return want[date]
		}
		ps, _, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: shop.m.ID, Count: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !p.ExecutedAt.Before(lo) && p.ExecutedAt.Before(hi) {
				d := get(p.ExecutedAt.UTC().Format(time.DateOnly))
				d.Payments++
				d.Gross += p.Amount
				d.Commission += p.Commission
			}
		}
		rfs, _, err := s.Refunds(ctx, sqlstore.RefundFilter{MerchantID: shop.m.ID, Status: "Accepted", Count: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rfs {
			if !r.ExecutedAt.Before(lo) && r.ExecutedAt.Before(hi) {
				d := get(r.ExecutedAt.UTC().Format(time.DateOnly))
				d.Refunds++
				d.Refunded += r.Amount
			}
		}
		if len(days) != len(want) || len(days) != 3 {
			t.Fatalf("%d days, want %d", len(days), len(want))
		}
		for _, d := range days {
			w := want[d.Date]
			w.Settle()
			if d != *w {
				t.Errorf("%s: %+v, want %+v", d.Date, d, *w)
			}
		}
		tot := payd.SettlementTotals(days)
		var gross, refunded payd.Money
		for _, w := range want {
			gross += w.Gross
			refunded += w.Refunded
		}
		if len(tot) != 1 || tot[0].Gross != gross || tot[0].Refunded != refunded || tot[0].Net != tot[0].Gross-tot[0].Commission-tot[0].Refunded {
			t.Errorf("totals %+v, want gross %s refunded %s", tot, gross, refunded)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestKeepSettlement: the days that stopped being live are kept before any
// report asks (the settlement loop's pass), a week of them, and a report
// of them afterwards equals the sums of the payments themselves; today and
// yesterday are not kept.
func TestKeepSettlement(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		start := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
		shop := newReconShop(t, s, 100, start)
		for i := range 40 {
			shop.credit(t, payd.Money(1000+i), fmt.Sprintf("K%d", i), start.Add(time.Duration(i)*12*time.Hour)) // Nov 10 to Nov 29
		}
		now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		live, err := s.Settlement(ctx, shop.m.ID, "2026-11-10", "2026-11-30", now.Add(-30*24*time.Hour)) // every day summed live
		if err != nil {
			t.Fatal(err)
		}
		if err := s.KeepSettlement(ctx, shop.m.ID, now); err != nil {
			t.Fatal(err)
		}
		kept, err := s.KeptSettlementDays(ctx, shop.m.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"2026-11-22", "2026-11-23", "2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"}
		if fmt.Sprint(kept) != fmt.Sprint(want) {
			t.Fatalf("kept %v, want the week before yesterday %v", kept, want)
		}
		again, err := s.Settlement(ctx, shop.m.ID, "2026-11-10", "2026-11-30", now)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(live) {
			t.Fatalf("the report with kept days differs: %v\n%v\n%v", err, again, live)
		}
	})
}

// TestKeepSettlementRace: a late credit backdated to a day being kept,
// recorded between the keeper's sum and its insert (when no kept row is
// there yet for the credit to drop), does not leave the day kept short of
// it: the report of that day still equals the sums of its payments.
func TestKeepSettlementRace(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		shop := newReconShop(t, s, 100, start)
		for i := range 10 {
			shop.credit(t, payd.Money(1000+i), fmt.Sprintf("R%d", i), start.Add(time.Duration(i)*12*time.Hour)) // Nov 20 to Nov 24
		}
		now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		once := false
		sqlstore.AfterSettlementSum(t, func() {
			if !once {
				once = true
				// Accepted on Nov 22, arriving on Nov 30.
				p, err := s.Credit(ctx, payd.Credit{TargetID: shop.qrID, Amount: ptr(payd.Money(777)), Currency: "MDL", Reference: "LATE",
					Routed: true, CreditorIBAN: reconIBAN, PayerName: "PAYER", At: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)}, now)
				if err != nil || p.ExecutedAt.Day() != 22 {
					t.Errorf("the late credit: %v %+v", err, p)
				}
			}
		})
		if err := s.KeepSettlement(ctx, shop.m.ID, now); err != nil {
			t.Fatal(err)
		}
		if !once {
			t.Fatal("the keeper summed nothing")
		}
		got, err := s.Settlement(ctx, shop.m.ID, "2026-11-20", "2026-11-24", now)
		if err != nil {
			t.Fatal(err)
		}
		live, err := s.Settlement(ctx, shop.m.ID, "2026-11-20", "2026-11-24", start) // every day summed live
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(live) {
			t.Fatalf("the kept days lost the late credit:\n%v\nwant\n%v", got, live)
		}
		again, err := s.Settlement(ctx, shop.m.ID, "2026-11-20", "2026-11-24", now)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(live) {
			t.Fatalf("read again: %v\n%v\nwant\n%v", err, again, live)
		}
	})
}
