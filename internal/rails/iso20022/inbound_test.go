package iso20022

import (
	"bytes"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestInboundCredits applies pacs.008 credits in process: a credit for a
// QR is answered ACSC and recorded once per MsgId; a deactivated merchant's
// QR is refused with AG01 and nothing is paid.
func TestInboundCredits(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		ctx := t.Context()
		clock := payd.NewFakeClock(storetest.Epoch)
		in := &Inbound{Ledger: s, Store: s, Key: "inbound-test-key-0123", Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop"}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		q, _ := payd.NewQR(payd.QRInput{Type: string(payd.QRStatic), AmountType: string(payd.AmountFree), Currency: "MDL", Ext: payd.ExtensionInput{Description: "tips"}}, cr.MerchantID, clock.Now())
		if err := s.CreateQR(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
		credit := func(msgID string) (int, Pacs002) {
			body, _ := Marshal(&Pacs008{GrpHdr: GroupHeader{MsgID: msgID, CreDtTm: Time(clock.Now()), NbOfTxs: "1"},
				Txs: []CreditTx{{EndToEndID: ID(q.ID), TxID: "TX-" + msgID, Amt: Amount{Ccy: "MDL", Value: "5.00"},
					Dbtr: Party{Name: "PAYER"}, DbtrAcct: IBAN(payd.TestIBAN)}}})
			req := httptest.NewRequest("POST", "/rails/iso20022", bytes.NewReader(body))
			Sign(req.Header, in.Key, body, clock.Now())
			rec := httptest.NewRecorder()
			in.ServeHTTP(rec, req)
			var ans Pacs002
			if rec.Code == http.StatusOK {
				if err := Verify(rec.Header(), in.Key, rec.Body.Bytes(), clock.Now()); err != nil {
					t.Errorf("payd's pacs.002 is not signed: %v", err)
				}
				xml.Unmarshal(rec.Body.Bytes(), &ans)
			}
			return rec.Code, ans
		}
		payments := func() int {
			_, n, err := s.Payments(ctx, sqlstore.PaymentFilter{MerchantID: cr.MerchantID, Count: 10})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if code, ans := credit("M1"); code != 200 || ans.Tx.TxSts != StatusSettled {
			t.Fatalf("credit: %d %+v", code, ans.Tx)
		}
		if code, ans := credit("M1"); code != 200 || ans.Tx.TxSts != StatusSettled || payments() != 1 {
			t.Errorf("a repeated MsgId: %d %+v, %d payments", code, ans.Tx, payments())
		}
		if err := s.SetMerchantActive(ctx, cr.MerchantID, false); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if code, ans := credit("M2"); code != 200 || ans.Tx.TxSts != StatusRejected || ans.Tx.Rsn != "AG01" || payments() != 1 {
			t.Errorf("a credit for a deactivated merchant: %d %+v, %d payments", code, ans.Tx, payments())
		}
	})
}
