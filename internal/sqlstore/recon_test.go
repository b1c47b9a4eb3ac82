package sqlstore_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// The store's side of reconciliation: statements built as the reader
// gives them (payd.Statement, EntryKeys applied), taken on both engines.

var (
	rcdt = payd.BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}
	rrtn = payd.BankTxCode{Domain: "PMNT", Family: "ICDT", SubFamily: "RRTN"}
	chrg = payd.BankTxCode{Domain: "PMNT", Family: "MCOP", SubFamily: "CHRG"}
)

// booked is an entry of one transaction naming e2e and tx.
func booked(date, dir string, amount payd.Money, bankRef, e2e, tx string) payd.StatementEntry {
	code := rcdt
	if dir == payd.DirDebit {
		code = rrtn
	}
	e := payd.StatementEntry{BookingDate: date, ValueDate: date, Direction: dir, Amount: amount, Currency: "MDL", BankRef: bankRef, Code: code}
	if e2e != "" || tx != "" {
		e.Txs = []payd.StatementTx{{Amount: amount, Currency: "MDL", EndToEndID: e2e, TxID: tx}}
	}
	return e
}

func report(acct, id, from, to string, entries ...payd.StatementEntry) payd.StatementReport {
	return payd.StatementReport{ID: id, Account: acct, AccountIsIBAN: true, AccountCcy: "MDL", From: from, To: to, Entries: entries}
}

// doc is a one-page statement of reports (a camt.053 when eod).
func doc(msgID string, eod bool, reports ...payd.StatementReport) *payd.Statement {
	st := &payd.Statement{MsgID: msgID, Kind: payd.KindCamt054, Version: "001.08", EndOfDay: eod, Page: 1, LastPage: true,
		CreatedAt: time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC), Reports: reports}
	if eod {
		st.Kind = payd.KindCamt053
	}
	for i := range st.Reports {
		payd.EntryKeys(&st.Reports[i])
	}
	return st
}

func take(t *testing.T, s *sqlstore.Store, st *payd.Statement, now time.Time) payd.StatementTaken {
	t.Helper()
	got, err := s.ImportStatement(ctx, st, "file", now)
	if err != nil {
		t.Fatalf("take %s: %v", st.MsgID, err)
	}
	return got
}

