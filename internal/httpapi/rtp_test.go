package httpapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/callback"
	"payd/internal/rails/sandbox"
	"payd/internal/worker"
)

func (e *env) rtpBody(over map[string]any) map[string]any {
	b := map[string]any{
		"alias": "37369112221", "amount": 50.5, "currency": "MDL", "description": "Order 42",
		"expiresAt": payd.FormatTime(e.clock.Now().Add(time.Hour)),
	}
	for k, v := range over {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

func (e *env) createRTP(over map[string]any) string {
	e.t.Helper()
	return e.as("POST", "/v2/rtp", e.rtpBody(over)).wantOK().str("result.rtpId")
}

func TestRTPCreateValidation(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		now := e.clock.Now()
		long := func(n int) string { return strings.Repeat("é", n) }
		tests := []struct {
			name string
			over map[string]any
			code string
		}{
			{"alias missing", map[string]any{"alias": nil}, payd.CodeInvalidParameter},
			{"alias format", map[string]any{"alias": "37269112221"}, payd.CodeInvalidParameter},
			{"alias short", map[string]any{"alias": "3736911222"}, payd.CodeInvalidParameter},
			{"alias number", map[string]any{"alias": 37369112221}, payd.CodeInvalidParameter},
			{"amount missing", map[string]any{"amount": nil}, payd.CodeInvalidParameter},
			{"amount zero", map[string]any{"amount": 0}, payd.CodeInvalidParameter},
			{"amount negative", map[string]any{"amount": -1}, payd.CodeInvalidParameter},
			{"amount over max", map[string]any{"amount": 100000.01}, payd.CodeInvalidParameter},
			{"amount three decimals", map[string]any{"amount": 50.505}, payd.CodeInvalidParameter},
			{"amount as string", map[string]any{"amount": "50"}, payd.CodeInvalidParameter},
			{"expiresAt missing", map[string]any{"expiresAt": nil}, payd.CodeExpiresAtWindow},
			{"expiresAt 30s", map[string]any{"expiresAt": payd.FormatTime(now.Add(30 * time.Second))}, payd.CodeExpiresAtWindow},
			{"expiresAt 61 days", map[string]any{"expiresAt": payd.FormatTime(now.Add(61 * 24 * time.Hour))}, payd.CodeExpiresAtWindow},
			{"expiresAt garbage", map[string]any{"expiresAt": "tomorrow"}, payd.CodeInvalidParameter},
			{"currency", map[string]any{"currency": "EUR"}, payd.CodeRTPCurrency},
			{"currency lower", map[string]any{"currency": "mdl"}, payd.CodeRTPCurrency},
			{"description missing", map[string]any{"description": nil}, payd.CodeInvalidParameter},
			{"description blank", map[string]any{"description": "   "}, payd.CodeInvalidParameter},
			{"description long", map[string]any{"description": long(501)}, payd.CodeInvalidParameter},
			{"orderId long", map[string]any{"orderId": long(101)}, payd.CodeInvalidParameter},
			{"terminalId long", map[string]any{"terminalId": long(101)}, payd.CodeInvalidParameter},
			{"callbackUrl relative", map[string]any{"callbackUrl": "/cb"}, payd.CodeInvalidParameter},
			{"callbackUrl ftp", map[string]any{"callbackUrl": "ftp://x.example/cb"}, payd.CodeInvalidParameter},
			{"callbackUrl user info", map[string]any{"callbackUrl": "https://u:p@x.example/cb"}, payd.CodeInvalidParameter},
			{"redirectUrl long", map[string]any{"redirectUrl": "https://x.example/" + strings.Repeat("a", 1000)}, payd.CodeInvalidParameter},
		}
		for _, tt := range tests {
			r := e.as("POST", "/v2/rtp", e.rtpBody(tt.over))
			if r.status != 400 || len(r.codes()) != 1 || r.codes()[0] != tt.code {
				t.Errorf("%s: got %d %s, want 400 [%s]", tt.name, r.status, r.body, tt.code)
			}
		}
		// Every problem at once, one item per field.
		r := e.as("POST", "/v2/rtp", map[string]any{"alias": "1", "amount": 0, "currency": "USD"})
		got := r.codes()
		sort.Strings(got)
		if want := []string{"12000", "12000", "12000", "12006", "22000"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("all-bad body: codes %v, want %v (%s)", got, want, r.body)
		}
		// Edges that pass: limits exactly, whitespace-only optional fields as absent.
		for _, over := range []map[string]any{
			{"amount": 100000, "description": long(500), "orderId": long(100), "terminalId": long(100)},
			{"amount": 0.01, "expiresAt": payd.FormatTime(now.Add(2 * time.Minute))},
			{"expiresAt": payd.FormatTime(now.Add(59 * 24 * time.Hour)), "orderId": "  ", "callbackUrl": ""},
			{"amount": "5e1"},
		} {
			if over["amount"] == "5e1" {
				over["amount"] = nil
				b := e.rtpBody(over)
				delete(b, "amount")
				s := strings.Replace(mustJSON(b), "{", `{"amount":5e1,`, 1)
				e.as("POST", "/v2/rtp", s).wantOK()
				continue
			}
			e.as("POST", "/v2/rtp", e.rtpBody(over)).wantOK()
		}
		// A member POST /v2/rtp does not take is refused by name, with the other problems.
		r = e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"unknown": map[string]any{"x": 1}, "expiresIn": 60, "alias": "1"})).wantError(400, payd.CodeInvalidParameter)
		if got := paramsOf(r); fmt.Sprint(got) != "[alias expiresIn unknown]" {
			t.Errorf("unknown members: parameters %v (%s)", got, r.body)
		}
		// Duplicate orderIds make two RTPs.
		a := e.createRTP(map[string]any{"orderId": "dup"})
		b := e.createRTP(map[string]any{"orderId": "dup"})
		if a == b {
			t.Error("duplicate orderId returned the same RTP")
		}
		r = e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"orderId": "o-7", "expiresAt": "2026-03-01T13:00:00.123456+02:00"})).wantOK()
		if r.str("result.orderId") != "o-7" || r.str("result.expiresAt") != "2026-03-01T11:00:00.123+00:00" {
			t.Errorf("create result = %s", r.body)
		}
	})
}

