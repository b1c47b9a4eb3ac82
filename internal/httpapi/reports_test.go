package httpapi

import (
	"testing"
	"time"
)

// TestReports: the settlement report sums the merchant's payments and
// refunds per day (only its own), the reconciliation report answers only
// the operator's token, and both answer as the contract says.
func TestReports(t *testing.T) {
	cfg := testConfig()
	cfg.OperatorToken = "operator-token-0123456789-abcdefghij"
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		qr := e.as("POST", "/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "x"})
		qr.wantOK()
		for _, amount := range []float64{10, 20.5} {
			e.as("POST", "/v2/instant/test-pay", map[string]any{"qrId": qr.str("result.qrId"), "amount": amount, "currency": "MDL",
				"iban": "MD88AG000000011621810140", "payerName": "P"}).wantOK()
		}
		_, _, other := e.newMerchant(0) // another merchant's report is empty
		day := e.clock.Now().UTC().Format(time.DateOnly)
		r := e.as("GET", "/v2/reports/settlement?dateFrom="+day+"&dateTo="+day, nil)
		r.wantOK()
		if r.num("result.totals.0.gross") != 30.5 || r.num("result.totals.0.payments") != 2 || r.num("result.days.0.net") != 30.5 ||
			r.str("result.days.0.date") != day {
			t.Errorf("settlement: %s", r.body)
		}
		o := e.call("GET", "/v2/reports/settlement?dateFrom="+day+"&dateTo="+day, nil, other).wantOK()
		if days, _ := o.json["result"].(map[string]any)["days"].([]any); len(days) != 0 {
			t.Errorf("another merchant's settlement shows %d days", len(days))
		}
		for _, q := range []string{"", "?dateFrom=" + day, "?dateFrom=2026-13-01&dateTo=" + day, "?dateFrom=2026-11-25&dateTo=2026-11-24",
			"?dateFrom=2024-01-01&dateTo=2026-01-01"} {
			if r := e.as("GET", "/v2/reports/settlement"+q, nil); r.status != 400 {
				t.Errorf("settlement%s: %d", q, r.status)
			}
		}
		if r := e.as("GET", "/v2/reports/reconciliation?date="+day, nil); r.status != 401 {
			t.Errorf("reconciliation with a merchant's token: %d", r.status)
		}
		rec := e.call("GET", "/v2/reports/reconciliation?date="+day, nil, cfg.OperatorToken)
		rec.wantOK()
		if rec.json["result"].(map[string]any)["closed"] != false {
			t.Errorf("reconciliation without statements: %s", rec.body)
		}
		if r := e.call("GET", "/v2/reports/reconciliation", nil, cfg.OperatorToken); r.status != 400 {
			t.Errorf("reconciliation without a date: %d", r.status)
		}
	})
}