func reconOf(t *testing.T, s *sqlstore.Store, f payd.ReconFilter) *payd.ReconReport {
	t.Helper()
	rep, err := s.ReconReport(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// outcomes are a report's lines as "outcome item amount", sorted.
func outcomes(rep *payd.ReconReport) []string {
	var out []string
	for _, l := range rep.Lines {
		item := l.RefundID
		if item == "" {
			item = l.PaymentID
		}
		if l.Class != "" {
			item = l.Class
		}
		out = append(out, fmt.Sprintf("%s %s %d", l.Outcome, item, l.Amount))
	}
	sort.Strings(out)
	return out
}

func wantLines(t *testing.T, what string, rep *payd.ReconReport, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := outcomes(rep); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestReconDay: a day of one account whose camt.053 books everything
// matches; each kind of line is told apart (another amount, booked twice,
// money payd never heard of, a fee, another currency, zero, a payment the
// bank did not book), with totals by outcome.
func TestReconDay(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		shop := newReconShop(t, s, 150, day)
		p1 := shop.credit(t, 5000, "TX1", day)
		p2 := shop.credit(t, 1230, "TX2", day.Add(time.Minute))
		p3 := shop.credit(t, 900, "TX3", day.Add(2*time.Minute))
		p4 := shop.credit(t, 300, "TX4", day.Add(3*time.Minute))
		unbooked := shop.credit(t, 700, "TX5", day.Add(4*time.Minute))
		rf := shop.refund(t, p1, 2000, day.Add(time.Hour))
		qr := shop.qrID
		fx := booked(d, payd.DirCredit, 10000, "B9", "", "FX1")
		fx.Currency = "EUR"
		fee := payd.StatementEntry{BookingDate: d, Direction: payd.DirDebit, Amount: 150, Currency: "MDL", BankRef: "B10", Code: chrg}
		st := doc("S1", true, report(reconIBAN, "ST-1", d, d,
			booked(d, payd.DirCredit, 5000, "B1", qr, "TX1"), booked(d, payd.DirCredit, 1230, "B2", qr, "TX2"),
			booked(d, payd.DirCredit, 901, "B3", qr, "TX3"), booked(d, payd.DirCredit, 300, "B4", qr, "TX4"),
			booked(d, payd.DirCredit, 300, "B5", qr, "TX4"), booked(d, payd.DirDebit, 2000, "B6", qr, rf.ID),
			booked(d, payd.DirCredit, 4200, "B7", "", "TXLOST"), booked(d, payd.DirCredit, 0, "B8", "", ""), fx, fee))
		got := take(t, s, st, day.Add(20*time.Hour))
		if !got.Fresh || got.Entries != 10 || got.New != 10 {
			t.Fatalf("taken: %+v", got)
		}
		rep := reconOf(t, s, payd.ReconFilter{From: d, To: d})
		wantLines(t, "the day", rep,
			"matched "+p1.ID+" 5000", "matched "+p2.ID+" 1230", "amount_mismatch "+p3.ID+" 901", "matched "+p4.ID+" 300",
			"duplicate "+p4.ID+" 300", "matched "+rf.ID+" 2000", "missing_in_payd  4200", "zero  0", "not_payment other_currency 10000",
			"not_payment fee 150", "missing_in_bank "+unbooked.ID+" 700")
		if !rep.Closed() || len(rep.Days) != 1 || rep.Days[0].Account != reconIBAN {
			t.Errorf("days: %+v", rep.Days)
		}
		for _, l := range rep.Lines {
			if l.Outcome == payd.ReconAmountMismatch && (l.PaydAmount == nil || *l.PaydAmount != 900) {
				t.Errorf("the mismatch does not say payd's amount: %+v", l)
			}
			if l.RefundID == rf.ID && (l.Direction != payd.DirDebit || l.PaymentID != p1.ID) {
				t.Errorf("the refund's line: %+v", l)
			}
			if l.MerchantID != shop.m.ID {
				t.Errorf("a line of the shop's account without the shop: %+v", l)
			}
		}
		totals := map[string]payd.Total{}
		for _, tot := range rep.Totals() {
			totals[tot.Outcome+" "+tot.Currency] = tot
		}
		if m := totals["matched MDL"]; m.Count != 4 || m.Amount != 5000+1230+300+2000 {
			t.Errorf("matched total: %+v", m)
		}
		if m := totals["not_payment EUR"]; m.Count != 1 || m.Amount != 10000 {
			t.Errorf("other currency total: %+v", m)
		}
		// One outcome, one merchant.
		only := reconOf(t, s, payd.ReconFilter{From: d, To: d, Outcome: payd.ReconMissingInBank, MerchantID: shop.m.ID})
		wantLines(t, "missing in the bank only", only, "missing_in_bank "+unbooked.ID+" 700")
		other := newReconShopAt(t, s, "MD21EX000000000000000002", 0, day)
		if none := reconOf(t, s, payd.ReconFilter{From: d, To: d, MerchantID: other.m.ID}); len(none.Lines) != 0 {
			t.Errorf("another merchant's report shows %v", outcomes(none))
		}
		u, err := s.ReconUnresolved(ctx, d, d)
		if err != nil {
			t.Fatal(err)
		}
		if u[payd.ReconMissingInPayd] != 1 || u[payd.ReconMissingInBank] != 1 || u[payd.ReconAmountMismatch] != 1 || u[payd.ReconDuplicate] != 1 {
			t.Errorf("unresolved: %v", u)
		}
	})
}

// TestStatementIdentity: the same document twice changes nothing; a
// document reusing a MsgId is refused; two entries sharing AcctSvcrRef
// are two entries; a camt.054 and the day's camt.053 carrying one booking
// book it once.
func TestStatementIdentity(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		shop := newReconShop(t, s, 0, day)
		p1 := shop.credit(t, 169222, "TXA", day)
		p2 := shop.credit(t, 5000, "TXB", day)
		note := doc("N1", false, report(reconIBAN, "NT-1", d, d, booked(d, payd.DirCredit, 169222, "SHARED", shop.qrID, "TXA")))
		if got := take(t, s, note, day); !got.Fresh || got.New != 1 {
			t.Fatalf("notification: %+v", got)
		}
		eod := doc("S1", true, report(reconIBAN, "ST-1", d, d,
			booked(d, payd.DirCredit, 169222, "SHARED", shop.qrID, "TXA"), booked(d, payd.DirCredit, 5000, "SHARED", shop.qrID, "TXB")))
		if got := take(t, s, eod, day.Add(time.Hour)); !got.Fresh || got.Entries != 2 || got.New != 1 {
			t.Fatalf("the camt.053: %+v (the notification's booking is not new)", got)
		}
		before := outcomes(reconOf(t, s, payd.ReconFilter{From: d, To: d}))
		if again := take(t, s, eod, day.Add(2*time.Hour)); again.Fresh {
			t.Errorf("the same document again: %+v", again)
		}
		wantLines(t, "after taking it twice", reconOf(t, s, payd.ReconFilter{From: d, To: d}), before...)
		wantLines(t, "one booking of each", reconOf(t, s, payd.ReconFilter{From: d, To: d}), "matched "+p1.ID+" 169222", "matched "+p2.ID+" 5000")

		reused := doc("S1", true, report(reconIBAN, "ST-1", d, d, booked(d, payd.DirCredit, 5001, "OTHER", shop.qrID, "TXB")))
		if _, err := s.ImportStatement(ctx, reused, "file", day.Add(3*time.Hour)); !errors.Is(err, payd.ErrStatementReused) {
			t.Errorf("another document under a taken MsgId: %v", err)
		}
		wantLines(t, "after the refused one", reconOf(t, s, payd.ReconFilter{From: d, To: d}), before...)
	})
}