func mustJSON(v any) string {
	b, err := jsonMarshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRTPStateMachine walks every row of the RTP transition table (seed,
// spec §3.2): each row starts from a fresh RTP in the row's state.
func TestRTPStateMachine(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		accept := func(id string) *resp {
			return e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"})
		}
		reject := func(id string) *resp { return e.as("POST", "/v2/rtp/"+id+"/test-reject", nil) }
		cancel := func(id string) *resp {
			return e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "customer left"})
		}
		status := func(id string) string { return e.as("GET", "/v2/rtp/"+id, nil).wantOK().str("result.status") }
		expire := func(id string) {
			e.clock.Advance(time.Hour)
		}
		// The states, each reached from a new RTP.
		states := map[string]func() string{
			"Active":    func() string { return e.createRTP(nil) },
			"Created":   func() string { return e.createRTP(map[string]any{"alias": payd.AliasUnreachable}) },
			"Accepted":  func() string { id := e.createRTP(nil); accept(id).wantOK(); return id },
			"Rejected":  func() string { id := e.createRTP(nil); reject(id).wantOK(); return id },
			"Cancelled": func() string { id := e.createRTP(nil); cancel(id).wantOK(); return id },
			"Expired":   func() string { id := e.createRTP(nil); expire(id); return id },
		}
		rows := []struct {
			from, op   string
			wantStatus int
			wantCode   string
			resultKey  string // the operation-view status in the result
			resultVal  string
			to         string
		}{
			{"Active", "accept", 200, "", "result.rtpStatus", "Accepted", "Accepted"},
			{"Active", "reject", 200, "", "result.rtpStatus", "Rejected", "Rejected"},
			{"Active", "cancel", 200, "", "result.status", "Cancelled", "Cancelled"},
			{"Created", "cancel", 200, "", "result.status", "Cancelled", "Cancelled"},
			{"Created", "accept", 409, payd.CodeRTPState, "", "", "Created"},
			{"Created", "reject", 409, payd.CodeRTPState, "", "", "Created"},
			{"Cancelled", "cancel", 200, "", "result.status", "Cancelled", "Cancelled"},
			{"Cancelled", "accept", 409, payd.CodeRTPState, "", "", "Cancelled"},
			{"Accepted", "cancel", 409, payd.CodeRTPState, "", "", "Accepted"},
			{"Accepted", "accept", 409, payd.CodeRTPState, "", "", "Accepted"},
			{"Rejected", "cancel", 409, payd.CodeRTPState, "", "", "Rejected"},
			{"Rejected", "accept", 409, payd.CodeRTPState, "", "", "Rejected"},
			{"Expired", "cancel", 409, payd.CodeRTPState, "", "", "Expired"},
			{"Expired", "accept", 409, payd.CodeRTPState, "", "", "Expired"},
			{"Expired", "reject", 409, payd.CodeRTPState, "", "", "Expired"},
		}
		ops := map[string]func(string) *resp{"accept": accept, "reject": reject, "cancel": cancel}
		for _, row := range rows {
			id := states[row.from]()
			if got := status(id); got != row.from {
				t.Fatalf("setup of %s: status %s", row.from, got)
			}
			r := ops[row.op](id)
			if r.status != row.wantStatus || (row.wantCode != "" && r.str("errors.0.errorCode") != row.wantCode) {
				t.Errorf("%s --%s--> got %d %s", row.from, row.op, r.status, r.body)
			}
			if row.resultKey != "" && r.str(row.resultKey) != row.resultVal {
				t.Errorf("%s --%s--> %s = %q, want %q", row.from, row.op, row.resultKey, r.str(row.resultKey), row.resultVal)
			}
			if row.wantCode == payd.CodeRTPState && r.get("errors.0.errorArgs.status") != row.from {
				t.Errorf("%s --%s--> errorArgs %v", row.from, row.op, r.get("errors.0.errorArgs"))
			}
			if got := status(id); got != row.to {
				t.Errorf("%s --%s--> status %s, want %s", row.from, row.op, got, row.to)
			}
		}
	})
}

