package iso20022

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022/xsdtest"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

const (
	shopIBAN  = "MD24AG000225100013104168"
	otherIBAN = "MD88AG000000011621810140"
)

// inboundEnv is the inbound endpoint over a real store, with a merchant
// (shopIBAN) and another (otherIBAN), each with a Static QR.
type inboundEnv struct {
	t            *testing.T
	s            *sqlstore.Store
	in           *Inbound
	clock        *payd.FakeClock
	shop, other  string // merchant ids
	qr, otherQR  string
	answersValid bool
}

func newInboundEnv(t *testing.T, s *sqlstore.Store) *inboundEnv {
	ctx := t.Context()
	clock := payd.NewFakeClock(storetest.Epoch)
	e := &inboundEnv{t: t, s: s, clock: clock,
		in: &Inbound{Ledger: s, Inbox: s, Key: "inbound-test-key-0123", BIC: testBIC, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	for i, iban := range []string{shopIBAN, otherIBAN} {
		cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", IBAN: iban}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		q, _ := payd.NewQR(payd.QRInput{Type: string(payd.QRStatic), AmountType: string(payd.AmountFree), Currency: "MDL",
			Ext: payd.ExtensionInput{Description: "tips"}}, cr.MerchantID, clock.Now())
		if err := s.CreateQR(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			e.shop, e.qr = cr.MerchantID, q.ID
		} else {
			e.other, e.otherQR = cr.MerchantID, q.ID
		}
	}
	return e
}

// post sends a document signed, as the connector does.
func (e *inboundEnv) post(body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/rails/iso20022", bytes.NewReader(body))
	Sign(req.Header, e.in.Key, body, e.clock.Now())
	rec := httptest.NewRecorder()
	e.in.ServeHTTP(rec, req)
	return rec
}

type credit struct {
	msgID, e2e, ustrd, amount, ccy, cdtrIBAN string
	noCdtrAcct                               bool
}

func (e *inboundEnv) creditDoc(c credit) []byte {
	if c.amount == "" {
		c.amount = "5.00"
	}
	if c.ccy == "" {
		c.ccy = "MDL"
	}
	tx := CreditTx{PmtID: PaymentID{EndToEndID: c.e2e, TxID: "TX-" + c.msgID}, Amt: Amount{Ccy: c.ccy, Value: c.amount}, ChrgBr: ChargesShared,
		Dbtr: Party{Name: "PAYER"}, DbtrAcct: IBAN(payd.TestIBAN), DbtrAgt: *AgentBIC("BANKMD22"), CdtrAgt: *AgentBIC(testBIC),
		Cdtr: Party{Name: "Shop"}, RmtInf: RemittanceText(c.ustrd)}
	if !c.noCdtrAcct {
		tx.CdtrAcct = IBAN(c.cdtrIBAN)
	}
	body, _ := Marshal(&Pacs008{Msg: Pacs008Msg{GrpHdr: GroupHeader{MsgID: c.msgID, CreDtTm: Time(e.clock.Now()), NbOfTxs: "1", SttlmInf: Clearing()},
		Txs: []CreditTx{tx}}})
	return body
}

// credit posts a pacs.008 and reads payd's pacs.002: status and reason.
func (e *inboundEnv) credit(c credit) (code int, status, reason string, raw []byte) {
	e.t.Helper()
	rec := e.post(e.creditDoc(c))
	if rec.Code != http.StatusOK {
		return rec.Code, "", "", rec.Body.Bytes()
	}
	if err := Verify(rec.Header(), e.in.Key, rec.Body.Bytes(), e.clock.Now()); err != nil {
		e.t.Errorf("payd's pacs.002 is not signed: %v", err)
	}
	if e.answersValid {
		xsdtest.Validate(e.t, "payd's pacs.002 answer", rec.Body.Bytes())
	}
	var ans Pacs002
	if err := xml.Unmarshal(rec.Body.Bytes(), &ans); err != nil || len(ans.Rpt.Txs) != 1 {
		e.t.Fatalf("answer: %v\n%s", err, rec.Body.Bytes())
	}
	return rec.Code, ans.Rpt.Txs[0].TxSts, ans.Rpt.Txs[0].ReasonCode(), rec.Body.Bytes()
}

