package iso20022

import (
	"encoding/xml"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"payd"
	"payd/internal/rails/iso20022/xsdtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var epoch = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from its golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

const testBIC = "PAYDMD22"

func testOrders() map[string]*payd.RailsOrder {
	m := &payd.Merchant{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df444", Name: "Shop", IBAN: "MD24AG000225100013104168"}
	amount := payd.Money(5000)
	exp := epoch.Add(time.Hour)
	r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "Order 42"}, m.ID, epoch)
	r.ID = "01a1fd38-56fa-7f9d-ba9b-1038a64df001"
	send := payd.SendRTPOrder(m, r, epoch)
	send.ID = "01a1fd38-56fa-7f9d-ba9b-1038a64df101"
	r.CancelReason = "changed my mind"
	cancel := payd.CancelRTPOrder(m, r, epoch.Add(time.Minute))
	cancel.ID = "01a1fd38-56fa-7f9d-ba9b-1038a64df102"
	p := &payd.Payment{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df201", Kind: payd.PaymentRTP, RTPID: r.ID, Amount: amount, Currency: "MDL",
		SenderName: "ION POPESCU", SenderIBAN: "MD24AG000225100013104169", NetworkRef: "BANKTX0001", ExecutedAt: epoch.Add(2 * time.Minute)}
	rf := &payd.Refund{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df301", Amount: 2000, Currency: "MDL", Reason: "returned goods"}
	refund := payd.RefundOrder(m, rf, p, epoch.Add(time.Hour))
	refund.ID = "01a1fd38-56fa-7f9d-ba9b-1038a64df103"
	return map[string]*payd.RailsOrder{"pain013.xml": send, "camt055.xml": cancel, "pacs004.xml": refund}
}

// longOrders are the orders of the API's longest texts (a 500-character
// description and reason, a 200-character merchant name, in Cyrillic),
// of a merchant without an IBAN, and of a refund whose payer is unknown.
func longOrders() map[string]*payd.RailsOrder {
	long := func(n int) string { return strings.Repeat("ж", n-1) + "!" }
	m := &payd.Merchant{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df444", Name: long(200)}
	amount := payd.Money(10000000)
	exp := epoch.Add(60 * 24 * time.Hour)
	r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: long(500),
		OrderID: long(100)}, m.ID, epoch)
	r.CancelReason = long(500)
	p := &payd.Payment{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df202", Kind: payd.PaymentQR, QRID: r.ID, Amount: amount, Currency: "MDL", ExecutedAt: epoch}
	rf := &payd.Refund{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df302", Amount: 1, Currency: "MDL", Reason: long(500)}
	return map[string]*payd.RailsOrder{"long pain.013": payd.SendRTPOrder(m, r, epoch), "long camt.055": payd.CancelRTPOrder(m, r, epoch),
		"long pacs.004": payd.RefundOrder(m, rf, p, epoch)}
}

// TestRenderGolden: every outbound message, byte for byte.
func TestRenderGolden(t *testing.T) {
	for name, o := range testOrders() {
		b, err := Render(o, testBIC)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, b)
		again, _ := Render(o, testBIC)
		if string(again) != string(b) {
			t.Errorf("%s: two renderings of one order differ", name)
		}
		ns, err := Namespace(b)
		if err != nil || ns == "" {
			t.Errorf("%s: namespace %q, %v", name, ns, err)
		}
	}
}

// TestAnswersGolden: payd's pacs.002 answers to a credit, applied and
// refused, byte for byte.
func TestAnswersGolden(t *testing.T) {
	tx := CreditTx{PmtID: PaymentID{EndToEndID: "01a1fd3856fa7f9dba9b1038a64df001", TxID: "BANKTX0001"}}
	for name, rec := range map[string]payd.Message{
		"pacs002-answer.xml":          {ID: "BANKMSG0001", Outcome: StatusCredited, At: epoch.Add(2 * time.Minute)},
		"pacs002-answer-rejected.xml": {ID: "BANKMSG0004", Outcome: rejected("NARR"), At: epoch.Add(3 * time.Minute)},
	} {
		b, err := CreditAnswer(rec, tx, testBIC)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, b)
	}
}

