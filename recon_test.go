package payd

import (
	"testing"
	"time"
)

const testAcct = "MD24AG000225100013104168"

var (
	reconDay = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	qrRef    = "01a1fd38-56fa-7f9d-ba9b-1038a64df002"
	rtpRef   = "01a1fd38-56fa-7f9d-ba9b-1038a64df001"
)

func reconItems() []ReconItem {
	return []ReconItem{
		{Kind: "payment", ID: "p-rtp", Account: testAcct, Direction: DirCredit, Amount: 5000, Currency: "MDL", At: reconDay, EndToEndID: rtpRef, BankRef: "TX1", TargetIDs: []string{rtpRef}},
		// Two payments of one Static QR: the same end-to-end id.
		{Kind: "payment", ID: "p-qr1", Account: testAcct, Direction: DirCredit, Amount: 1000, Currency: "MDL", At: reconDay, EndToEndID: qrRef, BankRef: "TX2", TargetIDs: []string{qrRef}},
		{Kind: "payment", ID: "p-qr2", Account: testAcct, Direction: DirCredit, Amount: 1000, Currency: "MDL", At: reconDay.Add(time.Hour), EndToEndID: qrRef, BankRef: "TX3", TargetIDs: []string{qrRef}},
		{Kind: "refund", ID: "r1", Account: testAcct, Direction: DirDebit, Amount: 2000, Currency: "MDL", At: reconDay, EndToEndID: rtpRef, BankRef: "r1-id"},
		{Kind: "payment", ID: "p-free", Account: testAcct, Direction: DirCredit, Amount: 777, Currency: "MDL", At: reconDay, BankRef: "TX9"},
	}
}

// line is a statement line of one transaction with its references.
func line(id, dir string, amount Money, e2e, tx string) ReconUnit {
	u := ReconUnit{EntryID: id, Account: testAcct, BookingDate: "2026-11-24", Direction: dir, Amount: amount, Currency: "MDL",
		Code: BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}, EndToEndID: e2e, TxID: tx}
	for _, r := range []string{e2e, tx} {
		if r != "" {
			u.Refs = append(u.Refs, r)
		}
	}
	return u
}

func known(string) bool { return true }

func matchAll(units []ReconUnit, booked map[string]Booking) map[string]ReconMatch {
	got := map[string]ReconMatch{}
	for _, m := range MatchUnits(units, reconItems(), booked, known) {
		got[m.EntryID] = m
	}
	return got
}

// TestMatchUnits: each outcome, and the order of the matching rules.
func TestMatchUnits(t *testing.T) {
	got := matchAll([]ReconUnit{
		line("e1", DirCredit, 5000, rtpRef, "TX1"),                                 // the RTP's credit
		line("e2", DirCredit, 1000, qrRef, "TX3"),                                  // the QR's second payment, by its transaction reference
		line("e3", DirCredit, 1000, qrRef, ""),                                     // the QR's other payment, by end-to-end id alone
		line("e4", DirCredit, 1000, qrRef, "TX3"),                                  // TX3 booked again
		line("e5", DirDebit, 2000, rtpRef, "r1-id"),                                // the refund's return
		line("e6", DirCredit, 4200, "", "TXLOST"),                                  // money payd never heard of
		line("e7", DirCredit, 777, "", ""),                                         // no references: by amount and date, for review
		line("e8", DirCredit, 5000, "01a1fd38-56fa-7f9d-ba9b-1038a64df999", "TX8"), // names a target payd does not have
		line("e9", DirCredit, 0, "", ""),                                           // zero: kept, not matched
		{EntryID: "e10", Account: testAcct, BookingDate: "2026-11-24", Direction: DirCredit, Amount: 9000, Currency: "MDL", Lump: true}, // a lump sum
	}, map[string]Booking{})
	want := map[string][2]string{
		"e1": {ReconMatched, "p-rtp"}, "e2": {ReconMatched, "p-qr2"}, "e3": {ReconMatched, "p-qr1"}, "e4": {ReconDuplicate, "p-qr2"},
		"e5": {ReconMatched, "r1"}, "e6": {ReconMissingInPayd, ""}, "e7": {ReconMatched, "p-free"}, "e8": {ReconMissingInPayd, ""},
		"e9": {ReconZero, ""}, "e10": {ReconAwaitingDetails, ""},
	}
	for id, w := range want {
		if got[id].Outcome != w[0] || got[id].ItemID != w[1] {
			t.Errorf("%s: %+v, want %s %s", id, got[id], w[0], w[1])
		}
	}
	if m := got["e7"]; m.Basis != BasisAmountDate || !m.Review {
		t.Errorf("the amount-and-date match is not marked for review: %+v", m)
	}
	if m := got["e1"]; m.Basis != BasisReference || m.Review {
		t.Errorf("a match by reference: %+v", m)
	}
	// Another amount for a reference that names one payment.
	booked := map[string]Booking{}
	m := MatchUnits([]ReconUnit{line("x", DirCredit, 4999, rtpRef, "TX1")}, reconItems(), booked, known)[0]
	if m.Outcome != ReconAmountMismatch || m.ItemID != "p-rtp" || m.PaydAmount != 5000 || booked["payment:p-rtp"].Unit != "x/0" {
		t.Errorf("amount mismatch: %+v %v", m, booked)
	}
	// Matching again the line that booked an item is not a duplicate of itself.
	if m := MatchUnits([]ReconUnit{line("x", DirCredit, 5000, rtpRef, "TX1")}, reconItems(), booked, known)[0]; m.Outcome != ReconMatched {
		t.Errorf("re-matching the same line: %+v", m)
	}
}