func TestRTPCancelIsIdempotent(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(nil)
		e.clock.Advance(time.Minute)
		e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "first"}).wantOK()
		first := e.as("GET", "/v2/rtp/"+id, nil).wantOK()
		e.clock.Advance(time.Minute)
		r := e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "second"}).wantOK()
		if r.str("result.rtpId") != id || r.str("result.status") != "Cancelled" {
			t.Errorf("second cancel = %s", r.body)
		}
		if again := e.as("GET", "/v2/rtp/"+id, nil); string(again.body) != string(first.body) {
			t.Errorf("repeated cancel changed the RTP:\n%s\n%s", first.body, again.body)
		}
		e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{}).wantError(400, payd.CodeInvalidParameter)
		e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": strings.Repeat("r", 501)}).wantError(400, payd.CodeInvalidParameter)
	})
}

func TestRTPAcceptResultAndChecks(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		m, _, tok := e.newMerchant(150)
		e.token, e.merchant = tok, m
		id := e.createRTP(map[string]any{"amount": 33.33, "orderId": "o-1"})
		// Check order: fields, existence, status, then the amount.
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 33.33, "currency": "EUR"}).wantError(400, payd.CodeRTPCurrency)
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"currency": "MDL"}).wantError(400, payd.CodeInvalidParameter)
		e.as("POST", "/v2/rtp/01a1fd38-56fa-7f9d-ba9b-1038a64df444/test-accept", map[string]any{"amount": 1, "currency": "MDL"}).wantError(404, payd.CodeRTPNotFound)
		e.as("POST", "/v2/rtp/not-a-guid/test-accept", map[string]any{"amount": 1, "currency": "MDL"}).wantError(404, payd.CodeRTPNotFound)
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 33.34, "currency": "MDL"}).wantError(400, payd.CodeInvalidParameter)
		r := e.as("POST", "/v2/rtp/"+strings.ToUpper(id)+"/test-accept", map[string]any{"amount": 33.33, "currency": "MDL"}).wantOK()
		if r.str("result.rtpStatus") != "Accepted" || r.get("result.status") != nil || r.num("result.commission") != 0.5 ||
			r.str("result.payerName") != payd.TestRTPPayer || r.str("result.payerIban") != payd.TestIBAN || r.str("result.orderId") != "o-1" {
			t.Errorf("accept result = %s", r.body)
		}
		if !strings.Contains(string(r.body), `"amount":33.33,"commission":0.50`) {
			t.Errorf("amounts not rendered with two decimals: %s", r.body)
		}
		// The signature is the callback's, and also the result's own: a
		// client signing every field of the result but the signature gets it.
		for _, res := range []*resp{r} {
			var env struct{ Result map[string]json.RawMessage }
			json.Unmarshal(res.body, &env)
			delete(env.Result, "signature")
			fields, _ := json.Marshal(env.Result)
			if got, err := callback.BodySignature(m.SignatureKey, fields); err != nil || got != res.str("result.signature") {
				t.Errorf("the result's fields sign to %s (%v), the result carries %s", got, err, res.str("result.signature"))
			}
		}
		fs := payd.Fields{
			payd.Str("rtpId", id), payd.Str("rtpStatus", "Accepted"), payd.Str("orderId", "o-1"), payd.Str("payId", r.str("result.payId")),
			payd.Amt("amount", 3333), payd.Amt("commission", 50), payd.Str("currency", "MDL"), payd.Str("payerName", payd.TestRTPPayer),
			payd.Str("payerIban", payd.TestIBAN), payd.Str("executedAt", r.str("result.executedAt")),
		}
		if want := fs.Sign(m.SignatureKey); r.str("result.signature") != want {
			t.Errorf("signature %s, want %s", r.str("result.signature"), want)
		}
		// Test-reject result: no payment fields, signed too.
		id2 := e.createRTP(map[string]any{"orderId": "o-2"})
		rj := e.as("POST", "/v2/rtp/"+id2+"/test-reject", nil).wantOK()
		if rj.get("result.payId") != nil || rj.str("result.rtpStatus") != "Rejected" || rj.get("result.status") != nil || rj.str("result.signature") == "" {
			t.Errorf("reject result = %s", rj.body)
		}
		var env struct{ Result map[string]json.RawMessage }
		json.Unmarshal(rj.body, &env)
		delete(env.Result, "signature")
		fields, _ := json.Marshal(env.Result)
		if got, err := callback.BodySignature(m.SignatureKey, fields); err != nil || got != rj.str("result.signature") {
			t.Errorf("the reject result's fields sign to %s (%v), the result carries %s", got, err, rj.str("result.signature"))
		}
		// An empty body with a form content type is accepted where no body is needed.
		id3 := e.createRTP(nil)
		req := newReq("POST", e.srv.URL+"/v2/rtp/"+id3+"/test-reject", "")
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		e.send(req).wantOK()
	})
}