func (e *inboundEnv) payments(merchantID string) int {
	_, n, err := e.s.Payments(e.t.Context(), sqlstore.PaymentFilter{MerchantID: merchantID, Count: 10})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestInboundCredits: a credit is applied once per MsgId and answered
// ACCC, a repeat with the first answer byte for byte; it pays only the
// account it reached (another IBAN, or none, is AC03 and records nothing);
// a reference found only in the free text is looked for among the
// account's merchant's objects (another's QR is NARR); a deactivated
// merchant's QR is AG01.
func TestInboundCredits(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		e := newInboundEnv(t, s)
		_, e.answersValid = xmllint()
		code, st, _, first := e.credit(credit{msgID: "M1", e2e: ID(e.qr), cdtrIBAN: "MD24ag000225100013104168"})
		if code != 200 || st != StatusCredited || e.payments(e.shop) != 1 {
			t.Fatalf("credit to the merchant's account (in lower case): %d %s", code, st)
		}
		e.clock.Advance(time.Minute)
		if _, _, _, again := e.credit(credit{msgID: "M1", e2e: ID(e.qr), cdtrIBAN: shopIBAN}); string(again) != string(first) || e.payments(e.shop) != 1 {
			t.Errorf("a repeated MsgId was not answered with the first answer:\n%s\n%s", first, again)
		}
		for _, c := range []struct {
			name   string
			c      credit
			reason string
		}{
			{"another merchant's account", credit{msgID: "M2", e2e: ID(e.qr), cdtrIBAN: otherIBAN}, "AC03"},
			{"no creditor account", credit{msgID: "M3", e2e: ID(e.qr), noCdtrAcct: true}, "AC03"},
			{"NOTPROVIDED, another merchant's QR in the free text", credit{msgID: "M4", e2e: NotProvided, ustrd: ID(e.otherQR), cdtrIBAN: shopIBAN}, "NARR"},
			{"NOTPROVIDED, nothing in the free text", credit{msgID: "M5", e2e: NotProvided, ustrd: "for coffee", cdtrIBAN: shopIBAN}, "NARR"},
			{"a currency that is not MDL", credit{msgID: "M6", e2e: ID(e.qr), cdtrIBAN: shopIBAN, ccy: "EUR"}, "AM11"},
			{"three decimals", credit{msgID: "M7", e2e: ID(e.qr), cdtrIBAN: shopIBAN, amount: "1.005"}, "AM12"},
		} {
			code, st, reason, _ := e.credit(c.c)
			if code != 200 || st != StatusRejected || reason != c.reason {
				t.Errorf("%s: %d %s %s, want RJCT %s", c.name, code, st, reason, c.reason)
			}
		}
		if e.payments(e.shop) != 1 || e.payments(e.other) != 0 {
			t.Errorf("refused credits recorded payments: %d, %d", e.payments(e.shop), e.payments(e.other))
		}
		if code, st, _, _ := e.credit(credit{msgID: "M8", e2e: NotProvided, ustrd: ID(e.qr), cdtrIBAN: shopIBAN}); code != 200 || st != StatusCredited || e.payments(e.shop) != 2 {
			t.Errorf("NOTPROVIDED naming the merchant's own QR: %d %s", code, st)
		}
		if err := s.SetMerchantActive(t.Context(), e.shop, false); err != nil {
			t.Fatal(err)
		}
		if _, st, reason, _ := e.credit(credit{msgID: "M9", e2e: ID(e.qr), cdtrIBAN: shopIBAN}); st != StatusRejected || reason != "AG01" || e.payments(e.shop) != 2 {
			t.Errorf("a credit for a deactivated merchant: %s %s", st, reason)
		}
	})
}