// TestAmountFallbackOnlyWhenUnambiguous: a line without references takes
// a payment by amount and date only when it is the one such line and the
// payment the one such payment; otherwise it is missing in payd rather
// than taking a payment that may be another's.
func TestAmountFallbackOnlyWhenUnambiguous(t *testing.T) {
	items := append(reconItems(), ReconItem{Kind: "payment", ID: "p-free2", Account: testAcct, Direction: DirCredit, Amount: 777,
		Currency: "MDL", At: reconDay, BankRef: "TX10"})
	// Two payments of 777: neither is taken.
	for _, m := range MatchUnits([]ReconUnit{line("a", DirCredit, 777, "", "")}, items, map[string]Booking{}, known) {
		if m.Outcome != ReconMissingInPayd || m.ItemID != "" {
			t.Errorf("one line, two payments of its amount: %+v", m)
		}
	}
	// Two lines of 777 for one payment: neither takes it.
	for _, m := range MatchUnits([]ReconUnit{line("a", DirCredit, 777, "", ""), line("b", DirCredit, 777, "", "")}, reconItems(), map[string]Booking{}, known) {
		if m.Outcome != ReconMissingInPayd {
			t.Errorf("two lines, one payment of their amount: %+v", m)
		}
	}
	// A payment booked by its reference is not taken by amount.
	got := MatchUnits([]ReconUnit{line("a", DirCredit, 5000, rtpRef, "TX1"), line("b", DirCredit, 5000, "", "")}, reconItems(), map[string]Booking{}, known)
	if got[1].Outcome != ReconMissingInPayd {
		t.Errorf("a blind line took a payment booked by reference: %+v", got[1])
	}
	// A blind line took a payment for review; the payment's own booking,
	// naming it, arrives later: the reference wins, the blind line is
	// missing in payd again, and nothing is called a duplicate.
	booked := map[string]Booking{}
	if m := MatchUnits([]ReconUnit{line("blind", DirCredit, 777, "", "")}, reconItems(), booked, known)[0]; m.ItemID != "p-free" || !m.Review {
		t.Fatalf("the blind line: %+v", m)
	}
	got = MatchUnits([]ReconUnit{line("named", DirCredit, 777, "", "TX9")}, reconItems(), booked, known)
	if len(got) != 2 || got[0].EntryID != "blind" || got[0].Outcome != ReconMissingInPayd || got[0].ItemID != "" ||
		got[1].Outcome != ReconMatched || got[1].ItemID != "p-free" || got[1].Review {
		t.Errorf("the named booking after a blind one: %+v", got)
	}
	if b := booked["payment:p-free"]; b.Unit != "named/0" || b.Review {
		t.Errorf("booked by %+v", b)
	}
	// Too far from its date: nothing.
	far := line("a", DirCredit, 777, "", "")
	far.BookingDate = "2026-11-29"
	if m := MatchUnits([]ReconUnit{far}, reconItems(), map[string]Booking{}, known)[0]; m.Outcome != ReconMissingInPayd {
		t.Errorf("a line five days from its payment: %+v", m)
	}
}

