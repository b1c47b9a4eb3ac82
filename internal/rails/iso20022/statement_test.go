package iso20022

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022/xsdtest"
)

// realStatements is the directory of the banks' own files: the
// workspace's shared/statements beside the repository (or above a clone of
// it), or PAYD_STATEMENTS_DIR.
var realStatements = func() string {
	if d := os.Getenv("PAYD_STATEMENTS_DIR"); d != "" {
		return d
	}
	dir, _ := filepath.Abs(".")
	for {
		if st, err := os.Stat(filepath.Join(dir, "shared", "statements")); err == nil && st.IsDir() {
			return filepath.Join(dir, "shared", "statements")
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "../../../../shared/statements"
		}
		dir = up
	}
}()

var bankLoc = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Chisinau")
	if err != nil {
		panic(err)
	}
	return loc
}()

// statementFiles are the real statements; without them the tests skip,
// except under CI, where they fail.
func statementFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(realStatements, "*.xml"))
	if err == nil && len(files) > 0 {
		return files
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("no statements in %s (PAYD_STATEMENTS_DIR): %v", realStatements, err)
	}
	t.Skipf("the real banks' statements are not here (%s; set PAYD_STATEMENTS_DIR)", realStatements)
	return nil
}

// TestRealStatements reads every real bank statement that its XSD
// accepts, as the bank wrote it, and books each entry as the bank meant
// it: its kind and version, account, the booked entries of each direction
// and their sums, the reversals, the transactions detailed. (The figures
// were counted from the files by another parser.) Each entry has an id of
// its own, also where two share the bank's reference.
func TestRealStatements(t *testing.T) {
	want := map[string]struct {
		kind, version, account string
		credits                int
		creditSum              payd.Money
		debits                 int
		debitSum               payd.Money
		reversals, txs         int
	}{
		"genkgo-camt053-v2-minimal.xml":                        {"camt.053", "001.02", "NL26VAYB8060476890", 1, 885, 0, 0, 0, 1},
		"genkgo-camt053-v4.xml":                                {"camt.053", "001.04", "NL26VAYB8060476890", 1, 885, 0, 0, 0, 1},
		"genkgo-camt053-v8.xml":                                {"camt.053", "001.08", "NL26VAYB8060476890", 1, 885, 0, 0, 0, 1},
		"genkgo-mdr-camt054-v8-with-UETR.xml":                  {"camt.054", "001.08", "CH2801234000123456789", 0, 0, 1, 20000000, 0, 1},
		"genkgo-mdr-camt054-v8.xml":                            {"camt.054", "001.08", "CH2801234000123456789", 0, 0, 1, 20000000, 0, 3},
		"libeufin-postfinance-camt053-v2009.xml":               {"camt.053", "001.04", "CH2909000000250094239", 4, 473372, 1, 7770, 0, 5},
		"libeufin-postfinance-camt053-v2019.xml":               {"camt.053", "001.08", "CH2909000000250094239", 4, 473372, 1, 7770, 0, 5},
		"libeufin-postfinance-camt054-1335-v2019.xml":          {"camt.054", "001.08", "CH2909000000250094239", 1, 169222, 0, 0, 0, 2},
		"libeufin-postfinance-camt054-chdd-v2019.xml":          {"camt.054", "001.08", "CH2909000000250094239", 1, 450, 0, 0, 0, 2},
		"libeufin-postfinance-camt054-qrbill-1112-v2009.xml":   {"camt.054", "001.04", "CH2909000000250094239", 1, 52210, 0, 0, 0, 1},
		"libeufin-postfinance-camt054-qrbill-1112-v2019.xml":   {"camt.054", "001.08", "CH2909000000250094239", 1, 52210, 0, 0, 0, 1},
		"libeufin-postfinance-camt054-return-batch-v2019.xml":  {"camt.054", "001.08", "CH2909000000250094239", 1, 40000, 0, 0, 0, 1},
		"libeufin-postfinance-camt054-return-single-v2019.xml": {"camt.054", "001.08", "CH5109000000250092291", 1, 50000, 0, 0, 1, 1},
		"moov-fffs-camt053-v2.xml":                             {"camt.053", "001.02", "FI7433010001222090", 6, 2307500, 4, 943017, 0, 12},
		"moov-fffs-camt054-v2.xml":                             {"camt.054", "001.02", "FI7433010001222090", 3, 550000, 2, 523005, 0, 11},
		"moov-siauliu-camt053-v2.xml":                          {"camt.053", "001.02", "LT007180000000000000", 0, 0, 4, 276808, 0, 4},
		"oca-abnamro-camt053-v2.xml":                           {"camt.053", "001.02", "NL77ABNA0574908765", 1, 140531, 2, 141830, 1, 4},
		"oca-camt054-v4.xml":                                   {"camt.054", "001.04", "NL77ABNA0574908765", 1, 500, 0, 0, 0, 1},
		"viafintech-postfinance-camt053-v4.xml":                {"camt.053", "001.04", "CH0309000000250090342", 5, 181056, 8, 127295, 2, 32},
		"viafintech-postfinance-camt054-v4.xml":                {"camt.054", "001.04", "CH0309000000250090342", 2, 8056, 2, 2153, 2, 5},
	}
	files := statementFiles(t)
	read := 0
	for _, f := range files {
		name := filepath.Base(f)
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !xsdtest.Accepts(t, body) {
			if _, ok := want[name]; ok {
				t.Errorf("%s: its XSD refuses it, yet it is expected", name)
			}
			continue // trimmed or invalid as published: not a promise
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: its XSD accepts it and the test expects nothing of it", name)
			continue
		}
		read++
		st, err := ReadStatement(body, bankLoc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var credits, debits, reversals, txs int
		var creditSum, debitSum payd.Money
		ids := map[string]bool{}
		for _, r := range st.Reports {
			if r.Account != w.account {
				t.Errorf("%s: account %s, want %s", name, r.Account, w.account)
			}
			for _, e := range r.Entries {
				if e.Direction == payd.DirCredit {
					credits, creditSum = credits+1, creditSum+e.Amount
				} else {
					debits, debitSum = debits+1, debitSum+e.Amount
				}
				if e.Reversal {
					reversals++
				}
				txs += len(e.Txs)
				if ids[e.ID] {
					t.Errorf("%s: two entries share the id %s", name, e.ID)
				}
				ids[e.ID] = true
				if _, err := time.Parse(time.DateOnly, e.BookingDate); err != nil {
					t.Errorf("%s: booking date %q", name, e.BookingDate)
				}
			}
		}
		got := []any{st.Kind, st.Version, credits, creditSum, debits, debitSum, reversals, txs}
		exp := []any{w.kind, w.version, w.credits, w.creditSum, w.debits, w.debitSum, w.reversals, w.txs}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s: kind, version, credits, their sum, debits, their sum, reversals, transactions:\n got %v\nwant %v", name, got, exp)
		}
	}
	if read != len(want) {
		t.Errorf("read %d of the %d statements their XSD accepts", read, len(want))
	}
}