// TestInboundCreditTargets: a pacs.008's reference may name a QR, one of a
// Hybrid QR's extensions (only while it is the current one) or an RTP, and
// the one credit it applies is the target's; a reference to nothing is
// NARR. The same MsgId posted eight times at once applies once and is
// answered eight times alike.
func TestInboundCreditTargets(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		e := newInboundEnv(t, s)
		ctx := t.Context()
		now := e.clock.Now()
		hybrid, _ := payd.NewQR(payd.QRInput{Type: string(payd.QRHybrid), AmountType: string(payd.AmountFree), Currency: "MDL"}, e.shop, now)
		if err := s.CreateQR(ctx, hybrid, nil); err != nil {
			t.Fatal(err)
		}
		until := now.Add(time.Hour)
		first, err := s.CreateExtension(ctx, e.shop, hybrid.ID, payd.ExtensionInput{ExpiresAt: &until, Description: "first"}, now)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.CreateExtension(ctx, e.shop, hybrid.ID, payd.ExtensionInput{ExpiresAt: &until, Description: "second"}, now)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Merchant(ctx, e.shop)
		if err != nil {
			t.Fatal(err)
		}
		amount := payd.Money(5000)
		r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &until, Currency: "MDL", Description: "x"}, e.shop, now)
		if err := s.CreateRTP(ctx, m, r); err != nil {
			t.Fatal(err)
		}
		if _, st, reason, _ := e.credit(credit{msgID: "T1", e2e: ID(first.ID), cdtrIBAN: shopIBAN}); st != StatusRejected || reason != "AC04" {
			t.Errorf("a replaced extension: %s %s, want RJCT AC04", st, reason)
		}
		if _, st, _, _ := e.credit(credit{msgID: "T2", e2e: ID(second.ID), cdtrIBAN: shopIBAN}); st != StatusCredited {
			t.Errorf("the current extension: %s", st)
		}
		if _, st, _, _ := e.credit(credit{msgID: "T3", e2e: ID(r.ID), cdtrIBAN: shopIBAN, amount: "50.00"}); st != StatusCredited {
			t.Errorf("an RTP: %s", st)
		}
		if _, st, reason, _ := e.credit(credit{msgID: "T4", e2e: ID(payd.NewID(now)), cdtrIBAN: shopIBAN}); st != StatusRejected || reason != "NARR" {
			t.Errorf("a reference to nothing: %s %s, want RJCT NARR", st, reason)
		}
		ps, n, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: e.shop, Count: 10})
		if err != nil || n != 2 {
			t.Fatalf("payments: %d %v, want 2", n, err)
		}
		for _, p := range ps {
			if !(p.ExtensionID == second.ID && p.QRID == hybrid.ID || p.RTPID == r.ID && p.Amount == amount) {
				t.Errorf("a payment of neither target: %+v", p)
			}
		}
		if got, _ := s.RTP(ctx, e.shop, r.ID, e.clock.Now()); got.Status != payd.RTPAccepted {
			t.Errorf("the RTP is %s after its credit", got.Status)
		}

		doc := e.creditDoc(credit{msgID: "T5", e2e: ID(e.qr), cdtrIBAN: shopIBAN})
		answers := make(chan string, 8)
		for range 8 {
			go func() {
				rec := e.post(doc)
				answers <- fmt.Sprint(rec.Code, " ", rec.Body.String())
			}()
		}
		want := <-answers
		for range 7 {
			if got := <-answers; got != want {
				t.Errorf("one MsgId posted at once was answered differently:\n%s\n%s", want, got)
			}
		}
		if !strings.HasPrefix(want, "200 ") || e.payments(e.shop) != 3 {
			t.Errorf("one MsgId posted eight times at once: %.60s, %d payments, want 3", want, e.payments(e.shop))
		}
	})
}

func xmllint() (string, bool) {
	p, err := exec.LookPath("xmllint")
	return p, err == nil
}

