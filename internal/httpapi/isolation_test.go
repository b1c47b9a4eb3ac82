package httpapi

import (
	"testing"
	"time"

	"payd"
)

// TestMerchantIsolationMatrix: merchant B gets the area's 404 on every
// endpoint, for every resource of merchant A, and A's objects are untouched.
func TestMerchantIsolationMatrix(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		rtp := e.createRTP(nil)
		rtpPay := e.as("POST", "/v2/rtp/"+e.createRTP(nil)+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		hybrid := e.as("POST", "/v2/instant/qr/hybrid", map[string]any{"amountType": "Free", "currency": "MDL",
			"extension": map[string]any{"description": "d", "expiresAt": e.exp(time.Hour)}}).wantOK()
		qr, ext := hybrid.str("result.qrId"), hybrid.str("result.extensionId")
		qrPay := e.pay(qr, 10).wantOK().str("result.payId")
		refund := e.as("POST", "/v2/payments/"+qrPay+"/refund", map[string]any{"amount": 1, "reason": "r"}).wantOK().str("result.refundId")
		co := e.checkout(nil)
		_, _, b := e.newMerchant(0)
		before := e.dbText()

		for _, c := range []struct {
			method, path string
			body         any
			code         string
		}{
			{"GET", "/v2/rtp/" + rtp, nil, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + rtp + "/cancel", map[string]any{"reason": "x"}, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + rtp + "/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + rtp + "/test-reject", nil, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + rtpPay + "/refund", map[string]any{"reason": "x"}, payd.CodePaymentNotFound},
			{"GET", "/v2/instant/qr/" + qr, nil, payd.CodeQRNotFound},
			{"GET", "/v2/mia/qr/" + qr, nil, payd.CodeQRNotFound},
			{"POST", "/v2/instant/qr/" + qr + "/cancel", map[string]any{"reason": "x"}, payd.CodeQRNotFound},
			{"POST", "/v2/instant/qr/" + qr + "/extension", map[string]any{"description": "d", "expiresAt": e.exp(time.Hour)}, payd.CodeQRNotFound},
			{"POST", "/v2/instant/qr/" + qr + "/extension/cancel", nil, payd.CodeQRNotFound},
			{"POST", "/v2/instant/test-pay", map[string]any{"qrId": qr, "amount": 10, "currency": "MDL", "iban": payd.TestIBAN, "payerName": "P"}, payd.CodeQRNotFound},
			{"GET", "/v2/instant/payments/" + qrPay, nil, payd.CodePaymentNotFound},
			{"GET", "/v2/payments/" + qrPay, nil, payd.CodePaymentNotFound},
			{"GET", "/v2/payments/" + rtpPay, nil, payd.CodePaymentNotFound},
			{"POST", "/v2/payments/" + qrPay + "/refund", map[string]any{"reason": "x"}, payd.CodePaymentNotFound},
			{"GET", "/v2/payments/refunds/" + refund, nil, payd.CodeRefundNotFound},
			{"GET", "/v2/checkouts/" + co, nil, payd.CodeCheckoutNotFound},
			{"POST", "/v2/checkouts/" + co + "/cancel", nil, payd.CodeCheckoutNotFound},
		} {
			e.call(c.method, c.path, c.body, b).wantError(404, c.code)
		}
		for _, list := range []string{
			"/v2/rtp?count=100&offset=0", "/v2/rtp?count=100&offset=0&rtpId=" + rtp, "/v2/instant/qr?count=100&offset=0",
			"/v2/instant/qr?count=100&offset=0&extensionId=" + ext, "/v2/instant/qr/extension?count=100&offset=0&qrId=" + qr,
			"/v2/instant/payments?count=100&offset=0", "/v2/payments", "/v2/payments?paymentId=" + qrPay, "/v2/checkouts", "/v2/checkouts?id=" + co,
		} {
			if r := e.call("GET", list, nil, b).wantOK(); r.num("result.totalCount") != 0 {
				t.Errorf("B lists A's objects at %s: %s", list, r.body)
			}
		}
		if after := e.dbText(); after != before {
			t.Error("B's calls changed A's data")
		}
	})
}
