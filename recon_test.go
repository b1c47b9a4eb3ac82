package payd

import (
	"testing"
	"time"
)

// TestMatchEntries: each outcome, and the order of the matching rules.
func TestMatchEntries(t *testing.T) {
	const acct = "MD24AG000225100013104168"
	day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	qr, rtp := "01a1fd38-56fa-7f9d-ba9b-1038a64df002", "01a1fd38-56fa-7f9d-ba9b-1038a64df001"
	items := []ReconItem{
		{Kind: "payment", ID: "p-rtp", Account: acct, Direction: DirCredit, Amount: 5000, Currency: "MDL", At: day, EndToEndID: rtp, BankRef: "TX1", TargetIDs: []string{rtp}},
		// Two payments of one Static QR: the same end-to-end id.
		{Kind: "payment", ID: "p-qr1", Account: acct, Direction: DirCredit, Amount: 1000, Currency: "MDL", At: day, EndToEndID: qr, BankRef: "TX2", TargetIDs: []string{qr}},
		{Kind: "payment", ID: "p-qr2", Account: acct, Direction: DirCredit, Amount: 1000, Currency: "MDL", At: day.Add(time.Hour), EndToEndID: qr, BankRef: "TX3", TargetIDs: []string{qr}},
		{Kind: "refund", ID: "r1", Account: acct, Direction: DirDebit, Amount: 2000, Currency: "MDL", At: day, EndToEndID: rtp, BankRef: "r1-id"},
		{Kind: "payment", ID: "p-free", Account: acct, Direction: DirCredit, Amount: 777, Currency: "MDL", At: day, BankRef: "TX9"},
	}
	entry := func(id, dir string, amount Money, e2e, tx string) StatementEntry {
		return StatementEntry{ID: id, Account: acct, BookingDate: "2026-11-24", Direction: dir, Amount: amount, Currency: "MDL", EndToEndID: e2e, TxID: tx}
	}
	entries := []StatementEntry{
		entry("e1", DirCredit, 5000, rtp, "TX1"),                                    // the RTP's credit
		entry("e2", DirCredit, 1000, qr, "TX3"),                                     // the QR's second payment, by its transaction reference
		entry("e3", DirCredit, 1000, qr, ""),                                        // the QR's other payment, by end-to-end id alone
		entry("e4", DirCredit, 1000, qr, "TX3"),                                     // TX3 booked again
		entry("e5", DirDebit, 2000, rtp, "r1-id"),                                   // the refund's return
		entry("e6", DirCredit, 4200, "", "TXLOST"),                                  // money payd never heard of
		entry("e7", DirCredit, 777, "", ""),                                         // no references: by amount and date
		entry("e8", DirCredit, 5000, "01a1fd38-56fa-7f9d-ba9b-1038a64df999", "TX8"), // names a target payd does not have
	}
	taken := map[string]string{}
	got := map[string]ReconMatch{}
	for _, m := range MatchEntries(entries, items, taken) {
		got[m.EntryID] = m
	}
	want := map[string][2]string{
		"e1": {ReconMatched, "p-rtp"}, "e2": {ReconMatched, "p-qr2"}, "e3": {ReconMatched, "p-qr1"}, "e4": {ReconDuplicate, "p-qr2"},
		"e5": {ReconMatched, "r1"}, "e6": {ReconMissingInPayd, ""}, "e7": {ReconMatched, "p-free"}, "e8": {ReconMissingInPayd, ""},
	}
	for id, w := range want {
		if got[id].Outcome != w[0] || got[id].ItemID != w[1] {
			t.Errorf("%s: %+v, want %s %s", id, got[id], w[0], w[1])
		}
	}

	// Another amount for a reference that names one payment.
	taken = map[string]string{}
	m := MatchEntries([]StatementEntry{entry("x", DirCredit, 4999, rtp, "TX1")}, items, taken)[0]
	if m.Outcome != ReconAmountMismatch || m.ItemID != "p-rtp" || m.PaydAmount != 5000 || taken["payment:p-rtp"] != "x" {
		t.Errorf("amount mismatch: %+v", m)
	}
	// Matching again the entry that booked an item is not a duplicate of itself.
	m = MatchEntries([]StatementEntry{entry("x", DirCredit, 5000, rtp, "TX1")}, items, taken)[0]
	if m.Outcome != ReconMatched {
		t.Errorf("re-matching the same entry: %+v", m)
	}
	// By amount only within the tolerance of the booking date.
	far := entry("far", DirCredit, 777, "", "")
	far.BookingDate = "2026-11-28"
	if m := MatchEntries([]StatementEntry{far}, items, map[string]string{})[0]; m.Outcome != ReconMissingInPayd {
		t.Errorf("an entry four days away matched by amount: %+v", m)
	}
}

func TestSettlementTotals(t *testing.T) {
	days := []SettlementDay{
		{Date: "2026-11-24", Currency: "MDL", Payments: 2, Gross: 10000, Commission: 150, Refunds: 1, Refunded: 2000},
		{Date: "2026-11-24", Currency: "EUR", Payments: 1, Gross: 500, Commission: 5},
		{Date: "2026-11-25", Currency: "MDL", Payments: 1, Gross: 3000, Commission: 45},
	}
	for i := range days {
		days[i].Settle()
	}
	if days[0].Net != 7850 {
		t.Errorf("net %s, want 78.50", days[0].Net)
	}
	tot := SettlementTotals(days)
	if len(tot) != 2 || tot[0].Currency != "MDL" || tot[0].Payments != 3 || tot[0].Gross != 13000 || tot[0].Net != 10805 || tot[1].Net != 495 {
		t.Errorf("totals %+v", tot)
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"01A1FD3856FA7F9DBA9B1038A64DF001":     "01a1fd38-56fa-7f9d-ba9b-1038a64df001",
		"01a1fd38-56fa-7f9d-ba9b-1038a64df001": "01a1fd38-56fa-7f9d-ba9b-1038a64df001",
		" BANKTX0001 ":                         "BANKTX0001",
		"NOTPROVIDED":                          "NOTPROVIDED",
	} {
		if got := NormalizeRef(in); got != want {
			t.Errorf("NormalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}