// TestReversals: a reversal takes back what it reverses: the line that
// booked the item becomes reversed (the item is booked no more), the
// reversal names it; a bounced refund return no longer counts as booked.
func TestReversals(t *testing.T) {
	booked := map[string]Booking{}
	first := MatchUnits([]ReconUnit{line("e1", DirCredit, 5000, rtpRef, "TX1"), line("e5", DirDebit, 2000, rtpRef, "r1-id")}, reconItems(), booked, known)
	if first[0].Outcome != ReconMatched || first[1].Outcome != ReconMatched {
		t.Fatalf("bookings: %+v", first)
	}
	back := line("rv1", DirDebit, 5000, rtpRef, "TX1") // the bank takes the credit back
	back.Reversal = true
	bounce := line("rv2", DirCredit, 2000, rtpRef, "r1-id") // the refund's return came back
	bounce.Reversal = true
	got := map[string]ReconMatch{}
	for _, m := range MatchUnits([]ReconUnit{back, bounce}, reconItems(), booked, known) {
		got[m.EntryID] = m
	}
	for id, w := range map[string][2]string{"rv1": {ReconReversal, "p-rtp"}, "e1": {ReconReversed, "p-rtp"}, "rv2": {ReconReversal, "r1"},
		"e5": {ReconReversed, "r1"}} {
		if got[id].Outcome != w[0] || got[id].ItemID != w[1] {
			t.Errorf("%s: %+v, want %s %s", id, got[id], w[0], w[1])
		}
	}
	if !booked["payment:p-rtp"].Reversed || !booked["refund:r1"].Reversed {
		t.Errorf("the items still count as booked: %v", booked)
	}
	// A reversal of nothing payd knows is still a reversal, of no item.
	odd := line("rv3", DirDebit, 100, "", "SOMETHINGELSE")
	odd.Reversal = true
	if m := MatchUnits([]ReconUnit{odd}, reconItems(), map[string]Booking{}, known)[0]; m.Outcome != ReconReversal || m.ItemID != "" {
		t.Errorf("an unknown reversal: %+v", m)
	}
}

// TestClassify: lines that are no payment are named by their code,
// currency and account, never called missing in payd.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		code   BankTxCode
		dir    string
		ccy    string
		class  string
		known  bool
		expect string
	}{
		{BankTxCode{Domain: "PMNT", Family: "MDOP", SubFamily: "FEES"}, DirDebit, "MDL", ClassFee, true, ReconNotPayment},
		{BankTxCode{Domain: "ACMT", Family: "ADOP", SubFamily: "CHRG"}, DirDebit, "MDL", ClassFee, true, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "COMM"}, DirDebit, "MDL", ClassCommission, true, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "ICDT", SubFamily: "DMCT"}, DirDebit, "MDL", ClassOwnTransfer, true, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}, DirCredit, "EUR", ClassOtherCurrency, true, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}, DirCredit, "MDL", ClassUnknownAccount, false, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "RDDT", SubFamily: "ESDD"}, DirDebit, "MDL", ClassOther, true, ReconNotPayment},
		{BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}, DirCredit, "MDL", "", true, ReconMissingInPayd},
		{BankTxCode{}, DirCredit, "MDL", "", true, ReconMissingInPayd},
	} {
		u := line("x", c.dir, 4200, "", "NOSUCHTX")
		u.Code, u.Currency = c.code, c.ccy
		m := MatchUnits([]ReconUnit{u}, reconItems(), map[string]Booking{}, func(string) bool { return c.known })[0]
		if m.Outcome != c.expect || m.Class != c.class {
			t.Errorf("%s %s %s (known %v): %s %s, want %s %s", c.code, c.dir, c.ccy, c.known, m.Outcome, m.Class, c.expect, c.class)
		}
	}
}

