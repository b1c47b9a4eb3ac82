package iso20022

import (
	"encoding/xml"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"payd"
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
	p := &payd.Payment{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df201", RTPID: r.ID, Amount: amount, Currency: "MDL",
		SenderName: "ION POPESCU", SenderIBAN: "MD24AG000225100013104169", NetworkRef: "BANKTX0001", ExecutedAt: epoch.Add(2 * time.Minute)}
	rf := &payd.Refund{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df301", Amount: 2000, Currency: "MDL", Reason: "returned goods"}
	refund := payd.RefundOrder(m, rf, p, epoch.Add(time.Hour))
	refund.ID = "01a1fd38-56fa-7f9d-ba9b-1038a64df103"
	return map[string]*payd.RailsOrder{"pain013.xml": send, "camt055.xml": cancel, "pacs004.xml": refund}
}

// TestRenderGolden: every outbound message, byte for byte.
func TestRenderGolden(t *testing.T) {
	for name, o := range testOrders() {
		b, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, b)
		again, _ := Render(o)
		if string(again) != string(b) {
			t.Errorf("%s: two renderings of one order differ", name)
		}
		ns, err := Namespace(b)
		if err != nil || ns == "" {
			t.Errorf("%s: namespace %q, %v", name, ns, err)
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
		if err := xml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var credit Pacs008
	read("pacs008.xml", &credit)
	tx := credit.Txs[0]
	amount, err := tx.Amt.Money()
	id, ok := ParseMsgID(tx.EndToEndID)
	if credit.GrpHdr.MsgID != "BANKMSG0001" || !ok || id != "01a1fd38-56fa-7f9d-ba9b-1038a64df001" || err != nil || amount != 5000 ||
		tx.Amt.Ccy != "MDL" || tx.Dbtr.Name != "ION POPESCU" || tx.DbtrAcct.IBANValue() != "MD24AG000225100013104169" || tx.TxID != "BANKTX0001" {
		t.Errorf("pacs.008: %+v", credit)
	}
	var status Pain014
	read("pain014.xml", &status)
	if status.GrpHdr.MsgID != "BANKMSG0002" || status.Tx.TxSts != StatusRejected || status.Tx.Rsn != "AC04" {
		t.Errorf("pain.014: %+v", status)
	}
	var settled Pacs002
	read("pacs002.xml", &settled)
	if rid, ok := ParseMsgID(settled.Tx.OrgnlTxID); !ok || rid != "01a1fd38-56fa-7f9d-ba9b-1038a64df301" || settled.Tx.TxSts != StatusSettled {
		t.Errorf("pacs.002: %+v", settled)
	}
}

// TestAmountsExact: amounts are decimals with two fraction digits; a third
// digit is refused, never rounded.
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
	want := map[string]string{payd.RefusedUnknown: "AC01", payd.RefusedClosed: "AC04", payd.RefusedAmount: "AM09",
		payd.RefusedExpired: "TM01", payd.RefusedCurrency: "AM11", payd.RefusedMerchant: "AG01"}
	for refusal, code := range want {
		if got := ReasonCode(refusal); got != code {
			t.Errorf("%s → %s, want %s", refusal, got, code)
		}
	}
}