// TestReconDaysPerAccountInBankTime: a camt.053 closes its own account's
// days, not another's; booking dates are the bank's calendar, so a payment
// at 00:30 in Chișinău (22:30 UTC the day before) is that day's.
func TestReconDaysPerAccountInBankTime(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		chisinau, err := time.LoadLocation("Europe/Chisinau")
		if err != nil {
			t.Fatal(err)
		}
		s.SetBankLocation(chisinau)
		d := "2026-11-25"
		early := time.Date(2026, 11, 25, 0, 30, 0, 0, chisinau) // 2026-11-24 22:30 UTC
		a := newReconShop(t, s, 0, early)
		b := newReconShopAt(t, s, "MD21EX000000000000000002", 0, early)
		pa := a.credit(t, 1000, "TXA", early)
		pb := b.credit(t, 2000, "TXB", early)
		take(t, s, doc("SA", true, report(reconIBAN, "ST-A", d, d, booked(d, payd.DirCredit, 1000, "BA", a.qrID, "TXA"))), early.Add(24*time.Hour))

		rep := reconOf(t, s, payd.ReconFilter{From: d, To: d})
		wantLines(t, "the 25th", rep, "matched "+pa.ID+" 1000")
		closed := map[string]bool{}
		for _, day := range rep.Days {
			closed[day.Account] = day.Closed
		}
		if !closed[reconIBAN] || closed["MD21EX000000000000000002"] {
			t.Errorf("closed: %v (A's statement closes A only)", closed)
		}
		if prev := reconOf(t, s, payd.ReconFilter{From: "2026-11-24", To: "2026-11-24"}); len(prev.Lines) != 0 {
			t.Errorf("the 24th (UTC day of the payments): %v", outcomes(prev))
		}
		missing, err := s.AccountsWithoutStatement(ctx, d)
		if err != nil || fmt.Sprint(missing) != "[MD21EX000000000000000002]" {
			t.Errorf("accounts without a camt.053 on the 25th: %v %v", missing, err)
		}
		// B's own statement closes B: its payment, not booked, is missing.
		take(t, s, doc("SB", true, report("MD21EX000000000000000002", "ST-B", d, d)), early.Add(25*time.Hour))
		wantLines(t, "once B closed", reconOf(t, s, payd.ReconFilter{From: d, To: d}), "matched "+pa.ID+" 1000", "missing_in_bank "+pb.ID+" 2000")
	})
}