func TestRTPTestAliases(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"alias": payd.AliasNotEnrolled})).wantError(409, payd.CodeAliasNotEnrolled)
		if r := e.as("GET", "/v2/rtp?count=10&offset=0", nil).wantOK(); r.num("result.totalCount") != 0 {
			t.Errorf("a refused RTP was stored: %s", r.body)
		}
		acc := e.createRTP(map[string]any{"alias": payd.AliasAutoAccept})
		rej := e.createRTP(map[string]any{"alias": payd.AliasAutoReject})
		auto := &sandbox.Decisions{Store: e.store, Payer: sandbox.New(e.store), Clock: e.clock}
		if n, _ := auto.RunOnce(t.Context()); n != 0 {
			t.Errorf("decided %d before the delay", n)
		}
		e.clock.Advance(payd.AutoDecisionDelay)
		if n, err := auto.RunOnce(t.Context()); n != 2 || err != nil {
			t.Fatalf("auto decisions = %d, %v", n, err)
		}
		if s := e.as("GET", "/v2/rtp/"+acc, nil).str("result.status"); s != "Accepted" {
			t.Errorf("auto-accept alias: %s", s)
		}
		if s := e.as("GET", "/v2/rtp/"+rej, nil).str("result.status"); s != "Rejected" {
			t.Errorf("auto-reject alias: %s", s)
		}
		if r := e.as("GET", "/v2/payments?paymentIntentId="+acc, nil).wantOK(); r.num("result.totalCount") != 1 {
			t.Errorf("auto-accept made no payment: %s", r.body)
		}
	})
}