// TestStrictReading: what the schema allows once is refused twice (400),
// NbOfTxs must be 1 with one transaction, Ccy is required, identifiers
// keep their ISO lengths, amounts are decimals; nothing of it is applied.
func TestStrictReading(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		e := newInboundEnv(t, s)
		good := string(e.creditDoc(credit{msgID: "S1", e2e: ID(e.qr), cdtrIBAN: shopIBAN}))
		amount := `<IntrBkSttlmAmt Ccy="MDL">5.00</IntrBkSttlmAmt>`
		e2e := "<EndToEndId>" + ID(e.qr) + "</EndToEndId>"
		for name, doc := range map[string]string{
			"two amounts":        strings.Replace(good, amount, amount+`<IntrBkSttlmAmt Ccy="MDL">500.00</IntrBkSttlmAmt>`, 1),
			"two EndToEndIds":    strings.Replace(good, e2e, e2e+"<EndToEndId>"+ID(e.otherQR)+"</EndToEndId>", 1),
			"two MsgIds":         strings.Replace(good, "<MsgId>S1</MsgId>", "<MsgId>S1</MsgId><MsgId>S2</MsgId>", 1),
			"NbOfTxs 2":          strings.Replace(good, "<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>2</NbOfTxs>", 1),
			"NbOfTxs 0":          strings.Replace(good, "<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>0</NbOfTxs>", 1),
			"NbOfTxs abc":        strings.Replace(good, "<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>abc</NbOfTxs>", 1),
			"no NbOfTxs":         strings.Replace(good, "<NbOfTxs>1</NbOfTxs>", "", 1),
			"no Ccy":             strings.Replace(good, ` Ccy="MDL"`, "", 1),
			"empty Ccy":          strings.Replace(good, ` Ccy="MDL"`, ` Ccy=""`, 1),
			"MsgId of 36":        strings.Replace(good, "<MsgId>S1</MsgId>", "<MsgId>"+strings.Repeat("X", 36)+"</MsgId>", 1),
			"amount abc":         strings.Replace(good, ">5.00<", ">abc<", 1),
			"negative amount":    strings.Replace(good, ">5.00<", ">-5.00<", 1),
			"an exponent":        strings.Replace(good, ">5.00<", ">5e2<", 1),
			"creditor not IBAN":  strings.Replace(good, shopIBAN, "12345", 1),
			"two transactions":   strings.Replace(good, "</CdtTrfTxInf>", "</CdtTrfTxInf>"+good[strings.Index(good, "<CdtTrfTxInf>"):strings.Index(good, "</CdtTrfTxInf>")+len("</CdtTrfTxInf>")], 1),
			"EndToEndId of 36":   strings.Replace(good, e2e, "<EndToEndId>"+ID(e.qr)+"XXXX</EndToEndId>", 1),
			"an unknown message": strings.Replace(good, "pacs.008.001.08", "pacs.008.001.99", 1),
		} {
			if rec := e.post([]byte(doc)); rec.Code != http.StatusBadRequest {
				t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
			}
		}
		if n := e.payments(e.shop); n != 0 {
			t.Errorf("%d payments recorded from refused documents", n)
		}
		if rec := e.post([]byte(good)); rec.Code != http.StatusOK {
			t.Errorf("the well-formed credit: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestRefundStatusFollowsItsReturn: a pacs.002 about a refund whose
// pacs.004 the connector has not acknowledged (the refund is Created) is
// answered 200, says so, and changes nothing, nor is it recorded: sent
// again after the acknowledgement, the same message applies.
func TestRefundStatusFollowsItsReturn(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		e := newInboundEnv(t, s)
		s.SetRails("iso20022")
		ctx := t.Context()
		if code, st, _, _ := e.credit(credit{msgID: "R1", e2e: ID(e.qr), cdtrIBAN: shopIBAN, amount: "20.00"}); code != 200 || st != StatusCredited {
			t.Fatalf("credit: %d %s", code, st)
		}
		ps, _, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: e.shop, Count: 1})
		if err != nil || len(ps) != 1 {
			t.Fatal(err)
		}
		rf, err := s.CreateRefund(ctx, e.shop, ps[0].ID, payd.RefundInput{Reason: "back"}, e.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		status := func(msgID, st string) *httptest.ResponseRecorder {
			body, _ := Marshal(&Pacs002{Rpt: Pacs002Rpt{GrpHdr: GroupHeader{MsgID: msgID, CreDtTm: Time(e.clock.Now())},
				Txs: []StatusTx{{OrgnlTxID: ID(rf.ID), TxSts: st}}}})
			return e.post(body)
		}
		refund := func() *payd.Refund {
			r, err := s.Refund(ctx, e.shop, rf.ID)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for _, early := range []struct{ msgID, st string }{{"P0", StatusRejected}, {"P1", StatusSettled}} {
			rec := status(early.msgID, early.st)
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), "has not been acknowledged") || refund().Status != payd.RefundCreated {
				t.Fatalf("%s before the return was acknowledged: %d %q, refund %s", early.st, rec.Code, rec.Body, refund().Status)
			}
		}
		if p, _ := s.Payment(ctx, e.shop, ps[0].ID); p.Refundable() != 0 {
			t.Errorf("the early rejection released the amount: refundable %s", p.Refundable())
		}
		if err := s.RefundTaken(ctx, rf.ID, e.clock.Now()); err != nil { // the connector answered the pacs.004
			t.Fatal(err)
		}
		if rec := status("P1", StatusSettled); rec.Code != 200 || refund().Status != payd.RefundAccepted {
			t.Errorf("the same MsgId after the acknowledgement: %d %q, refund %s", rec.Code, rec.Body, refund().Status)
		}
		if rec := status("P2", StatusRejected); rec.Code != 200 || refund().Status != payd.RefundAccepted {
			t.Errorf("a rejection of a settled refund: %d, refund %s", rec.Code, refund().Status)
		}
	})
}