// TestReconReversals: a reversal takes back what it reverses: the booking
// is reported reversed, the reversal with its amount, and the payment is
// not booked any more (not matched, and not missing in the bank either:
// its line says what happened); a bounced refund return likewise.
func TestReconReversals(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d1, d2 := "2026-11-24", "2026-11-25"
		shop := newReconShop(t, s, 0, day)
		p := shop.credit(t, 5000, "TX1", day)
		q := shop.credit(t, 3000, "TX2", day)
		rf := shop.refund(t, q, 1000, day.Add(time.Hour))
		take(t, s, doc("S1", true, report(reconIBAN, "ST-1", d1, d1, booked(d1, payd.DirCredit, 5000, "B1", shop.qrID, "TX1"),
			booked(d1, payd.DirCredit, 3000, "B2", shop.qrID, "TX2"), booked(d1, payd.DirDebit, 1000, "B3", shop.qrID, rf.ID))), day.Add(20*time.Hour))
		back := booked(d2, payd.DirDebit, 5000, "R1", shop.qrID, "TX1")
		back.Reversal = true
		bounce := booked(d2, payd.DirCredit, 1000, "R2", shop.qrID, rf.ID)
		bounce.Reversal = true
		take(t, s, doc("S2", true, report(reconIBAN, "ST-2", d2, d2, back, bounce)), day.Add(44*time.Hour))
		rep := reconOf(t, s, payd.ReconFilter{From: d1, To: d2})
		wantLines(t, "after the reversals", rep, "reversed "+p.ID+" 5000", "matched "+q.ID+" 3000", "reversed "+rf.ID+" 1000",
			"reversal "+p.ID+" 5000", "reversal "+rf.ID+" 1000")
	})
}

// TestReconLumpAndDetails: a camt.053 booking a batch as one entry waits
// for its details; the camt.054 detailing that booking matches each
// transaction, with the lump counted once (no missing in payd, no double
// count); a batch whose transactions do not add up is a sum line. In the
// other order (details first), the lump changes nothing.
func TestReconLumpAndDetails(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		shop := newReconShop(t, s, 0, day)
		var ps []*payd.Payment
		var txs []payd.StatementTx
		for i, amount := range []payd.Money{1000, 2000, 3500} {
			tx := fmt.Sprintf("TXL%d", i)
			ps = append(ps, shop.credit(t, amount, tx, day))
			txs = append(txs, payd.StatementTx{Amount: amount, Currency: "MDL", EndToEndID: shop.qrID, TxID: tx})
		}
		lump := payd.StatementEntry{BookingDate: d, Direction: payd.DirCredit, Amount: 6500, Currency: "MDL", BankRef: "BATCH1", Code: rcdt, BatchCount: 3}
		take(t, s, doc("S1", true, report(reconIBAN, "ST-1", d, d, lump)), day.Add(20*time.Hour))
		wantLines(t, "the lump alone", reconOf(t, s, payd.ReconFilter{From: d, To: d}), "awaiting_details  6500",
			"missing_in_bank "+ps[0].ID+" 1000", "missing_in_bank "+ps[1].ID+" 2000", "missing_in_bank "+ps[2].ID+" 3500")
		detailed := lump
		detailed.Txs = txs
		got := take(t, s, doc("N1", false, report(reconIBAN, "NT-1", d, d, detailed)), day.Add(21*time.Hour))
		if got.New != 0 {
			t.Errorf("the details are a new booking: %+v", got)
		}
		want := []string{"matched " + ps[0].ID + " 1000", "matched " + ps[1].ID + " 2000", "matched " + ps[2].ID + " 3500"}
		wantLines(t, "with its details", reconOf(t, s, payd.ReconFilter{From: d, To: d}), want...)

		// The next day, details first, then the lump: the same; and a
		// batch whose transactions do not add up to its entry.
		d2 := "2026-11-25"
		day2 := day.Add(24 * time.Hour)
		a := shop.credit(t, 400, "TXM0", day2)
		b := shop.credit(t, 600, "TXM1", day2)
		batch := payd.StatementEntry{BookingDate: d2, Direction: payd.DirCredit, Amount: 1000, Currency: "MDL", BankRef: "BATCH2", Code: rcdt, BatchCount: 2,
			Txs: []payd.StatementTx{{Amount: 400, Currency: "MDL", EndToEndID: shop.qrID, TxID: "TXM0"}, {Amount: 600, Currency: "MDL", EndToEndID: shop.qrID, TxID: "TXM1"}}}
		take(t, s, doc("N2", false, report(reconIBAN, "NT-2", d2, d2, batch)), day2.Add(time.Hour))
		bare := batch
		bare.Txs = nil
		take(t, s, doc("S2", true, report(reconIBAN, "ST-2", d2, d2, bare)), day2.Add(20*time.Hour))
		wantLines(t, "details before the lump", reconOf(t, s, payd.ReconFilter{From: d2, To: d2}), "matched "+a.ID+" 400", "matched "+b.ID+" 600")

		d3 := "2026-11-26"
		short := payd.StatementEntry{BookingDate: d3, Direction: payd.DirCredit, Amount: 1000, Currency: "MDL", BankRef: "BATCH3", Code: rcdt, BatchCount: 2,
			Txs: []payd.StatementTx{{Amount: 400, Currency: "MDL", TxID: "X1"}, {Amount: 500, Currency: "MDL", TxID: "X2"}}}
		take(t, s, doc("N3", false, report(reconIBAN, "NT-3", d3, d3, short)), day2.Add(24*time.Hour))
		var sums []payd.ReconLine
		for _, l := range reconOf(t, s, payd.ReconFilter{From: d3, To: d3}).Lines {
			if l.Outcome == payd.ReconSumMismatch {
				sums = append(sums, l)
			}
		}
		if len(sums) != 1 || sums[0].Class != payd.SumBatch || sums[0].Amount != 1000 || *sums[0].PaydAmount != 900 || sums[0].EntryID == "" {
			t.Errorf("the batch that does not add up: %+v", sums)
		}
	})
}