func TestRTPExpiry(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		exp := e.clock.Now().Add(10 * time.Minute)
		id := e.createRTP(map[string]any{"expiresAt": payd.FormatTime(exp)})
		e.clock.Set(exp.Add(-time.Millisecond))
		if s := e.as("GET", "/v2/rtp/"+id, nil).str("result.status"); s != "Active" {
			t.Errorf("just before expiresAt: %s", s)
		}
		e.clock.Set(exp) // reaching the deadline counts as passing it
		r := e.as("GET", "/v2/rtp/"+id, nil).wantOK()
		if r.str("result.status") != "Expired" || r.str("result.updatedAt") != payd.FormatTime(exp) {
			t.Errorf("at expiresAt, before the loop: %s", r.body)
		}
		if l := e.as("GET", "/v2/rtp?count=10&offset=0&status=Expired", nil); l.num("result.totalCount") != 1 {
			t.Errorf("list by Expired before the loop: %s", l.body)
		}
		if l := e.as("GET", "/v2/rtp?count=10&offset=0&status=active", nil); l.num("result.totalCount") != 0 {
			t.Errorf("list by Active: %s", l.body)
		}
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantError(409, payd.CodeRTPState)
		e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "x"}).wantError(409, payd.CodeRTPState)
		ex := &worker.Expiry{Store: e.store, Clock: e.clock}
		if n, err := ex.RunOnce(t.Context()); n != 1 || err != nil {
			t.Fatalf("expiry loop = %d, %v", n, err)
		}
		if n, _ := ex.RunOnce(t.Context()); n != 0 {
			t.Errorf("expiry loop moved %d twice", n)
		}
		r2 := e.as("GET", "/v2/rtp/"+id, nil)
		if string(r2.body) != string(r.body) {
			t.Errorf("written state differs from the lazy view:\n%s\n%s", r.body, r2.body)
		}
	})
}