// TestUnitsOf: an entry of one transaction is one line of the entry's
// amount, a batch one line a transaction, a lump sum of several
// transactions not detailed one line awaiting its details; payd's ids in
// the remittance are references.
func TestUnitsOf(t *testing.T) {
	e := StatementEntry{ID: "E", Account: testAcct, BookingDate: "2026-11-24", Direction: DirCredit, Amount: 522, Currency: "MDL",
		Txs: []StatementTx{{Amount: 0, Currency: "SEK", EndToEndID: NotProvidedRef, Remittance: []string{"QRR 210000000003139471430009017", "order " + "01A1FD3856FA7F9DBA9B1038A64DF002"}}}}
	us := UnitsOf(e)
	if len(us) != 1 || us[0].Amount != 522 || us[0].Currency != "MDL" || len(us[0].Refs) != 1 || us[0].Refs[0] != qrRef {
		t.Errorf("one transaction: %+v", us)
	}
	e.Txs = []StatementTx{{Amount: 300, Currency: "MDL", EndToEndID: rtpRef}, {Amount: 222, Currency: "MDL", TxID: "T2"}}
	if us := UnitsOf(e); len(us) != 2 || us[0].Amount != 300 || us[1].Amount != 222 || us[1].Seq != 1 {
		t.Errorf("a batch: %+v", us)
	}
	e.Txs, e.BatchCount = nil, 2
	if us := UnitsOf(e); len(us) != 1 || !us[0].Lump {
		t.Errorf("a lump sum: %+v", us)
	}
}

// TestEntryKeys: one booking carried by a notification and the day's
// statement has one id; two bookings that share the bank's reference (as
// PostFinance's do) have two; two identical fees of a day are two.
func TestEntryKeys(t *testing.T) {
	entry := func(ref, nref string, amount Money) StatementEntry {
		return StatementEntry{BankRef: ref, EntryRef: nref, BookingDate: "2026-11-24", Direction: DirCredit, Amount: amount, Currency: "MDL"}
	}
	a := StatementReport{Account: testAcct, Entries: []StatementEntry{entry("KBMSU", "N1", 1537), entry("KBMSU", "N2", 169222), entry("FEE", "", 100), entry("FEE", "", 100)}}
	b := StatementReport{Account: testAcct, Entries: []StatementEntry{entry("KBMSU", "N2", 169222)}}
	EntryKeys(&a)
	EntryKeys(&b)
	ids := map[string]bool{}
	for _, e := range a.Entries {
		ids[e.ID] = true
	}
	if len(ids) != 4 {
		t.Errorf("%d ids for 4 bookings", len(ids))
	}
	if b.Entries[0].ID != a.Entries[1].ID {
		t.Error("the same booking in two documents has two ids")
	}
}

// TestCheckSums: balances, batches and TxsSummry against the entries.
func TestCheckSums(t *testing.T) {
	n, sum, net := 2, Money(7000), Money(3000)
	r := StatementReport{Account: testAcct, AccountCcy: "MDL", To: "2026-11-24",
		Balances: []Balance{{Type: "OPBD", Amount: 10000, Currency: "MDL", Date: "2026-11-24"}, {Type: "CLBD", Amount: 13000, Currency: "MDL", Date: "2026-11-24"}},
		Summary:  &TxSummary{Count: &n, Sum: &sum, Net: &net},
		Entries: []StatementEntry{
			{ID: "a", Direction: DirCredit, Amount: 5000, Currency: "MDL", Txs: []StatementTx{{Amount: 3000}, {Amount: 2000}}},
			{ID: "b", Direction: DirDebit, Amount: 2000, Currency: "MDL"},
		}}
	if got := CheckSums(&r); len(got) != 0 {
		t.Errorf("sums that hold: %+v", got)
	}
	r.Balances[1].Amount = 12999
	r.Entries[0].Txs[1].Amount = 1999
	bad := Money(6999)
	r.Summary.Sum = &bad
	kinds := map[string]bool{}
	for _, m := range CheckSums(&r) {
		kinds[m.Kind] = true
	}
	if !kinds[SumBalance] || !kinds[SumBatch] || !kinds[SumSummary] {
		t.Errorf("mismatches found: %v", kinds)
	}
}
