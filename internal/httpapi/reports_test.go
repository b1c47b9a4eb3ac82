package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"payd"
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

// TestReconciliationAPI: the operator's reconciliation over HTTP, each
// answer checked against api/openapi.yaml by the harness: a day's report
// with its lines, totals and days; its filters (an unknown one refused);
// the CSV; a line explained; a match run again.
func TestReconciliationAPI(t *testing.T) {
	cfg := testConfig()
	cfg.OperatorToken = "operator-token-0123456789-abcdefghij"
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		op := cfg.OperatorToken
		day, p := reconDay(t, e)
		iban := e.merchant.IBAN
		r := e.call("GET", "/v2/reports/reconciliation?date="+day, nil, op).wantOK()
		if r.json["result"].(map[string]any)["closed"] != true || r.num("result.counts.matched") != 1 || r.num("result.counts.missing_in_payd") != 1 ||
			r.str("result.lines.0.paymentId") != p.ID && r.str("result.lines.1.paymentId") != p.ID {
			t.Errorf("the day: %s", r.body)
		}
		if n := len(r.json["result"].(map[string]any)["totals"].([]any)); n != 2 {
			t.Errorf("%d totals: %s", n, r.body)
		}
		missing := e.call("GET", "/v2/reports/reconciliation?from="+day+"&to="+day+"&outcome=missing_in_payd&account="+iban+"&merchantId="+e.merchant.ID, nil, op).wantOK()
		lines := missing.json["result"].(map[string]any)["lines"].([]any)
		if len(lines) != 1 || missing.str("result.lines.0.txId") != "TXLOST" {
			t.Fatalf("one outcome: %s", missing.body)
		}
		for _, q := range []string{"date=" + day + "&status=open", "date=" + day + "&outcome=lost", "date=2026-02-30", "date=" + day + "&from=" + day,
			"from=2026-01-01&to=2026-12-01", "from=2026-11-25&to=2026-11-24", "date=" + day + "&format=xml", "date=" + day + "&merchantId=nope"} {
			if r := e.call("GET", "/v2/reports/reconciliation?"+q, nil, op); r.status != 400 || r.str("errors.0.errorCode") != payd.CodeInvalidParameter {
				t.Errorf("?%s: %d %s", q, r.status, r.body)
			}
		}
		csv := e.call("GET", "/v2/reports/reconciliation?date="+day+"&format=csv", nil, op)
		if rows := strings.Split(strings.TrimSpace(string(csv.body)), "\n"); csv.status != 200 || len(rows) != 3 ||
			rows[0] != strings.Join(ReconCSVColumns, ",") {
			t.Errorf("CSV: %d\n%s", csv.status, csv.body)
		}

		entry := missing.str("result.lines.0.entryId")
		e.call("POST", "/v2/reports/reconciliation/entries/"+entry+"/explain", map[string]any{"note": ""}, op).wantError(400, payd.CodeInvalidParameter)
		e.call("POST", "/v2/reports/reconciliation/entries/"+entry+"/explain", map[string]any{"seq": 5, "note": "x"}, op).wantError(400, payd.CodeInvalidParameter)
		e.as("POST", "/v2/reports/reconciliation/entries/"+entry+"/explain", map[string]any{"note": "x"}).wantError(401, payd.CodeUnauthorized)
		e.call("POST", "/v2/reports/reconciliation/entries/"+entry+"/explain", map[string]any{"note": "a cash deposit", "by": "ana"}, op).wantOK()
		after := e.call("GET", "/v2/reports/reconciliation?date="+day+"&outcome=missing_in_payd", nil, op).wantOK()
		if after.str("result.lines.0.explanation.note") != "a cash deposit" || after.str("result.lines.0.explanation.by") != "ana" {
			t.Errorf("explained: %s", after.body)
		}
		m := e.call("POST", "/v2/reports/reconciliation/match", map[string]any{"from": day, "to": day}, op).wantOK()
		if m.num("result.matched") != 0 {
			t.Errorf("match again with nothing new: %s", m.body)
		}
		e.call("POST", "/v2/reports/reconciliation/match", map[string]any{"from": day}, op).wantError(400, payd.CodeInvalidParameter)
	})
}

// reconDay is a day of the env's merchant that the bank's camt.053 closed:
// a QR payment of 15.00 it books, and 42.00 it books that payd never
// heard of. It returns the booking date and the payment.
func reconDay(t *testing.T, e *env) (string, *payd.Payment) {
	t.Helper()
	ctx := context.Background()
	qrID := e.as("POST", "/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "x"}).wantOK().str("result.qrId")
	iban := e.merchant.IBAN
	now := e.clock.Now()
	day := now.In(e.store.BankLocation()).Format(time.DateOnly)
	paid := payd.Money(1500)
	p, err := e.store.Credit(ctx, payd.Credit{TargetID: qrID, Amount: &paid, Currency: "MDL", Reference: "TX1", Routed: true,
		CreditorIBAN: iban, PayerName: "P"}, now)
	if err != nil {
		t.Fatal(err)
	}
	rep := payd.StatementReport{ID: "ST-1", Account: iban, AccountIsIBAN: true, From: day, To: day, Entries: []payd.StatementEntry{
		{BookingDate: day, Direction: payd.DirCredit, Amount: 1500, Currency: "MDL", BankRef: "B1",
			Txs: []payd.StatementTx{{Amount: 1500, Currency: "MDL", EndToEndID: qrID, TxID: "TX1"}}},
		{BookingDate: day, Direction: payd.DirCredit, Amount: 4200, Currency: "MDL", BankRef: "B2",
			Txs: []payd.StatementTx{{Amount: 4200, Currency: "MDL", TxID: "TXLOST"}}},
	}}
	payd.EntryKeys(&rep)
	if _, err := e.store.ImportStatement(ctx, &payd.Statement{MsgID: "S1", Kind: payd.KindCamt053, Version: "001.08", EndOfDay: true,
		Page: 1, LastPage: true, CreatedAt: now, Reports: []payd.StatementReport{rep}}, "file", now); err != nil {
		t.Fatal(err)
	}
	return day, p
}