// TestRealStatementsAsTheBankMeant: what particular files say, read as
// their banks meant it.
func TestRealStatementsAsTheBankMeant(t *testing.T) {
	statementFiles(t)
	readFile := func(name string) *payd.Statement {
		t.Helper()
		body, err := os.ReadFile(filepath.Join(realStatements, name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := ReadStatement(body, bankLoc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return st
	}
	// PostFinance's QR-bill credit: EndToEndId NOTPROVIDED, the QR
	// reference and two AddtlRmtInf in its remittance (a list the schema
	// allows, taken whole).
	qr := readFile("libeufin-postfinance-camt054-qrbill-1112-v2019.xml")
	tx := qr.Reports[0].Entries[0].Txs[0]
	if tx.EndToEndID != payd.NotProvidedRef || len(tx.Remittance) != 2 || tx.Party != "Bernasconi Maria" {
		t.Errorf("QR-bill credit: %+v", tx)
	}
	// Version 2009's status is text, 2019's a code: both BOOK.
	v09 := readFile("libeufin-postfinance-camt054-qrbill-1112-v2009.xml")
	if len(v09.Reports[0].Entries) != 1 || v09.Reports[0].Entries[0].ID != qr.Reports[0].Entries[0].ID {
		t.Errorf("the same booking in .001.04 and .001.08 is not one entry: %+v", v09.Reports[0].Entries)
	}
	// Two entries of one statement that share their AcctSvcrRef.
	pf := readFile("libeufin-postfinance-camt053-v2019.xml")
	es := pf.Reports[0].Entries
	if es[3].BankRef != es[4].BankRef || es[3].ID == es[4].ID || es[4].Amount != 169222 {
		t.Errorf("entries 4 and 5: %+v %+v", es[3], es[4])
	}
	// A return booked back (RvslInd true) with its reason's code.
	ret := readFile("libeufin-postfinance-camt054-return-single-v2019.xml").Reports[0].Entries[0]
	if !ret.Reversal || ret.Direction != payd.DirCredit || ret.Code.Family != "ICDT" || ret.Code.SubFamily != "RRTN" {
		t.Errorf("the return: %+v", ret)
	}
	// Finance Finland: the camt.053 books batches as lump sums, the
	// camt.054 details them; the same bookings have the same ids.
	fi053, fi054 := readFile("moov-fffs-camt053-v2.xml"), readFile("moov-fffs-camt054-v2.xml")
	ids := map[string]payd.StatementEntry{}
	for _, e := range fi053.Reports[0].Entries {
		ids[e.ID] = e
	}
	detailed := 0
	for _, e := range fi054.Reports[0].Entries {
		if lump, ok := ids[e.ID]; ok && len(e.Txs) > 1 && len(lump.Txs) < len(e.Txs) {
			detailed++
		}
	}
	if detailed < 3 {
		t.Errorf("the camt.054 details %d of the camt.053's lump sums, want 3 at least", detailed)
	}
	// Fees are booked with their codes (Šiaulių bankas: PMNT/MDOP/FEES).
	fees := 0
	for _, e := range readFile("moov-siauliu-camt053-v2.xml").Reports[0].Entries {
		if e.Code.SubFamily == "FEES" {
			fees++
		}
	}
	if fees != 2 {
		t.Errorf("%d fee entries, want 2", fees)
	}
	// A DtTm without an offset is the bank's local time.
	if p := pf.Reports[0]; p.From != "2020-06-24" || p.To != "2020-06-24" {
		t.Errorf("FrToDt 2020-06-24T00:00:00..23:59:59 read as %s..%s", p.From, p.To)
	}
}

// sampleStatement has what payd reads of a statement, for each version.
func sampleStatement(kind string) *payd.Statement {
	amount := func(m payd.Money) *payd.Money { return &m }
	n := func(v int) *int { return &v }
	st := &payd.Statement{MsgID: "S053-2611240001", Kind: kind, EndOfDay: kind == payd.KindCamt053, CreatedAt: time.Date(2026, 11, 24, 22, 5, 0, 0, time.UTC),
		Page: 1, LastPage: true}
	entries := []payd.StatementEntry{
		{EntryRef: "BK1", BankRef: "BK1", BookingDate: "2026-11-24", ValueDate: "2026-11-24", Direction: payd.DirCredit, Amount: 5000, Currency: "MDL",
			Code: payd.BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"},
			Txs: []payd.StatementTx{{Amount: 5000, Currency: "MDL", Direction: payd.DirCredit, EndToEndID: "01a1fd38-56fa-7f9d-ba9b-1038a64df001",
				TxID: "BANKTX0001", BankRef: "BK1", Party: "Ion Popescu", Remittance: []string{"Order 42"}}}},
		{EntryRef: "BK2", BankRef: "BK2", BookingDate: "2026-11-24", Direction: payd.DirCredit, Amount: 3000, Currency: "MDL", BatchCount: 2, BatchTotal: amount(3000),
			Code: payd.BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"},
			Txs:  []payd.StatementTx{{Amount: 1000, Currency: "MDL", Direction: payd.DirCredit, TxID: "T2"}, {Amount: 2000, Currency: "MDL", Direction: payd.DirCredit, TxID: "T3"}}},
		{EntryRef: "BK3", BankRef: "BK3", BookingDate: "2026-11-24", Direction: payd.DirDebit, Amount: 150, Currency: "MDL",
			Code: payd.BankTxCode{Domain: "PMNT", Family: "MDOP", SubFamily: "FEES"}},
		{EntryRef: "BK4", BankRef: "BK4", BookingDate: "2026-11-24", Direction: payd.DirDebit, Amount: 5000, Currency: "MDL", Reversal: true,
			Code: payd.BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"},
			Txs:  []payd.StatementTx{{Amount: 5000, Currency: "MDL", Direction: payd.DirDebit, TxID: "BANKTX0001", ReturnReason: "AC04"}}},
		{EntryRef: "BK5", BankRef: "BK5", BookingDate: "2026-11-24", Direction: payd.DirCredit, Amount: 0, Currency: "MDL", Code: payd.BankTxCode{Proprietary: "ZERO"}},
	}
	r := payd.StatementReport{ID: "13104168-2026-11-24", ElectronicSeq: "118", Account: "MD24AG000225100013104168", AccountIsIBAN: true, AccountCcy: "MDL",
		From: "2026-11-24", To: "2026-11-24", CreatedAt: st.CreatedAt, Entries: entries,
		Summary: &payd.TxSummary{Count: n(5), Sum: amount(13150), Net: amount(2850), Credits: n(3), CreditSum: amount(8000), Debits: n(2), DebitSum: amount(5150)}}
	if kind == payd.KindCamt053 {
		r.Balances = []payd.Balance{{Type: "OPBD", Amount: 100000, Currency: "MDL", Date: "2026-11-24"}, {Type: "CLBD", Amount: 102850, Currency: "MDL", Date: "2026-11-24"}}
	}
	st.Reports = []payd.StatementReport{r}
	payd.EntryKeys(&st.Reports[0])
	return st
}

// TestWriteStatementRoundTrip: what payd-bank writes, in each version and
// kind, validates against its XSD and reads back as it was, its sums
// holding.
func TestWriteStatementRoundTrip(t *testing.T) {
	for _, kind := range []string{payd.KindCamt053, payd.KindCamt054} {
		for _, version := range []string{"001.02", "001.04", "001.08"} {
			want := sampleStatement(kind)
			body, err := WriteStatement(want, version)
			if err != nil {
				t.Fatal(err)
			}
			xsdtest.Validate(t, kind+"."+version, body)
			got, err := ReadStatement(body, time.UTC)
			if err != nil {
				t.Fatalf("%s.%s: %v\n%s", kind, version, err, body)
			}
			want.Version = version
			for i := range want.Reports[0].Entries {
				want.Reports[0].Entries[i].Account = want.Reports[0].Account
			}
			got.CreatedAt, got.Reports[0].CreatedAt = want.CreatedAt, want.Reports[0].CreatedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s.%s read back differently:\n got %+v\nwant %+v", kind, version, got.Reports[0], want.Reports[0])
			}
			if m := payd.CheckSums(&got.Reports[0]); len(m) != 0 {
				t.Errorf("%s.%s: sums %+v", kind, version, m)
			}
		}
	}
	if _, err := WriteStatement(sampleStatement(payd.KindCamt053), "001.10"); err == nil {
		t.Error("a version payd does not write was written")
	}
}

// TestStatementDays: a statement's dates are the bank's calendar: a
// period given in UTC, or ending at the next midnight, closes the bank's
// day it covers, not two.
func TestStatementDays(t *testing.T) {
	chisinau, err := time.LoadLocation("Europe/Chisinau")
	if err != nil {
		t.Fatal(err)
	}
	body, err := WriteStatement(sampleStatement(payd.KindCamt053), "001.08")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to string }{
		{"2026-11-24T00:00:00", "2026-11-24T23:59:59"},
		{"2026-11-24T00:00:00", "2026-11-25T00:00:00"},             // to the next midnight
		{"2026-11-23T22:00:00Z", "2026-11-24T21:59:59Z"},           // the same day, in UTC
		{"2026-11-24T00:00:00+02:00", "2026-11-25T00:00:00+02:00"}, // with its offset
	} {
		doc := regexp.MustCompile(`<FrDtTm>[^<]*</FrDtTm>`).ReplaceAllString(string(body), "<FrDtTm>"+c.from+"</FrDtTm>")
		doc = regexp.MustCompile(`<ToDtTm>[^<]*</ToDtTm>`).ReplaceAllString(doc, "<ToDtTm>"+c.to+"</ToDtTm>")
		st, err := ReadStatement([]byte(doc), chisinau)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.Reports[0]; r.From != "2026-11-24" || r.To != "2026-11-24" {
			t.Errorf("%s..%s: %s..%s, want the 24th", c.from, c.to, r.From, r.To)
		}
	}
}

// TestStatementRefusals: what a bank must not send is refused with the
// reason, never half-read: a booking date that is not a date, an element
// of another namespace, one the schema does not have, a list longer than
// the schema allows, an amount of three decimals.
func TestStatementRefusals(t *testing.T) {
	body, err := WriteStatement(sampleStatement(payd.KindCamt053), "001.08")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(body)
	rmt := `<RmtInf><Strd><AddtlRmtInf>a</AddtlRmtInf><AddtlRmtInf>b</AddtlRmtInf><AddtlRmtInf>c</AddtlRmtInf>%s</Strd></RmtInf>`
	for name, c := range map[string]struct{ old, new, want string }{
		"booking date":     {"<BookgDt>\n          <Dt>2026-11-24</Dt>", "<BookgDt>\n          <Dt>2026-13-45</Dt>", "BookgDt"},
		"foreign element":  {"<AcctSvcrRef>BK1</AcctSvcrRef>", `<AcctSvcrRef xmlns="urn:example:other">BK1</AcctSvcrRef>`, "namespace"},
		"unknown element":  {"<AcctSvcrRef>BK1</AcctSvcrRef>", "<AcctSvcrRef>BK1</AcctSvcrRef><Sneaky>1</Sneaky>", "Sneaky"},
		"twice":            {"<AcctSvcrRef>BK1</AcctSvcrRef>", "<AcctSvcrRef>BK1</AcctSvcrRef><AcctSvcrRef>BK9</AcctSvcrRef>", "twice"},
		"four AddtlRmtInf": {"<RmtInf>\n              <Ustrd>Order 42</Ustrd>\n            </RmtInf>", strings.ReplaceAll(rmt, "%s", "<AddtlRmtInf>d</AddtlRmtInf>"), "more than 3"},
		"three decimals":   {`<Amt Ccy="MDL">50.00</Amt>`, `<Amt Ccy="MDL">50.001</Amt>`, "two decimals"},
		"status":           {"<Sts>\n          <Cd>BOOK</Cd>", "<Sts>\n          <Cd>MAYBE</Cd>", "Sts"},
	} {
		if !strings.Contains(doc, c.old) {
			t.Fatalf("%s: the document has no %q", name, c.old)
		}
		_, err := ReadStatement([]byte(strings.Replace(doc, c.old, c.new, 1)), time.UTC)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
	}
	// Three AddtlRmtInf, as the schema allows, are taken.
	three := strings.Replace(doc, "<RmtInf>\n              <Ustrd>Order 42</Ustrd>\n            </RmtInf>", strings.ReplaceAll(rmt, "%s", ""), 1)
	if st, err := ReadStatement([]byte(three), time.UTC); err != nil || len(st.Reports[0].Entries[0].Txs[0].Remittance) != 3 {
		t.Errorf("three AddtlRmtInf: %v", err)
	}
}

// TestStatementLimits: a busy day's statement past the 256 KiB of other
// messages is read (up to StatementLimit); another message that large is
// refused before it is parsed; a statement past the limit too.
func TestStatementLimits(t *testing.T) {
	st := sampleStatement(payd.KindCamt053)
	one := st.Reports[0].Entries[2]
	st.Reports[0].Entries = nil
	for i := range 3000 { // 0.01 MDL credits: ~300 entries made one undeliverable
		e := one
		e.EntryRef, e.BankRef, e.Direction, e.Amount = "BK"+strings.Repeat("0", 6)+string(rune('a'+i%26))+time.Duration(i).String(), "", payd.DirCredit, 1
		st.Reports[0].Entries = append(st.Reports[0].Entries, e)
	}
	st.Reports[0].Summary, st.Reports[0].Balances = nil, nil
	payd.EntryKeys(&st.Reports[0])
	body, err := WriteStatement(st, "001.08")
	if err != nil {
		t.Fatal(err)
	}
	if len(body) <= MessageLimit {
		t.Fatalf("the statement is %d bytes, not past the message limit", len(body))
	}
	got, err := readBody(context.Background(), bytes.NewReader(body))
	if err != nil || len(got) != len(body) {
		t.Fatalf("a statement of %d bytes: %v", len(body), err)
	}
	read, err := ReadStatement(got, time.UTC)
	if err != nil || len(read.Reports[0].Entries) != 3000 {
		t.Fatalf("read %v entries: %v", len(read.Reports[0].Entries), err)
	}
	pacs := append([]byte(`<?xml version="1.0"?><Document xmlns="`+NSPacs008+`">`), bytes.Repeat([]byte(" "), MessageLimit)...)
	if _, err := readBody(context.Background(), bytes.NewReader(pacs)); err == nil {
		t.Error("a pacs.008 past the message limit was read")
	}
	huge := append(append([]byte{}, body[:200]...), bytes.Repeat([]byte(" "), StatementLimit)...)
	if _, err := readBody(context.Background(), bytes.NewReader(huge)); err == nil {
		t.Error("a statement past its limit was read")
	}
}

// TestPaginatedStatement: a statement in pages says its page and whether
// it is the last, in the group header (MsgPgntn) and per statement
// (StmtPgntn).
func TestPaginatedStatement(t *testing.T) {
	st := sampleStatement(payd.KindCamt053)
	st.Page, st.LastPage = 2, false
	st.Reports[0].Page, st.Reports[0].LastPage = 2, false
	for _, v := range []string{"001.04", "001.08"} {
		body, err := WriteStatement(st, v)
		if err != nil {
			t.Fatal(err)
		}
		xsdtest.Validate(t, "paged camt.053."+v, body)
		got, err := ReadStatement(body, time.UTC)
		if err != nil || got.Page != 2 || got.LastPage || got.Reports[0].Page != 2 || got.Reports[0].LastPage {
			t.Errorf("%s: page %d last %v, statement page %d last %v (%v)", v, got.Page, got.LastPage, got.Reports[0].Page, got.Reports[0].LastPage, err)
		}
	}
}
