package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022/xsdtest"
)

const operatorToken = "operator-token-0123456789-abcdefghij"

// TestReconciliation_postgres: production payd on PostgreSQL and
// payd-bank. A day of RTP, QR and refund traffic, then the bank's
// statements: every entry matched. Then credits the bank books on the
// next day, one never sent to payd, one at another amount, one twice, and
// one never booked: each disagreement named in the report, in the CLI's
// and in the gauges; the same statement taken twice changes nothing; the
// merchant's settlement adds up.
func TestReconciliation_postgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	env, paydAddr, bank := railsEnv(t)
	maddr := freeAddr(t)
	env["PAYD_OPERATOR_TOKEN"], env["PAYD_METRICS_ADDR"] = operatorToken, maddr
	out, code := runCmd(t, env, "merchant", "create", "--name", "Shop", "--iban", shopIBAN, "--commission", "150")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	p := startProc(t, env, paydAddr)
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, p.base, cr)}
	operator := &client{http: c.http, token: operatorToken}
	// Booking dates are the bank's calendar (Chișinău, payd's and
	// payd-bank's default); the settlement's days are UTC's.
	chisinau, err := time.LoadLocation("Europe/Chisinau")
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(chisinau).Format(time.DateOnly)
	tomorrow := time.Now().In(chisinau).AddDate(0, 0, 1).Format(time.DateOnly)
	utcToday, utcTomorrow := time.Now().UTC().Format(time.DateOnly), time.Now().UTC().Add(24*time.Hour).Format(time.DateOnly)
	report := func(date string) map[string]any {
		t.Helper()
		s, v := operator.do("GET", p.base+"/v2/reports/reconciliation?date="+date, nil)
		if s != 200 {
			t.Fatalf("report: %d %v", s, v)
		}
		return result(v)
	}
	counts := func(r map[string]any) map[string]float64 {
		out := map[string]float64{}
		for k, v := range r["counts"].(map[string]any) {
			out[k] = v.(float64)
		}
		return out
	}
	sendStatement := func(kind, date string) string {
		t.Helper()
		s, v := bank.call(t, "POST", "/statements/send?kind="+kind+"&date="+date, nil)
		if s != 200 || v["paydStatus"] != 200.0 {
			t.Fatalf("%s for %s: %d %v", kind, date, s, v)
		}
		xsdtest.Validate(t, kind, []byte(str(v, "body")))
		return str(v, "body")
	}

	// Only the operator's token reads the reconciliation.
	for name, tok := range map[string]string{"no token": "", "a merchant's token": c.token} {
		anon := &client{http: c.http, token: tok}
		if s, _ := anon.do("GET", p.base+"/v2/reports/reconciliation?date="+today, nil); s != 401 {
			t.Errorf("%s: %d, want 401", name, s)
		}
	}
	if s, _ := operator.do("GET", p.base+"/v2/reports/reconciliation?date=yesterday", nil); s != 400 {
		t.Errorf("a bad date: %d, want 400", s)
	}

	// A day of traffic.
	exp := payd.FormatTime(time.Now().Add(time.Hour))
	s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 50, "currency": "MDL", "description": "Order",
		"expiresAt": exp})
	if s != 200 {
		t.Fatalf("rtp: %d %v", s, v)
	}
	rtpID := str(result(v), "rtpId")
	bank.waitMessage(t, "pain.013", rtpID, 10*time.Second)
	if s, v := bank.call(t, "POST", "/rtp/"+rtpID+"/accept", nil); s != 200 || v["status"] != "ACCC" {
		t.Fatalf("accept: %d %v", s, v)
	}
	s, v = c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips"})
	if s != 200 {
		t.Fatalf("qr: %d %v", s, v)
	}
	qrID := str(result(v), "qrId")
	pay := func(amount string, extra map[string]any) map[string]any {
		t.Helper()
		order := map[string]any{"target": qrID, "amount": amount, "creditorIban": shopIBAN}
		for k, x := range extra {
			order[k] = x
		}
		s, v := bank.call(t, "POST", "/pay", order)
		if s != 200 || (v["status"] != "ACCC" && v["status"] != "BOOKED") {
			t.Fatalf("pay %s %v: %d %v", amount, extra, s, v)
		}
		return v
	}
	pay("12.30", nil)
	_, l := c.do("GET", p.base+"/v2/payments?paymentIntentId="+rtpID, nil)
	rtpPay := str(result(l)["items"].([]any)[0].(map[string]any), "paymentId")
	s, v = c.do("POST", p.base+"/v2/payments/"+rtpPay+"/refund", map[string]any{"reason": "back"})
	if s != 200 {
		t.Fatalf("refund: %d %v", s, v)
	}
	refundID := str(result(v), "refundId")
	bank.waitMessage(t, "pacs.004", refundID, 10*time.Second)
	if s, v := bank.call(t, "POST", "/refund/"+refundID+"/settle", nil); s != 200 {
		t.Fatalf("settle: %d %v", s, v)
	}

	// The bank's day: notifications, then the end-of-day statement.
	sendStatement("camt.054", today)
	if r := report(today); r["closed"] != false {
		t.Errorf("a day with only notifications is closed: %v", r)
	}
	sendStatement("camt.053", today)
	r := report(today)
	if c := counts(r); r["closed"] != true || c["matched"] != 3 || c["missing_in_payd"]+c["missing_in_bank"]+c["amount_mismatch"]+c["duplicate"] != 0 {
		t.Fatalf("a day the bank booked as payd recorded: %v", r)
	}

	// The next day's bookings disagree with payd in every way.
	dropped := pay("42.00", map[string]any{"dropMessage": true, "bookOn": tomorrow}) // money booked, payd never heard
	pay("7.00", map[string]any{"unbooked": true})                                    // payd has it, the bank never books it
	pay("9.00", map[string]any{"bookedAmount": "9.10", "bookOn": tomorrow})
	pay("3.00", map[string]any{"bookTwice": true, "bookOn": tomorrow})
	// Today's statement again (a new one, the same bookings): the day's
	// payments booked tomorrow are missing in the bank so far.
	sendStatement("camt.053", today)
	if c := counts(report(today)); c["missing_in_bank"] != 3 || c["matched"] != 3 {
		t.Errorf("today before tomorrow's statement: %v", c)
	}
	tomorrowStmt := sendStatement("camt.053", tomorrow)
	r = report(tomorrow)
	want := map[string]float64{"matched": 1, "missing_in_payd": 1, "amount_mismatch": 1, "duplicate": 1, "missing_in_bank": 0}
	for k, n := range want {
		if counts(r)[k] != n {
			t.Errorf("tomorrow's %s: %v, want %v (%v)", k, counts(r)[k], n, r["lines"])
		}
	}
	for _, x := range r["lines"].([]any) {
		line := x.(map[string]any)
		switch line["outcome"] {
		case "missing_in_payd":
			if line["amount"] != 42.0 || line["account"] != shopIBAN || line["txId"] == nil || line["paymentId"] != nil || line["endToEndId"] != qrID {
				t.Errorf("the credit payd never heard of: %v", line)
			}
		case "amount_mismatch":
			if line["amount"] != 9.1 || line["paydAmount"] != 9.0 || line["paymentId"] == nil {
				t.Errorf("the altered amount: %v", line)
			}
		}
	}
	// Tomorrow's statement booked today's late credits: only the one never
	// booked is still missing in the bank.
	if c := counts(report(today)); c["missing_in_bank"] != 1 {
		t.Errorf("today after tomorrow's statement: %v", c)
	}

	// The same statement again, by the rails and from a file: nothing changes.
	before := report(tomorrow)
	req, _ := http.NewRequest("POST", bank.base+"/send", strings.NewReader(tomorrowStmt))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	file := filepath.Join(t.TempDir(), "statement.xml")
	os.WriteFile(file, []byte(tomorrowStmt), 0o600)
	if out, code := runCmd(t, env, "reconcile", "import", file); code != 0 || !strings.Contains(out, "taken before") {
		t.Errorf("payd reconcile import of a statement taken: %d %s", code, out)
	}
	if after := report(tomorrow); !sameJSON(before, after) {
		t.Errorf("the same statement taken again changed the report:\n%v\n%v", before, after)
	}
	if out, code := runCmd(t, env, "reconcile", "report", "--date", tomorrow, "--json"); code != 0 || !sameJSONText(t, out, before) {
		t.Errorf("payd reconcile report: %d\n%s", code, out)
	}

	// The gauges.
	wantGauge := map[string]string{"missing_in_payd": "1", "missing_in_bank": "1", "amount_mismatch": "1", "duplicate": "1"}
	deadline := time.Now().Add(15 * time.Second)
	var metrics string
	for time.Now().Before(deadline) {
		res, err := http.Get("http://" + maddr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			metrics = string(b)
		}
		ok := true
		for k, n := range wantGauge {
			if !regexp.MustCompile(`payd_reconciliation_unmatched\{kind="` + k + `"\} ` + n + `\n`).MatchString(metrics) {
				ok = false
			}
		}
		if ok {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for k, n := range wantGauge {
		if !regexp.MustCompile(`payd_reconciliation_unmatched\{kind="` + k + `"\} ` + n + `\n`).MatchString(metrics) {
			t.Errorf("gauge %s is not %s:\n%s", k, n, grepLines(metrics, "payd_reconciliation"))
		}
	}

	// The merchant's settlement of the day adds up to its payments and refunds.
	s, v = c.do("GET", p.base+"/v2/reports/settlement?dateFrom="+utcToday+"&dateTo="+utcToday, nil)
	if s != 200 {
		t.Fatalf("settlement: %d %v", s, v)
	}
	tot := result(v)["totals"].([]any)[0].(map[string]any)
	// 50 (the RTP) + 12.30 + 7 + 9 + 3 paid today at 1.5%; the RTP's 50 refunded.
	var commission payd.Money
	for _, a := range []payd.Money{5000, 1230, 700, 900, 300} {
		commission += payd.Commission(a, 150)
	}
	net := payd.Money(8130) - commission - 5000
	if tot["payments"] != 5.0 || tot["gross"] != 81.3 || tot["refunded"] != 50.0 || tot["refunds"] != 1.0 ||
		tot["commission"] != asFloat(commission) || tot["net"] != asFloat(net) {
		t.Errorf("settlement totals: %v; want commission %s, net %s", tot, commission, net)
	}
	if s, _ := c.do("GET", p.base+"/v2/reports/settlement?dateFrom="+utcTomorrow+"&dateTo="+utcToday, nil); s != 400 {
		t.Errorf("dateTo before dateFrom: %d", s)
	}

	// The operator's tools. A report's filters: one outcome; an unknown
	// filter refused.
	s, v = operator.do("GET", p.base+"/v2/reports/reconciliation?date="+tomorrow+"&outcome=duplicate&account="+shopIBAN, nil)
	if lines := result(v)["lines"].([]any); s != 200 || len(lines) != 1 || lines[0].(map[string]any)["outcome"] != "duplicate" {
		t.Errorf("the duplicates of tomorrow: %d %v", s, v)
	}
	if s, v := operator.do("GET", p.base+"/v2/reports/reconciliation?date="+tomorrow+"&status=open", nil); s != 400 {
		t.Errorf("an unknown filter: %d %v", s, v)
	}
	// The report as CSV: a row a line.
	req, _ = http.NewRequest("GET", p.base+"/v2/reports/reconciliation?date="+tomorrow+"&format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	csvBody, _ := io.ReadAll(res.Body)
	res.Body.Close()
	rows := strings.Split(strings.TrimSpace(string(csvBody)), "\n")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") || len(rows) != 1+len(report(tomorrow)["lines"].([]any)) ||
		!strings.HasPrefix(rows[0], "bookingDate,account,outcome") {
		t.Errorf("the CSV: %d %s\n%s", res.StatusCode, res.Header.Get("Content-Type"), csvBody)
	}
	// The duplicate explained (the bank takes it back next week): it asks
	// nothing more, and says who said so.
	var dup map[string]any
	for _, x := range report(tomorrow)["lines"].([]any) {
		if l := x.(map[string]any); l["outcome"] == "duplicate" {
			dup = l
		}
	}
	s, v = operator.do("POST", p.base+"/v2/reports/reconciliation/entries/"+str(dup, "entryId")+"/explain",
		map[string]any{"seq": dup["seq"], "note": "booked twice by the bank; it reverses one on Monday", "by": "ana"})
	if s != 200 {
		t.Fatalf("explain: %d %v", s, v)
	}
	if s, v := operator.do("POST", p.base+"/v2/reports/reconciliation/entries/nosuchentry/explain", map[string]any{"note": "x"}); s != 400 {
		t.Errorf("explaining no line: %d %v", s, v)
	}
	for _, x := range report(tomorrow)["lines"].([]any) {
		if l := x.(map[string]any); l["outcome"] == "duplicate" {
			if e, _ := l["explanation"].(map[string]any); e["by"] != "ana" || e["note"] == nil {
				t.Errorf("the explained line: %v", l)
			}
		}
	}
	// The credit payd never heard of is sent to payd late (the bank's
	// pacs.008 again): no statement comes, the operator matches again.
	pay("42.00", map[string]any{"unbooked": true, "txId": dropped["txId"]})
	if out, code := runCmd(t, env, "reconcile", "match", "--from", today, "--to", tomorrow, "--by", "ana"); code != 0 ||
		!strings.Contains(out, "matched 1 lines") {
		t.Errorf("payd reconcile match: %d %s", code, out)
	}
	if c := counts(report(tomorrow)); c["missing_in_payd"] != 0 || c["matched"] != 2 {
		t.Errorf("tomorrow after matching again: %v", c)
	}

	// Another version of the bank's statements (camt.054.001.04 during the
	// day, camt.053.001.02 at its end, as many banks send them): read the
	// same.
	after := time.Now().In(chisinau).AddDate(0, 0, 2).Format(time.DateOnly)
	pay("5.00", map[string]any{"bookOn": after})
	for _, kv := range [][2]string{{"camt.054", "001.04"}, {"camt.053", "001.02"}} {
		s, v := bank.call(t, "POST", "/statements/send?kind="+kv[0]+"&date="+after+"&version="+kv[1], nil)
		if s != 200 || v["paydStatus"] != 200.0 || !strings.Contains(str(v, "body"), "urn:iso:std:iso:20022:tech:xsd:"+kv[0]+"."+kv[1]) {
			t.Fatalf("%s.%s: %d %v", kv[0], kv[1], s, v)
		}
		xsdtest.Validate(t, kv[0]+"."+kv[1], []byte(str(v, "body")))
	}
	r = report(after)
	if c := counts(r); r["closed"] != true || c["matched"] != 1 || c["sum_mismatch"] != 0 {
		t.Errorf("the day of .001.02/.001.04 statements: %v", r)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func sameJSONText(t *testing.T, text string, v any) bool {
	var got any
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Logf("not JSON: %v", err)
		return false
	}
	return sameJSON(got, v)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func asFloat(m payd.Money) float64 {
	var f float64
	json.Unmarshal([]byte(m.String()), &f)
	return f
}