// TestReconCorrection: a corrected camt.053 (a new MsgId for the same
// account and period) supersedes the one it corrects: its corrected amount
// is what is matched, the old booking is reported superseded, and the
// statements say which replaced which.
func TestReconCorrection(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		shop := newReconShop(t, s, 0, day)
		p := shop.credit(t, 5000, "TX1", day)
		q := shop.credit(t, 700, "TX2", day)
		take(t, s, doc("S1", true, report(reconIBAN, "ST-1", d, d, booked(d, payd.DirCredit, 5001, "B1", shop.qrID, "TX1"),
			booked(d, payd.DirCredit, 700, "B2", shop.qrID, "TX2"))), day.Add(20*time.Hour))
		wantLines(t, "as first sent", reconOf(t, s, payd.ReconFilter{From: d, To: d}), "amount_mismatch "+p.ID+" 5001", "matched "+q.ID+" 700")
		got := take(t, s, doc("S1-C", true, report(reconIBAN, "ST-1", d, d, booked(d, payd.DirCredit, 5000, "B1", shop.qrID, "TX1"),
			booked(d, payd.DirCredit, 700, "B2", shop.qrID, "TX2"))), day.Add(22*time.Hour))
		if fmt.Sprint(got.Superseded) != "[S1]" {
			t.Errorf("superseded %v", got.Superseded)
		}
		rep := reconOf(t, s, payd.ReconFilter{From: d, To: d})
		wantLines(t, "corrected", rep, "superseded  5001", "matched "+p.ID+" 5000", "matched "+q.ID+" 700")
		by := map[string]string{}
		for _, si := range rep.Statements {
			by[si.MsgID] = si.SupersededBy
		}
		if by["S1"] != "S1-C" || by["S1-C"] != "" {
			t.Errorf("statements: %+v", rep.Statements)
		}
		// A correction by electronic sequence number, of another period's
		// statement, supersedes it too.
		d2 := "2026-11-25"
		r := shop.credit(t, 100, "TX3", day.Add(24*time.Hour))
		first := report(reconIBAN, "ST-2", d2, d2, booked(d2, payd.DirCredit, 999, "B3", shop.qrID, "TX3"))
		first.ElectronicSeq = "42"
		take(t, s, doc("S2", true, first), day.Add(44*time.Hour))
		fixed := report(reconIBAN, "ST-2b", d2, d2, booked(d2, payd.DirCredit, 100, "B3", shop.qrID, "TX3"))
		fixed.ElectronicSeq = "42"
		if got := take(t, s, doc("S2-C", true, fixed), day.Add(45*time.Hour)); fmt.Sprint(got.Superseded) != "[S2]" {
			t.Errorf("by sequence number: %v", got.Superseded)
		}
		wantLines(t, "the 25th corrected", reconOf(t, s, payd.ReconFilter{From: d2, To: d2}), "superseded  999", "matched "+r.ID+" 100")
	})
}

