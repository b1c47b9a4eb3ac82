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
}

func newReconShop(t *testing.T, s *sqlstore.Store, rate int, now time.Time) *reconShop {
	t.Helper()
	cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", CommissionBP: rate, IBAN: reconIBAN}, now)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.Merchant(ctx, cr.MerchantID)
	q, ext := payd.NewQR(payd.QRInput{Type: "Static", AmountType: "Free", Currency: "MDL", Ext: payd.ExtensionInput{Description: "Tips"}}, m.ID, now)
	if err := s.CreateQR(ctx, q, ext); err != nil {
		t.Fatal(err)
	}
	return &reconShop{s: s, m: m, qrID: q.ID}
}

// credit is a payer's credit of amount with the network's reference tx.
func (r *reconShop) credit(t *testing.T, amount payd.Money, tx string, at time.Time) *payd.Payment {
	t.Helper()
	p, err := r.s.Credit(ctx, payd.Credit{TargetID: r.qrID, Amount: &amount, Currency: "MDL", Reference: tx, Routed: true,
		CreditorIBAN: reconIBAN, PayerName: "PAYER"}, at)
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

func bookingOf(date string, n int, dir string, amount payd.Money, e2e, tx string) payd.StatementEntry {
	return payd.StatementEntry{ID: fmt.Sprintf("%s-%d", date, n), Account: reconIBAN, BookingDate: date, Direction: dir, Amount: amount,
		Currency: "MDL", BankRef: fmt.Sprintf("BK%d", n), EndToEndID: e2e, TxID: tx}
}

func statementOf(msgID, date string, eod bool, entries ...payd.StatementEntry) *payd.Statement {
	kind := "camt.054"
	if eod {
		kind = "camt.053"
	}
	return &payd.Statement{MsgID: msgID, Kind: kind, EndOfDay: eod, CreatedAt: time.Now(),
		Reports: []payd.StatementReport{{ID: "S-" + date, Account: reconIBAN, From: date, To: date, Entries: entries}}}
}

// TestReconciliation: a day whose statement books everything matches;
// then each kind of disagreement; a statement taken twice changes
// nothing; a late booking resolves a payment missing in the bank.
func TestReconciliation(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day1 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d1, d2 := "2026-11-24", "2026-11-25"
		shop := newReconShop(t, s, 150, day1)
		p1 := shop.credit(t, 5000, "TX1", day1)
		shop.credit(t, 1230, "TX2", day1.Add(time.Minute))
		rf := shop.refund(t, p1, 2000, day1.Add(time.Hour))
		qr := shop.qrID

		st := statementOf("S1", d1, true, bookingOf(d1, 1, payd.DirCredit, 5000, qr, "TX1"), bookingOf(d1, 2, payd.DirCredit, 1230, qr, "TX2"),
			bookingOf(d1, 3, payd.DirDebit, 2000, qr, rf.ID))
		if fresh, err := s.ImportStatement(ctx, st, "file", day1); err != nil || !fresh {
			t.Fatalf("import: %v %v", fresh, err)
		}
		rep, err := s.ReconDay(ctx, d1)
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Counts(); !rep.Closed || c[payd.ReconMatched] != 3 || len(rep.Lines) != 3 {
			t.Fatalf("day 1: closed %v, %v, lines %+v", rep.Closed, c, rep.Lines)
		}
		if fresh, err := s.ImportStatement(ctx, st, "rails", day1); err != nil || fresh {
			t.Errorf("the same statement again: %v %v", fresh, err)
		}
		again, _ := s.ReconDay(ctx, d1)
		if fmt.Sprint(again.Lines) != fmt.Sprint(rep.Lines) {
			t.Errorf("importing twice changed the report:\n%v\n%v", rep.Lines, again.Lines)
		}

		// Day 2: a credit payd never heard of, a payment never booked, one
		// booked at another amount, one booked twice, one booked a day late.
		day2 := day1.Add(24 * time.Hour)
		unbooked := shop.credit(t, 700, "TX21", day2)
		altered := shop.credit(t, 900, "TX22", day2)
		twice := shop.credit(t, 300, "TX23", day2)
		late := shop.credit(t, 450, "TX24", day2)
		// A camt.054 during the day carries the first booking; the camt.053 repeats it.
		note := statementOf("N2", d2, false, bookingOf(d2, 1, payd.DirCredit, 4200, qr, "TXLOST"))
		if _, err := s.ImportStatement(ctx, note, "rails", day2); err != nil {
			t.Fatal(err)
		}
		st2 := statementOf("S2", d2, true, bookingOf(d2, 1, payd.DirCredit, 4200, qr, "TXLOST"),
			bookingOf(d2, 2, payd.DirCredit, 901, qr, "TX22"), bookingOf(d2, 3, payd.DirCredit, 300, qr, "TX23"),
			bookingOf(d2, 4, payd.DirCredit, 300, qr, "TX23"))
		if _, err := s.ImportStatement(ctx, st2, "rails", day2); err != nil {
			t.Fatal(err)
		}
		rep2, err := s.ReconDay(ctx, d2)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, l := range rep2.Lines {
			got[l.Outcome] = append(got[l.Outcome], l.TxID+"/"+l.PaymentID)
		}
		want := map[string][]string{
			payd.ReconMissingInPayd:  {"TXLOST/"},
			payd.ReconAmountMismatch: {"TX22/" + altered.ID},
			payd.ReconMatched:        {"TX23/" + twice.ID},
			payd.ReconDuplicate:      {"TX23/" + twice.ID},
		}
		for o, w := range want {
			if fmt.Sprint(got[o]) != fmt.Sprint(w) {
				t.Errorf("day 2 %s: %v, want %v", o, got[o], w)
			}
		}
		missing := map[string]bool{}
		for _, l := range rep2.Lines {
			if l.Outcome == payd.ReconMissingInBank {
				missing[l.PaymentID] = true
			}
		}
		if len(missing) != 2 || !missing[unbooked.ID] || !missing[late.ID] {
			t.Errorf("missing in the bank: %v, want %s and %s", missing, unbooked.ID, late.ID)
		}
		u, err := s.ReconUnresolved(ctx, d1)
		if err != nil {
			t.Fatal(err)
		}
		if u[payd.ReconMissingInPayd] != 1 || u[payd.ReconMissingInBank] != 2 || u[payd.ReconAmountMismatch] != 1 || u[payd.ReconDuplicate] != 1 {
			t.Errorf("unresolved: %v", u)
		}

		// Day 3's statement books the late credit: day 2 no longer misses it.
		d3 := "2026-11-26"
		st3 := statementOf("S3", d3, true, bookingOf(d3, 1, payd.DirCredit, 450, qr, "TX24"))
		if _, err := s.ImportStatement(ctx, st3, "rails", day2.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		rep2, _ = s.ReconDay(ctx, d2)
		for _, l := range rep2.Lines {
			if l.Outcome == payd.ReconMissingInBank && l.PaymentID == late.ID {
				t.Errorf("the late booking did not resolve its payment")
			}
		}
		// The money payd never heard of arrives after all (the bank resends
		// its pacs.008): the next statement taken matches the open entry.
		lost := shop.credit(t, 4200, "TXLOST", day2.Add(time.Hour))
		if _, err := s.ImportStatement(ctx, statementOf("N3", d3, false), "rails", day2.Add(25*time.Hour)); err != nil {
			t.Fatal(err)
		}
		// (a statement without entries on the account retries nothing: the
		// retry runs with entries of the account)
		if _, err := s.ImportStatement(ctx, statementOf("N4", d2, false, bookingOf(d2, 9, payd.DirCredit, 10, "", "TXOTHER")), "rails", day2.Add(26*time.Hour)); err != nil {
			t.Fatal(err)
		}
		rep2, _ = s.ReconDay(ctx, d2)
		for _, l := range rep2.Lines {
			if l.TxID == "TXLOST" && (l.Outcome != payd.ReconMatched || l.PaymentID != lost.ID) {
				t.Errorf("the entry missing in payd after its payment came: %+v", l)
			}
		}
	})
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
