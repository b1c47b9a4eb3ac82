package iso20022

import (
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022/xsdtest"
)

// testStatement is the day's statement of the test merchant's account: an
// RTP's credit, a Static QR's credit, and a refund's return.
func testStatement() (*Camt053, *Camt054) {
	day := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	entry := func(ref, dir, amount, e2e, tx string, code BankTxCode) Entry {
		amt := Amount{Ccy: "MDL", Value: amount}
		return Entry{NtryRef: ref, Amt: amt, CdtDbtInd: dir, Sts: "BOOK", BookgDt: &DateChoice{Dt: "2026-11-24"},
			ValDt: &DateChoice{Dt: "2026-11-24"}, AcctSvcrRef: ref, BkTxCd: code,
			NtryDtls: []EntryDetails{{TxDtls: []TxDetails{{Refs: &TxRefs{AcctSvcrRef: ref, EndToEndID: e2e, TxID: tx}, Amt: &amt, CdtDbtInd: dir}}}}}
	}
	entries := []Entry{
		entry("BK241126000001", "CRDT", "50.00", "01a1fd3856fa7f9dba9b1038a64df001", "BANKTX0001", CodeReceivedCredit),
		entry("BK241126000002", "CRDT", "12.30", "01a1fd3856fa7f9dba9b1038a64df002", "BANKTX0002", CodeReceivedCredit),
		entry("BK241126000003", "DBIT", "20.00", "01a1fd3856fa7f9dba9b1038a64df001", "01a1fd3856fa7f9dba9b1038a64df301", CodeReturn),
	}
	rep := AccountReport{ID: "13104168-2026-11-24", CreDtTm: "2026-11-24T23:59:59.999Z", Acct: *IBAN("MD24AG000225100013104168"),
		FrToDt: &Period{FrDtTm: Time(day), ToDtTm: Time(day.Add(24*time.Hour - time.Millisecond))},
		Bal: []Balance{{Tp: "OPBD", Amt: Amount{Ccy: "MDL", Value: "0.00"}, CdtDbtInd: "CRDT", Dt: DateChoice{Dt: "2026-11-24"}},
			{Tp: "CLBD", Amt: Amount{Ccy: "MDL", Value: "42.30"}, CdtDbtInd: "CRDT", Dt: DateChoice{Dt: "2026-11-24"}}},
		Ntries: entries}
	hdr := StatementHeader{MsgID: "S0532411240001", CreDtTm: "2026-11-25T00:05:00.000Z"}
	note := rep
	note.Bal, note.Ntries = nil, entries[:1]
	return &Camt053{Body: Camt053Body{GrpHdr: hdr, Stmts: []AccountReport{rep}}},
		&Camt054{Body: Camt054Body{GrpHdr: StatementHeader{MsgID: "S0542411240001", CreDtTm: "2026-11-24T10:03:00.000Z"}, Ntfctns: []AccountReport{note}}}
}

// TestStatementsGoldenAndRead: the statements payd-bank writes (and a
// bank sends) validate against their XSD, and payd reads each booked
// entry with its references; the same booking in the day's notification
// and its end-of-day statement is one entry.
func TestStatementsGoldenAndRead(t *testing.T) {
	c053, c054 := testStatement()
	b053, err := Marshal(c053)
	if err != nil {
		t.Fatal(err)
	}
	b054, _ := Marshal(c054)
	golden(t, "camt053.xml", b053)
	golden(t, "camt054.xml", b054)
	xsdtest.Validate(t, "camt.053", b053)
	xsdtest.Validate(t, "camt.054", b054)
	st, err := ReadStatement(b053)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "camt.053" || !st.EndOfDay || st.MsgID != "S0532411240001" || len(st.Reports) != 1 {
		t.Fatalf("statement: %+v", st)
	}
	r := st.Reports[0]
	if r.Account != "MD24AG000225100013104168" || r.From != "2026-11-24" || r.To != "2026-11-24" || len(r.Entries) != 3 {
		t.Fatalf("report: %+v", r)
	}
	e := r.Entries[2]
	if e.Direction != payd.DirDebit || e.Amount != 2000 || e.EndToEndID != "01a1fd38-56fa-7f9d-ba9b-1038a64df001" ||
		e.TxID != "01a1fd38-56fa-7f9d-ba9b-1038a64df301" || e.BookingDate != "2026-11-24" || e.BankRef != "BK241126000003" {
		t.Errorf("the return's entry: %+v", e)
	}
	if r.Entries[1].TxID != "BANKTX0002" || r.Entries[1].Amount != 1230 {
		t.Errorf("the QR credit's entry: %+v", r.Entries[1])
	}
	note, err := ReadStatement(b054)
	if err != nil {
		t.Fatal(err)
	}
	if note.EndOfDay || len(note.Reports[0].Entries) != 1 || note.Reports[0].Entries[0].ID != r.Entries[0].ID {
		t.Errorf("the notification's entry is not the statement's: %+v", note.Reports[0].Entries)
	}
	for name, doc := range map[string]string{
		"two amounts": strings.Replace(string(b053), `<Amt Ccy="MDL">50.00</Amt>`, `<Amt Ccy="MDL">50.00</Amt><Amt Ccy="MDL">5.00</Amt>`, 1),
		"no Ccy":      strings.Replace(string(b053), `<Amt Ccy="MDL">12.30</Amt>`, `<Amt>12.30</Amt>`, 1),
		"not an IBAN": strings.Replace(string(b053), "MD24AG000225100013104168", "12345", 1),
		"no MsgId":    strings.Replace(string(b053), "<MsgId>S0532411240001</MsgId>", "<MsgId></MsgId>", 1),
	} {
		if _, err := ReadStatement([]byte(doc)); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}