// TestReconSums: the opening balance plus the entries must be the closing
// one, TxsSummry must agree; every disagreement is a line. A statement of
// two pages is checked once whole, over both pages' entries.
func TestReconSums(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		newReconShop(t, s, 0, day)
		r := report(reconIBAN, "ST-1", d, d, booked(d, payd.DirCredit, 1000, "B1", "", "T1"), booked(d, payd.DirDebit, 300, "B2", "", "T2"))
		r.Balances = []payd.Balance{{Type: "OPBD", Amount: 10000, Currency: "MDL", Date: d}, {Type: "CLBD", Amount: 10800, Currency: "MDL", Date: d}}
		n, sum := 3, payd.Money(1300)
		r.Summary = &payd.TxSummary{Count: &n, Sum: &sum}
		take(t, s, doc("S1", true, r), day.Add(20*time.Hour))
		kinds := map[string][2]payd.Money{}
		for _, l := range reconOf(t, s, payd.ReconFilter{From: d, To: d, Outcome: payd.ReconSumMismatch}).Lines {
			kinds[l.Class+" "+l.Detail[strings.Index(l.Detail, ":")+2:]] = [2]payd.Money{l.Amount, *l.PaydAmount}
		}
		if len(kinds) != 2 || kinds["balance OPBD 100.00 + entries 7.00 = 107.00, the bank's CLBD is 108.00"] != [2]payd.Money{10800, 10700} ||
			kinds["txs_summary TxsSummry NbOfNtries is 3, the entries give 2"] != [2]payd.Money{3, 2} {
			t.Errorf("sum lines: %v", kinds)
		}

		// Two pages: the balances on the last; checked once both are here.
		d2 := "2026-11-25"
		p1 := doc("S2", true, report(reconIBAN, "ST-2", d2, d2, booked(d2, payd.DirCredit, 500, "C1", "", "U1")))
		p1.LastPage = false
		p1.Reports[0].Balances = []payd.Balance{{Type: "OPBD", Amount: 10800, Currency: "MDL", Date: d2}}
		p2 := doc("S2", true, report(reconIBAN, "ST-2", d2, d2, booked(d2, payd.DirCredit, 250, "C2", "", "U2")))
		p2.Page = 2
		p2.Reports[0].Balances = []payd.Balance{{Type: "CLBD", Amount: 11550, Currency: "MDL", Date: d2}}
		take(t, s, p2, day.Add(44*time.Hour))
		take(t, s, p1, day.Add(44*time.Hour))
		if rep := reconOf(t, s, payd.ReconFilter{From: d2, To: d2, Outcome: payd.ReconSumMismatch}); len(rep.Lines) != 0 {
			t.Errorf("two pages that add up: %+v", rep.Lines)
		}
		d3 := "2026-11-26"
		q1 := doc("S3", true, report(reconIBAN, "ST-3", d3, d3, booked(d3, payd.DirCredit, 500, "D1", "", "V1")))
		q1.LastPage = false
		q1.Reports[0].Balances = []payd.Balance{{Type: "OPBD", Amount: 11550, Currency: "MDL", Date: d3}}
		take(t, s, q1, day.Add(68*time.Hour))
		if rep := reconOf(t, s, payd.ReconFilter{From: d3, To: d3, Outcome: payd.ReconSumMismatch}); len(rep.Lines) != 0 {
			t.Errorf("checked before its last page: %+v", rep.Lines)
		}
		q2 := doc("S3", true, report(reconIBAN, "ST-3", d3, d3, booked(d3, payd.DirCredit, 250, "D2", "", "V2")))
		q2.Page = 2
		q2.Reports[0].Balances = []payd.Balance{{Type: "CLBD", Amount: 12000, Currency: "MDL", Date: d3}}
		take(t, s, q2, day.Add(68*time.Hour))
		if rep := reconOf(t, s, payd.ReconFilter{From: d3, To: d3, Outcome: payd.ReconSumMismatch}); len(rep.Lines) != 1 ||
			rep.Lines[0].Class != payd.SumBalance || *rep.Lines[0].PaydAmount != 12300 {
			t.Errorf("two pages that do not add up: %+v", rep.Lines)
		}
	})
}