func TestRTPList(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		var ids []string
		for i, o := range []map[string]any{
			{"orderId": "b", "amount": 30, "description": "Blue Shirt", "terminalId": "T1"},
			{"orderId": "a", "amount": 10, "description": "red hat"},
			{"amount": 20, "description": "Green SHIRT", "terminalId": "T2"},
		} {
			o["expiresAt"] = payd.FormatTime(e.clock.Now().Add(time.Duration(3-i) * time.Hour))
			ids = append(ids, e.createRTP(o))
			e.clock.Advance(time.Second)
		}
		e.as("POST", "/v2/rtp/"+ids[1]+"/cancel", map[string]any{"reason": "x"}).wantOK()
		other, _, otherTok := e.newMerchant(0)
		_ = other
		e.call("POST", "/v2/rtp", e.rtpBody(nil), otherTok).wantOK()

		list := func(q string) (int, []string) {
			t.Helper()
			r := e.as("GET", "/v2/rtp?"+q, nil).wantOK()
			var got []string
			items, _ := r.get("result.items").([]any)
			for _, it := range items {
				got = append(got, it.(map[string]any)["rtpId"].(string))
			}
			return int(r.num("result.totalCount")), got
		}
		check := func(q string, total int, want ...string) {
			t.Helper()
			gotTotal, got := list(q)
			if gotTotal != total || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: total %d items %v; want %d %v", q, gotTotal, got, total, want)
			}
		}
		check("count=10&offset=0", 3, ids[0], ids[1], ids[2])
		check("count=2&offset=0&order=DESC", 3, ids[2], ids[1])
		check("count=2&offset=2", 3, ids[2])
		check("count=2&offset=9", 3)
		check("count=10&offset=0&sortBy=amount", 3, ids[1], ids[2], ids[0])
		check("count=10&offset=0&sortBy=Amount&order=desc", 3, ids[0], ids[2], ids[1])
		check("count=10&offset=0&sortBy=orderId", 3, ids[2], ids[1], ids[0]) // missing first
		check("count=10&offset=0&sortBy=orderId&order=desc", 3, ids[2], ids[0], ids[1])
		check("count=10&offset=0&sortBy=expiresAt", 3, ids[2], ids[1], ids[0])
		check("count=10&offset=0&sortBy=status", 3, ids[0], ids[2], ids[1]) // Active, Active, Cancelled
		check("count=10&offset=0&sortBy=type", 3, ids[0], ids[1], ids[2])
		check("count=10&offset=0&status=Cancelled", 1, ids[1])
		check("count=10&offset=0&status=pending", 2, ids[0], ids[2])
		check("count=10&offset=0&amount=20.00", 1, ids[2])
		check("count=10&offset=0&amount=20", 1, ids[2])
		check("count=10&offset=0&description=shirt", 2, ids[0], ids[2])
		check("count=10&offset=0&orderId=a", 1, ids[1])
		check("count=10&offset=0&terminalId=T2", 1, ids[2])
		check("count=10&offset=0&rtpId="+strings.ToUpper(ids[0]), 1, ids[0])
		created := storetestEpochPlus(e, 1)
		check("count=10&offset=0&createdAtFrom="+created+"&createdAtTo="+created, 1, ids[1])
		check("count=10&offset=0&createdAtFrom="+strings.Replace(created, "+", "%20", 1), 2, ids[1], ids[2])
		check("count=10&offset=0&orderId=&status=", 3, ids[0], ids[1], ids[2])
		check("count=10&count=1&offset=0", 3, ids[0], ids[1], ids[2]) // the first value counts

		check("offset=0", 3, ids[0], ids[1], ids[2]) // count and offset are optional
		check("count=10", 3, ids[0], ids[1], ids[2])
		bad := []struct{ q, code string }{
			{"count=0&offset=0", payd.CodeInvalidParameter},
			{"count=1001&offset=0", payd.CodeInvalidParameter},
			{"count=x&offset=0", payd.CodeInvalidParameter},
			{"count=1&offset=-1", payd.CodeInvalidParameter},
			{"count=1&offset=0&sortBy=alias", payd.CodeRTPSorting},
			{"count=1&offset=0&order=up", payd.CodeRTPSorting},
			{"count=1&offset=0&status=Paid", payd.CodeRTPStatusFilter},
			{"count=1&offset=0&amount=1.234", payd.CodeInvalidParameter},
			{"count=1&offset=0&amount=abc", payd.CodeInvalidParameter},
			{"count=1&offset=0&rtpId=nope", payd.CodeInvalidParameter},
			{"count=1&offset=0&createdAtFrom=yesterday", payd.CodeInvalidParameter},
		}
		for _, b := range bad {
			e.as("GET", "/v2/rtp?"+b.q, nil).wantError(400, b.code)
		}
	})
}

// storetestEpochPlus is the createdAt of the n-th RTP of TestRTPList.
func storetestEpochPlus(e *env, n int) string {
	return payd.FormatTime(e.clock.Now().Add(time.Duration(n-3) * time.Second))
}