// TestMessagesValidate: every message payd writes validates against the
// ISO 20022 base XSD of its version, with the API's longest texts, a
// merchant without an IBAN and an unknown payer too, and so does every
// golden file (the examples of docs/rails.md) and payd's answers.
func TestMessagesValidate(t *testing.T) {
	xsdtest.Available(t)
	for _, set := range []map[string]*payd.RailsOrder{testOrders(), longOrders()} {
		for name, o := range set {
			b, err := Render(o, testBIC)
			if err != nil {
				t.Fatal(err)
			}
			xsdtest.Validate(t, name, b)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.xml"))
	if len(files) < 8 {
		t.Fatalf("only %d golden files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		xsdtest.Validate(t, f, b)
	}
}

// TestRailsDocExamples: every XML example in docs/rails.md validates
// against its XSD and is one of the golden files, so that the page a
// connector is built from shows what payd sends and reads.
func TestRailsDocExamples(t *testing.T) {
	xsdtest.Available(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "rails.md"))
	if err != nil {
		t.Fatal(err)
	}
	golden := map[string]string{}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.xml"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		golden[strings.TrimSpace(string(b))] = f
	}
	blocks := regexp.MustCompile("(?s)```xml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	namespaces := map[string]bool{}
	for i, m := range blocks {
		body := strings.TrimSpace(m[1])
		xsdtest.Validate(t, fmt.Sprintf("docs/rails.md example %d", i+1), []byte(body))
		if golden[body] == "" {
			t.Errorf("docs/rails.md example %d is none of the golden files (testdata/*.xml):\n%s", i+1, body)
		}
		ns, _ := Namespace([]byte(body))
		namespaces[ns] = true
	}
	for _, ns := range []string{NSPain013, NSPain014, NSCamt055, NSPacs008, NSPacs002, NSPacs004} {
		if !namespaces[ns] {
			t.Errorf("docs/rails.md has no example of %s", ns)
		}
	}
}

// TestTextsAreCut: texts longer than their ISO field are cut at its
// boundary, in characters (Cyrillic counts one a letter), and every
// field of the longest order is within its length.
func TestTextsAreCut(t *testing.T) {
	if got := Text(strings.Repeat("ж", 141), MaxName); utf8.RuneCountInString(got) != 140 {
		t.Errorf("Text cut to %d characters, want 140", utf8.RuneCountInString(got))
	}
	if got := Text("short ", 140); got != "short" {
		t.Errorf("Text(%q) = %q", "short ", got)
	}
	b, _ := Render(longOrders()["long pain.013"], testBIC)
	var m Pain013
	if err := xml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	tx := m.Req.PmtInf.Tx
	if n := utf8.RuneCountInString(tx.Cdtr.Name); n != MaxName {
		t.Errorf("Cdtr/Nm is %d characters", n)
	}
	if n := utf8.RuneCountInString(tx.RmtInf.Ustrd[0]); n != MaxRemittance || len(tx.RmtInf.Ustrd) != 1 {
		t.Errorf("RmtInf/Ustrd is %d characters in %d lines", n, len(tx.RmtInf.Ustrd))
	}
	if tx.CdtrAcct != nil || m.Req.PmtInf.Dbtr.CtctDtls.MobNb != "+373-69112221" || m.Req.PmtInf.DbtrAgt.Other.ID != NotProvided {
		t.Errorf("pain.013 of a merchant without an IBAN: %s", b)
	}
	b, _ = Render(longOrders()["long camt.055"], testBIC)
	if strings.Count(string(b), "<AddtlInf>") != 1 || !strings.Contains(string(b), strings.Repeat("ж", 105)) || strings.Contains(string(b), strings.Repeat("ж", 106)) {
		t.Errorf("camt.055's AddtlInf is not cut to 105 characters:\n%s", b)
	}
	b, _ = Render(longOrders()["long pacs.004"], testBIC)
	if strings.Contains(string(b), "<DbtrAcct>") || strings.Contains(string(b), "<Id></Id>") || strings.Contains(string(b), "<Dbtr>") {
		t.Errorf("pacs.004 of an unknown payer writes empty elements:\n%s", b)
	}
}

// TestDecodeStrict: the one pass that checks and decodes refuses what the
// schema allows once when it comes twice, wherever it is (after the root
// too), and what is not well formed, and takes what may repeat.
func TestDecodeStrict(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pacs008.xml"))
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	end := strings.LastIndex(good, "</Document>")
	for name, c := range map[string]struct {
		doc string
		ok  bool
	}{
		"the golden credit":              {good, true},
		"two Ustrd (repeatable)":         {strings.Replace(good, "<Ustrd>Order 42</Ustrd>", "<Ustrd>Order 42</Ustrd><Ustrd>and 43</Ustrd>", 1), true},
		"two MsgIds":                     {strings.Replace(good, "<MsgId>BANKMSG0001</MsgId>", "<MsgId>BANKMSG0001</MsgId><MsgId>BANKMSG0002</MsgId>", 1), false},
		"an end tag that does not match": {strings.Replace(good, "</MsgId>", "</MsgIdX>", 1), false},
		// A copy whose first closed with children of its own: siblings are
		// checked across the first's whole subtree.
		"two GrpHdrs":                {strings.Replace(good, "</GrpHdr>", "</GrpHdr>"+good[strings.Index(good, "<GrpHdr>"):strings.Index(good, "</GrpHdr>")]+"</GrpHdr>", 1), false},
		"a second document after it": {good + good[strings.Index(good, "<Document"):], false},
		"an end tag after the root":  {good + "</Document>", false},
		"text cut inside the root":   {good[:end], false},
		"an element after the root":  {good + "<MsgId>X</MsgId>", false},
		"a comment after the root":   {good + "<!-- end -->\n", true},
	} {
		err := decodeStrict([]byte(c.doc), &Pacs008{})
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", name, err, c.ok)
		}
	}
}

// TestParseGolden: the inbound messages of the connector's specification
// (docs/rails.md) read as payd reads them.
func TestParseGolden(t *testing.T) {
	read := func(name string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStrict(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var credit Pacs008
	read("pacs008.xml", &credit)
	if err := checkCredit(&credit); err != nil {
		t.Errorf("pacs008.xml: %v", err)
	}
	tx := credit.Msg.Txs[0]
	amount, err := tx.Amt.Money()
	id, ok := ParseMsgID(tx.PmtID.EndToEndID)
	if credit.Msg.GrpHdr.MsgID != "BANKMSG0001" || !ok || id != "01a1fd38-56fa-7f9d-ba9b-1038a64df001" || err != nil || amount != 5000 ||
		tx.Amt.Ccy != "MDL" || tx.Dbtr.Name != "ION POPESCU" || tx.DbtrAcct.IBANValue() != "MD24AG000225100013104169" ||
		tx.PmtID.TxID != "BANKTX0001" || tx.CdtrAcct.IBANValue() != "MD24AG000225100013104168" {
		t.Errorf("pacs.008: %+v", credit)
	}
	var status Pain014
	read("pain014.xml", &status)
	if status.Rpt.GrpHdr.MsgID != "BANKMSG0002" || status.Rpt.PmtInfs[0].Txs[0].TxSts != StatusRejected || status.Rpt.PmtInfs[0].Txs[0].ReasonCode() != "MS02" {
		t.Errorf("pain.014: %+v", status)
	}
	var settled Pacs002
	read("pacs002.xml", &settled)
	if rid, ok := ParseMsgID(settled.Rpt.Txs[0].OrgnlTxID); !ok || rid != "01a1fd38-56fa-7f9d-ba9b-1038a64df301" || settled.Rpt.Txs[0].TxSts != StatusSettled {
		t.Errorf("pacs.002: %+v", settled)
	}
}

func TestAmountsExact(t *testing.T) {
	for in, want := range map[string]payd.Money{"50.00": 5000, "0.01": 1, "100000": 10000000, "12.3": 1230} {
		if got, err := (Amount{Ccy: "MDL", Value: in}).Money(); err != nil || got != want {
			t.Errorf("%s = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"1.005", "1e2", "", "abc", "0.1.1"} {
		if _, err := (Amount{Ccy: "MDL", Value: in}).Money(); err == nil {
			t.Errorf("%q was accepted", in)
		}
	}
}

// TestSignature: the headers verify with the key and the body they were
// made for, within the skew; anything else is refused.
func TestSignature(t *testing.T) {
	body := []byte("<Document/>")
	h := http.Header{}
	Sign(h, "secret-key-0123456789", body, epoch)
	if err := Verify(h, "secret-key-0123456789", body, epoch.Add(4*time.Minute)); err != nil {
		t.Errorf("valid message refused: %v", err)
	}
	if h.Get(HeaderSignature) != payd.HMACSignature("secret-key-0123456789", body, epoch.UnixMilli()) {
		t.Error("signature is not Base64(HMAC-SHA256(key, body.timestamp))")
	}
	cases := map[string]error{
		"other key":  Verify(h, "other-key-0123456789", body, epoch),
		"other body": Verify(h, "secret-key-0123456789", []byte("<Document></Document>"), epoch),
		"stale":      Verify(h, "secret-key-0123456789", body, epoch.Add(6*time.Minute)),
		"future":     Verify(h, "secret-key-0123456789", body, epoch.Add(-6*time.Minute)),
		"unsigned":   Verify(http.Header{}, "secret-key-0123456789", body, epoch),
	}
	// One signature, one spelling: the URL-safe alphabet's twin, other
	// padding bits and a line break decode to the same bytes and are
	// refused all the same.
	at := epoch
	for !strings.ContainsAny(payd.HMACSignature("secret-key-0123456789", body, at.UnixMilli()), "+/") {
		at = at.Add(time.Millisecond)
	}
	sig := payd.HMACSignature("secret-key-0123456789", body, at.UnixMilli())
	last := sig[len(sig)-2] // the character before the one '=' of a 32-byte value
	spellings := map[string]string{
		"URL-safe":     strings.NewReplacer("+", "-", "/", "_").Replace(sig),
		"unpadded":     strings.TrimRight(sig, "="),
		"padding bits": sig[:len(sig)-2] + string(last^1) + "=",
		"line break":   sig[:10] + "\r\n" + sig[10:],
	}
	for name, v := range spellings {
		hh := http.Header{}
		hh.Set(HeaderTimestamp, strconv.FormatInt(at.UnixMilli(), 10))
		hh.Set(HeaderSignature, v)
		cases[name] = Verify(hh, "secret-key-0123456789", body, at)
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestIDs(t *testing.T) {
	id := "01a1fd38-56fa-7f9d-ba9b-1038a64df444"
	if len(ID(id)) != 32 {
		t.Errorf("ID(%s) = %s", id, ID(id))
	}
	for _, in := range []string{ID(id), id, "01A1FD3856FA7F9DBA9B1038A64DF444"} {
		if got, ok := ParseMsgID(in); !ok || got != id {
			t.Errorf("ParseMsgID(%s) = %s, %v", in, got, ok)
		}
	}
	if _, ok := ParseMsgID("NOTPROVIDED"); ok {
		t.Error("NOTPROVIDED parsed as an id")
	}
}

func TestReasonCodes(t *testing.T) {
	want := map[string]string{payd.RefusedUnknown: "NARR", payd.RefusedAccount: "AC03", payd.RefusedPaid: "DUPL",
		payd.RefusedCancelled: "AC04", payd.RefusedClosed: "AC04", payd.RefusedAmount: "AM09",
		payd.RefusedExpired: "TM01", payd.RefusedCurrency: "AM11", payd.RefusedMerchant: "AG01"}
	for refusal, code := range want {
		if got := ReasonCode(refusal); got != code {
			t.Errorf("%s → %s, want %s", refusal, got, code)
		}
	}
}
