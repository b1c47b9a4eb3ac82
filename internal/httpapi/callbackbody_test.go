package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"payd"
	"payd/api"
	"payd/internal/rails/sandbox"
)

// callbackSchemas names each event's body schema in api/openapi.yaml.
var callbackSchemas = map[string]string{
	string(payd.EventQRPayment): "QRPaymentCallback", string(payd.EventRTPAccepted): "RTPAcceptedCallback",
	string(payd.EventRefundAccepted): "RefundAcceptedCallback", string(payd.EventCheckoutCompleted): "CheckoutCallback",
	string(payd.EventCheckoutFailed): "CheckoutCallback",
}

// callbackBodyError checks a callback's body against its event's schema in
// api/openapi.yaml. The harness calls it on every callback a test reads
// through GET /v2/callbacks/{id}.
func callbackBodyError(event string, body []byte) error {
	name, ok := callbackSchemas[event]
	if !ok {
		return fmt.Errorf("event %q has no body schema", event)
	}
	doc, err := api.Doc()
	if err != nil {
		return err
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("api/openapi.yaml has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s body is not JSON: %v", event, err)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s body does not match %s: %v\nbody: %s", event, name, err, body)
	}
	return nil
}

// TestCallbackBodiesMatchTheContract: every kind of callback payd sends, in
// each of its shapes (a Static, Dynamic and Hybrid QR's payment, an RTP's
// acceptance, a partial and a full refund, a checkout completed by card and
// by QR, and one failed), matches its body schema in api/openapi.yaml, the
// one the callback package and the public client are held to: the harness
// checks each body as the test reads it from the callback log.
func TestCallbackBodiesMatchTheContract(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		cb := "https://shop.example/cb"
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "tips", "callbackUrl": cb})
		staticPay := e.pay(static, 5).wantOK().str("result.payId")
		dynamic := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 12.5, "currency": "MDL", "description": "d",
			"expiresAt": e.exp(time.Hour), "orderId": "o-1", "callbackUrl": cb})
		e.pay(dynamic, 12.5).wantOK()
		hybrid := e.as("POST", "/v2/mia/qr/hybrid", map[string]any{"amountType": "Fixed", "currency": "MDL", "terminalId": "T9"}).wantOK().str("result.qrId")
		e.as("POST", "/v2/instant/qr/"+hybrid+"/extension", map[string]any{"amount": 10, "description": "Lunch", "expiresAt": e.exp(time.Hour),
			"callbackUrl": cb}).wantOK()
		e.pay(hybrid, 10).wantOK()
		rtp := e.createRTP(map[string]any{"callbackUrl": cb})
		rtpPay := e.as("POST", "/v2/rtp/"+rtp+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		e.as("POST", "/v2/payments/"+rtpPay+"/refund", map[string]any{"reason": "all"}).wantOK() // an RTP's is whole
		e.as("POST", "/v2/payments/"+staticPay+"/refund", map[string]any{"amount": 2, "reason": "one item"}).wantOK()
		refunds := &sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}
		refunds.RunOnce(t.Context())
		e.clock.Advance(time.Second)
		refunds.RunOnce(t.Context())

		card := e.checkout(nil)
		p := e.payer()
		p.method(card, "Card")
		p.card(card, payd.ApprovedCard, payd.ApprovedCardExpiry, payd.ApprovedCardCVV)
		declined := e.checkout(map[string]any{"orderInfo": nil, "payerInfo": nil})
		p.method(declined, "Card")
		p.card(declined, "4000000000000002", "01/30", "123")
		byQR := e.checkout(nil)
		p.method(byQR, "MiaQr")
		qrs := e.as("GET", "/v2/instant/qr?count=10&offset=0&orderId=ORD-7", nil).wantOK()
		e.pay(qrs.str("result.items.0.qrId"), 200).wantOK()

		// Each body is checked by the harness as it is read; here, that
		// every shape was there to be checked.
		list := e.as("GET", "/v2/callbacks?count=100&offset=0", nil).wantOK()
		seen := map[string]int{}
		for i := range int(list.num("result.totalCount")) {
			d := e.as("GET", "/v2/callbacks/"+list.str(fmt.Sprintf("result.items.%d.callbackId", i)), nil).wantOK()
			var body map[string]any
			json.Unmarshal([]byte(d.str("result.body")), &body)
			shape := d.str("result.event")
			if r, ok := body["result"].(map[string]any); ok {
				shape += fmt.Sprintf(" %v %v %v", r["qrStatus"], r["refundType"], r["extensionId"] != nil)
			} else {
				shape += fmt.Sprintf(" %v %v", body["paymentMethod"], body["completedAt"] == nil)
			}
			seen[shape]++
		}
		want := map[string]int{
			"qr.payment.executed Active <nil> false": 1, "qr.payment.executed Paid <nil> false": 1, "qr.payment.executed Active <nil> true": 1,
			"rtp.accepted <nil> <nil> false": 1, "refund.accepted <nil> Partial false": 1, "refund.accepted <nil> Full false": 1,
			"checkout.completed Card false": 1, "checkout.completed MiaQr false": 1, "checkout.failed Card true": 1,
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("callbacks sent: %v\nwant %v", seen, want)
		}
	})
}

// TestCallbackBodyCheckFails: the check refuses a body its schema does not
// describe, so a passing TestCallbackBodiesMatchTheContract means something.
func TestCallbackBodyCheckFails(t *testing.T) {
	id := "01a1fd38-56fa-7f9d-ba9b-1038a64df444"
	good := `{"result":{"refundId":"` + id + `","payId":"` + id + `","amount":1.00,"currency":"MDL","status":"Accepted","refundType":"Full",` +
		`"executedAt":"2026-03-01T10:15:30.123+00:00","orderId":null},"signature":"s"}`
	if err := callbackBodyError("refund.accepted", []byte(good)); err != nil {
		t.Fatalf("a body as payd sends it: %v", err)
	}
	for _, bad := range []string{
		`{"result":{"refundId":"` + id + `","payId":"` + id + `","amount":1.00,"currency":"MDL","status":"Accepted","refundType":"Full",` +
			`"executedAt":"2026-03-01T10:15:30.123+00:00"},"signature":"s"}`, // orderId missing
		`{"result":{"refundId":"` + id + `","payId":"` + id + `","amount":1.00,"currency":"MDL","status":"Accepted","refundType":"Full",` +
			`"executedAt":"2026-03-01T10:15:30.123+00:00","orderId":null,"note":"x"},"signature":"s"}`, // a field the contract lacks
		`{"result":{"refundId":"` + id + `","payId":"` + id + `","amount":"1.00","currency":"MDL","status":"Accepted","refundType":"Full",` +
			`"executedAt":"2026-03-01T10:15:30.123+00:00","orderId":null},"signature":"s"}`, // an amount as a string
	} {
		if callbackBodyError("refund.accepted", []byte(bad)) == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if callbackBodyError("rtp.rejected", []byte(good)) == nil {
		t.Error("an event payd does not send has a schema")
	}
}