func TestRTPIsolation(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(nil)
		payID := e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		refundID := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "r"}).wantOK().str("result.refundId")
		_, _, other := e.newMerchant(0)
		id2 := e.createRTP(nil)
		accept, reason := map[string]any{"amount": 50.5, "currency": "MDL"}, map[string]any{"reason": "x"}
		for _, c := range []struct {
			method, path string
			body         any
			code         string
		}{
			{"GET", "/v2/rtp/" + id, nil, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + id2 + "/cancel", reason, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + id2 + "/test-accept", accept, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + id2 + "/test-reject", nil, payd.CodeRTPNotFound},
			{"POST", "/v2/rtp/" + payID + "/refund", reason, payd.CodePaymentNotFound},
			{"POST", "/v2/payments/" + payID + "/refund", reason, payd.CodePaymentNotFound},
			{"GET", "/v2/payments/" + payID, nil, payd.CodePaymentNotFound},
			{"GET", "/v2/payments/refunds/" + refundID, nil, payd.CodeRefundNotFound},
		} {
			e.call(c.method, c.path, c.body, other).wantError(404, c.code)
		}
		if r := e.call("GET", "/v2/rtp?count=10&offset=0&rtpId="+id, nil, other); r.num("result.totalCount") != 0 {
			t.Errorf("other merchant lists the RTP: %s", r.body)
		}
		if r := e.call("GET", "/v2/payments", nil, other); r.num("result.totalCount") != 0 {
			t.Errorf("other merchant lists the payment: %s", r.body)
		}
		if s := e.as("GET", "/v2/rtp/"+id2, nil).str("result.status"); s != "Active" {
			t.Errorf("another merchant's calls changed the RTP: %s", s)
		}
	})
}

func TestRTPRefunds(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(map[string]any{"orderId": "o-9", "callbackUrl": "https://merchant.example/cb"})
		acc := e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK()
		payID := acc.str("result.payId")
		p := e.as("GET", "/v2/payments/"+payID, nil).wantOK()
		if p.str("result.status") != "Executed" || p.str("result.providerType") != "RTP" || p.str("result.paymentIntentId") != id ||
			p.num("result.refundableAmount") != 50.5 || p.get("result.partialRefundAvailable") != false || p.str("result.recipientIban") != "MD24AG000225100013104168" {
			t.Errorf("payment record = %s", p.body)
		}
		// The RTP refund path takes the payment id; an rtpId is not a payment.
		e.as("POST", "/v2/rtp/"+id+"/refund", map[string]any{"reason": "r"}).wantError(404, payd.CodePaymentNotFound)
		e.as("POST", "/v2/rtp/"+payID+"/refund", map[string]any{}).wantError(400, payd.CodeInvalidParameter)
		// A partial refund of an RTP payment is refused.
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 10, "reason": "r"}).wantError(409, payd.CodePartialRefund)
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 10.001, "reason": "r"}).wantError(400, payd.CodeInvalidParameter)
		// The RTP refund path reads amount too: any amount but the whole one
		// is refused, never refunded in full (it was ignored once).
		for _, amount := range []float64{5, 50.49, 50.51} {
			r := e.as("POST", "/v2/rtp/"+payID+"/refund", map[string]any{"reason": "only part", "amount": amount}).wantError(409, payd.CodePartialRefund)
			if !strings.Contains(r.str("errors.0.errorMessage"), "refunded in full") {
				t.Errorf("34001 message: %s", r.body)
			}
		}
		// A misspelt member is refused by name, not ignored.
		r := e.as("POST", "/v2/rtp/"+payID+"/refund", map[string]any{"reason": "r", "ammount": 5}).wantError(400, payd.CodeInvalidParameter)
		if r.str("errors.0.errorArgs.parameter") != "ammount" {
			t.Errorf("misspelt member: %s", r.body)
		}
		if p := e.as("GET", "/v2/payments/"+payID, nil).wantOK(); p.num("result.requestedRefundAmount") != 0 {
			t.Errorf("refused refunds reserved money: %s", p.body)
		}
		rf := e.as("POST", "/v2/rtp/"+payID+"/refund", map[string]any{"reason": "damaged", "amount": 50.5}).wantOK()
		if rf.str("result.status") != "Created" {
			t.Errorf("refund = %s", rf.body)
		}
		e.as("POST", "/v2/rtp/"+payID+"/refund", map[string]any{"reason": "again"}).wantError(409, payd.CodeAlreadyRefunded)
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "again"}).wantError(409, payd.CodeAlreadyRefunded)
		refundID := rf.str("result.refundId")
		got := e.as("GET", "/v2/payments/refunds/"+refundID, nil).wantOK()
		// executedAt is the creation time until the refund is processed.
		if got.str("result.status") != "Created" || got.str("result.executedAt") != payd.FormatTime(e.clock.Now()) || got.str("result.refundType") != "Full" || got.str("result.refundReason") != "damaged" {
			t.Errorf("refund record = %s", got.body)
		}
		// The processor: Requested at once, Accepted after the delay.
		proc := &sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}
		proc.RunOnce(t.Context())
		if s := e.as("GET", "/v2/payments/refunds/"+refundID, nil).str("result.status"); s != "Requested" {
			t.Errorf("refund after first pass: %s", s)
		}
		e.clock.Advance(time.Second)
		if n, err := proc.RunOnce(t.Context()); n != 1 || err != nil {
			t.Fatalf("refund processor = %d, %v", n, err)
		}
		got = e.as("GET", "/v2/payments/refunds/"+refundID, nil).wantOK()
		if got.str("result.status") != "Accepted" || got.str("result.executedAt") != payd.FormatTime(e.clock.Now()) {
			t.Errorf("settled refund = %s", got.body)
		}
		if s := e.as("GET", "/v2/rtp/"+id, nil).str("result.status"); s != "Refunded" {
			t.Errorf("RTP after refund: %s", s)
		}
		p = e.as("GET", "/v2/payments/"+payID, nil).wantOK()
		if p.str("result.status") != "Refunded" || p.num("result.refundedAmount") != 50.5 || p.num("result.refundableAmount") != 0 ||
			p.get("result.isRefundable") != false || p.str("result.lastRefundedAt") == "" {
			t.Errorf("refunded payment = %s", p.body)
		}
		e.as("GET", "/v2/rtp?count=10&offset=0&status=refunded", nil).wantOK()
		e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "x"}).wantError(409, payd.CodeRTPState)
		// A refund callback was queued, to the RTP's callbackUrl.
		cbs, _ := e.store.Callbacks(t.Context(), payd.CallbackPending, 10)
		if len(cbs) != 2 || cbs[0].Event != payd.EventRefundAccepted || cbs[0].URL != "https://merchant.example/cb" {
			t.Errorf("callbacks = %+v", cbs)
		}
	})
}