func TestReferenceInText(t *testing.T) {
	const id = "01a1fd38-56fa-7f9d-ba9b-1038a64df444"
	cases := map[string]string{
		id:                                       id,
		"Payment " + id + " thanks":              id,
		"Plata:01A1FD3856FA7F9DBA9B1038A64DF444": id,
		"order " + id + " and " + id:             id,
		"two " + id + " 01a1fd38-56fa-7f9d-ba9b-1038a64df445": "",
		"no reference here":       "",
		"01a1fd38-56fa-7f9d-ba9b": "",
	}
	for text, want := range cases {
		if got, ok := referenceIn(text); got != want || ok != (want != "") {
			t.Errorf("referenceIn(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
}

// TestInboundStatementRefusalsCounted: a statement the endpoint takes
// answers 200 (again: 200, nothing changes); every statement refused is
// told to Refused with its kind (the metric an alert reads), a statement
// of a version payd does not read too; other messages refused are not.
func TestInboundStatementRefusalsCounted(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		e := newInboundEnv(t, s)
		var refused []string
		e.in.Statements, e.in.Refused = s, func(reason string) { refused = append(refused, reason) }
		st := sampleStatement(payd.KindCamt053)
		body, err := WriteStatement(st, "001.04")
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if rec := e.post(body); rec.Code != 200 {
				t.Fatalf("the statement: %d %s", rec.Code, rec.Body)
			}
		}
		st.Reports[0].Entries[0].Amount++
		other, _ := WriteStatement(st, "001.04")
		for _, c := range []struct {
			what string
			body []byte
			want string
		}{
			{"another document under its MsgId", other, "msgid_reused"},
			{"camt.053.001.10", bytes.ReplaceAll(body, []byte("camt.053.001.04"), []byte("camt.053.001.10")), "unknown_version"},
			{"an element the schema does not have", bytes.Replace(body, []byte("<Ntry>"), []byte("<Ntry><Bogus>1</Bogus>"), 1), "schema"},
			{"a booking date that is none", bytes.Replace(body, []byte("<Dt>2026-11-24</Dt>"), []byte("<Dt>2026-11-31</Dt>"), 1), "content"},
		} {
			refused = nil
			if rec := e.post(c.body); rec.Code != 400 || fmt.Sprint(refused) != "["+c.want+"]" {
				t.Errorf("%s: %d %q, counted %v, want %s", c.what, rec.Code, rec.Body, refused, c.want)
			}
		}
		refused = nil
		if rec := e.post(bytes.ReplaceAll(e.creditDoc(credit{msgID: "M1", e2e: e.qr, amount: "1.00.0"}), []byte("1.00.0"), []byte("x"))); rec.Code != 400 || len(refused) != 0 {
			t.Errorf("a credit refused: %d, counted %v", rec.Code, refused)
		}
	})
}