// TestReconLateData: a credit payd records after its booking was taken
// (sent again days later) resolves when the operator matches again; a
// blind booking that took a payment for review yields it to the booking
// that names it; an operator's explanation is kept, audited, and the line
// asks nothing more.
func TestReconLateData(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		d := "2026-11-24"
		shop := newReconShop(t, s, 0, day)
		free := shop.credit(t, 777, "TXF", day)
		take(t, s, doc("S1", true, report(reconIBAN, "ST-1", d, d, booked(d, payd.DirCredit, 4200, "B1", shop.qrID, "TXLOST"),
			booked(d, payd.DirCredit, 777, "B2", "", ""))), day.Add(20*time.Hour))
		rep := reconOf(t, s, payd.ReconFilter{From: d, To: d})
		wantLines(t, "before", rep, "missing_in_payd  4200", "matched "+free.ID+" 777")
		for _, l := range rep.Lines {
			if l.PaymentID == free.ID && (!l.Review || l.Basis != payd.BasisAmountDate) {
				t.Errorf("the blind match is not for review: %+v", l)
			}
		}
		// The named booking of the same payment arrives in a camt.054.
		take(t, s, doc("N2", false, report(reconIBAN, "NT-2", d, d, booked(d, payd.DirCredit, 777, "B3", shop.qrID, "TXF"))), day.Add(21*time.Hour))
		wantLines(t, "named", reconOf(t, s, payd.ReconFilter{From: d, To: d}), "missing_in_payd  4200", "missing_in_payd  777", "matched "+free.ID+" 777")

		// Four days later the lost credit is recorded (the bank sent it
		// again): nothing is taken that day, so only matching again finds it.
		later := day.Add(96 * time.Hour)
		lost, err := s.Credit(ctx, payd.Credit{TargetID: shop.qrID, Amount: ptr(payd.Money(4200)), Currency: "MDL", Reference: "TXLOST", Routed: true,
			CreditorIBAN: reconIBAN, PayerName: "PAYER", At: day}, later)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.MatchAgain(ctx, d, d, "operator", later)
		if err != nil || n != 1 {
			t.Fatalf("match again: %d %v", n, err)
		}
		rep = reconOf(t, s, payd.ReconFilter{From: d, To: d})
		wantLines(t, "matched again", rep, "matched "+lost.ID+" 4200", "missing_in_payd  777", "matched "+free.ID+" 777")
		if n, err := s.MatchAgain(ctx, d, d, "operator", later); err != nil || n != 0 {
			t.Errorf("match again twice: %d %v", n, err)
		}

		var open payd.ReconLine
		for _, l := range rep.Lines {
			if l.Outcome == payd.ReconMissingInPayd {
				open = l
			}
		}
		if err := s.Explain(ctx, open.EntryID, open.Seq, "a cash deposit at the branch", "operator", later); err != nil {
			t.Fatal(err)
		}
		if err := s.Explain(ctx, "nosuchentry", 0, "x", "operator", later); !errors.Is(err, payd.ErrNotFound) {
			t.Errorf("explaining a line payd does not have: %v", err)
		}
		for _, l := range reconOf(t, s, payd.ReconFilter{From: d, To: d}).Lines {
			if l.EntryID == open.EntryID && (l.Explained == nil || l.Explained.Note != "a cash deposit at the branch" || l.Explained.By != "operator" ||
				!l.Explained.At.Equal(later)) {
				t.Errorf("the explained line: %+v", l)
			}
		}
		u, err := s.ReconUnresolved(ctx, d, d)
		if err != nil || u[payd.ReconMissingInPayd] != 0 {
			t.Errorf("unresolved after the explanation: %v %v", u, err)
		}
		audit, err := s.ReconAudit(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, a := range audit {
			actions = append(actions, a.Action)
		}
		if fmt.Sprint(actions) != "[explain match_again match_again]" {
			t.Errorf("audit: %+v", audit)
		}
	})
}