func TestSandboxEndpointsInProduction(t *testing.T) {
	cfg := testConfig()
	cfg.Sandbox = false
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		id := e.createRTP(map[string]any{"callbackUrl": "https://merchant.example/cb"})
		e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantError(403, payd.CodeSandboxOnly)
		e.as("POST", "/v2/rtp/"+id+"/test-reject", nil).wantError(403, payd.CodeSandboxOnly)
		// Authentication comes first.
		e.call("POST", "/v2/rtp/"+id+"/test-reject", nil, "").wantError(401, payd.CodeUnauthorized)
	})
}

// TestLegacyRefundPath: POST /v2/mia/payments/{payId}/refund (the Python
// client's path) is the refund endpoint of the payments area.
func TestLegacyRefundPath(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.createRTP(nil)
		payID := e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		rf := e.as("POST", "/v2/mia/payments/"+payID+"/refund", map[string]any{"reason": "legacy"}).wantOK()
		refundID := rf.str("result.refundId")
		if got := e.as("GET", "/v2/payments/refunds/"+refundID, nil).wantOK(); got.str("result.paymentId") != payID || got.str("result.refundReason") != "legacy" {
			t.Errorf("refund through the legacy path: %s", got.body)
		}
		e.as("POST", "/v2/mia/payments/"+payID+"/refund", map[string]any{"reason": "again"}).wantError(409, payd.CodeAlreadyRefunded)
		e.as("POST", "/v2/mia/payments/01a1fd38-56fa-7f9d-ba9b-1038a64df444/refund", map[string]any{"reason": "x"}).wantError(404, payd.CodePaymentNotFound)
	})
}
