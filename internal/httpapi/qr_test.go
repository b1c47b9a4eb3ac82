package httpapi

import (
	"bytes"
	"fmt"
	"image/png"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"

	"payd"
	"payd/internal/rails/sandbox"
	"payd/internal/worker"
)

func (e *env) qr(body map[string]any) string {
	e.t.Helper()
	return e.as("POST", "/v2/instant/qr", body).wantOK().str("result.qrId")
}

func (e *env) exp(d time.Duration) string { return payd.FormatTime(e.clock.Now().Add(d)) }

func (e *env) pay(qrID string, amount float64) *resp {
	e.t.Helper()
	return e.as("POST", "/v2/instant/test-pay", map[string]any{"qrId": qrID, "amount": amount, "currency": "MDL",
		"iban": payd.TestIBAN, "payerName": "TEST QR PAYMENT"})
}

// TestQRCreationRules covers every type × amountType with each amount
// field present or absent (spec §2.3, §2.4).
func TestQRCreationRules(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		type fields struct{ amount, min, max bool }
		for _, typ := range []string{"Static", "Dynamic"} {
			for _, at := range []string{"Fixed", "Controlled", "Free"} {
				for mask := 0; mask < 8; mask++ {
					f := fields{mask&1 != 0, mask&2 != 0, mask&4 != 0}
					body := map[string]any{"type": typ, "amountType": at, "currency": "MDL", "description": "d"}
					if typ == "Dynamic" {
						body["expiresAt"] = e.exp(time.Hour)
					}
					if f.amount {
						body["amount"] = 15
					}
					if f.min {
						body["amountMin"] = 10
					}
					if f.max {
						body["amountMax"] = 20
					}
					var want string // "" = accepted
					switch {
					case typ == "Dynamic" && at == "Free":
						want = payd.CodeInvalidParameter
					case at == "Fixed" && !f.amount:
						want = payd.CodeAmountRequired
					case at == "Fixed" && (f.min || f.max):
						want = payd.CodeInvalidParameter
					case at == "Controlled" && !f.amount:
						want = payd.CodeAmountRequired
					case at == "Controlled" && !(f.min && f.max):
						want = payd.CodeAmountBoundsMissing
					case at == "Free" && (f.amount || f.min || f.max):
						want = payd.CodeInvalidParameter
					}
					r := e.as("POST", "/v2/instant/qr", body)
					name := fmt.Sprintf("%s/%s amount=%v min=%v max=%v", typ, at, f.amount, f.min, f.max)
					if want == "" {
						if r.status != 200 || r.str("result.type") != typ {
							t.Errorf("%s: %d %s, want accepted", name, r.status, r.body)
						}
						if (typ == "Dynamic") != (r.get("result.expiresAt") != nil) {
							t.Errorf("%s: expiresAt in result = %v", name, r.get("result.expiresAt"))
						}
					} else if r.status != 400 || !contains(r.codes(), want) {
						t.Errorf("%s: %d %s, want 400 %s", name, r.status, r.body, want)
					}
				}
			}
		}
		base := map[string]any{"type": "Dynamic", "amountType": "Controlled", "currency": "MDL", "description": "d", "expiresAt": e.exp(time.Hour), "amount": 15, "amountMin": 10, "amountMax": 20}
		bad := []struct {
			over map[string]any
			code string
		}{
			{map[string]any{"type": "Hybrid"}, payd.CodeQRType},
			{map[string]any{"type": "static"}, payd.CodeQRType},
			{map[string]any{"type": nil}, payd.CodeQRType},
			{map[string]any{"amountType": "Any"}, payd.CodeInvalidParameter},
			{map[string]any{"currency": "EUR"}, payd.CodeQRCurrency},
			{map[string]any{"expiresAt": nil}, payd.CodeExpiresAtWindow},
			{map[string]any{"expiresAt": e.exp(30 * time.Second)}, payd.CodeExpiresAtWindow},
			{map[string]any{"expiresAt": e.exp(61 * 24 * time.Hour)}, payd.CodeExpiresAtWindow},
			{map[string]any{"amountMin": 20, "amountMax": 10}, payd.CodeInvalidParameter},
			{map[string]any{"amountMin": 15, "amountMax": 15}, payd.CodeInvalidParameter},
			{map[string]any{"amount": 25}, payd.CodeInvalidParameter},
			{map[string]any{"amount": 5}, payd.CodeInvalidParameter},
			{map[string]any{"amountMax": 100000.01, "amount": 15}, payd.CodeInvalidParameter},
			{map[string]any{"amountMin": 0}, payd.CodeInvalidParameter},
			{map[string]any{"description": nil}, payd.CodeInvalidParameter},
			{map[string]any{"description": strings.Repeat("x", 501)}, payd.CodeInvalidParameter},
			{map[string]any{"callbackUrl": "not a url"}, payd.CodeInvalidParameter},
			{map[string]any{"terminalId": strings.Repeat("x", 101)}, payd.CodeInvalidParameter},
		}
		for _, b := range bad {
			body := map[string]any{}
			for k, v := range base {
				body[k] = v
			}
			for k, v := range b.over {
				if v == nil {
					delete(body, k)
				} else {
					body[k] = v
				}
			}
			if r := e.as("POST", "/v2/instant/qr", body); r.status != 400 || !contains(r.codes(), b.code) {
				t.Errorf("%v: %d %s, want %s", b.over, r.status, r.body, b.code)
			}
		}
		// Static ignores expiresAt; amounts at the edges pass.
		id := e.qr(map[string]any{"type": "Static", "amountType": "Fixed", "amount": 100000, "currency": "MDL", "description": "d", "expiresAt": "garbage-is-ignored-too"})
		if r := e.as("GET", "/v2/instant/qr/"+id, nil).wantOK(); r.get("result.expiresAt") != nil || r.str("result.status") != "Active" {
			t.Errorf("static record = %s", r.body)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestHybridAndExtensions(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		// Without an extension the QR is Active but not payable.
		r := e.as("POST", "/v2/mia/qr/hybrid", map[string]any{"amountType": "Fixed", "currency": "MDL", "terminalId": "T9"}).wantOK()
		id := r.str("result.qrId")
		if r.get("result.extensionId") != nil || r.str("result.url") != e.api.cfg.PublicURL+"/qr/"+id {
			t.Errorf("hybrid result = %s", r.body)
		}
		e.pay(id, 10).wantError(409, payd.CodeQRState)
		// Extension checks in order: fields, existence, type, amounts, state.
		ext := map[string]any{"amount": 10, "description": "Lunch", "orderId": "L1", "expiresAt": e.exp(time.Hour), "callbackUrl": "https://m.example/cb"}
		e.as("POST", "/v2/instant/qr/"+id+"/extension", map[string]any{"amount": 10, "description": "x"}).wantError(400, payd.CodeExpiresAtWindow)
		e.as("POST", "/v2/instant/qr/01a1fd40-c28b-7c3f-afd5-3131fe323793/extension", ext).wantError(404, payd.CodeQRNotFound)
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		e.as("POST", "/v2/instant/qr/"+static+"/extension", ext).wantError(409, payd.CodeQRTypeUnsupported)
		e.as("POST", "/v2/instant/qr/"+static+"/extension/cancel", nil).wantError(409, payd.CodeQRTypeUnsupported)
		e.as("POST", "/v2/instant/qr/"+id+"/extension", map[string]any{"amountMin": 1, "description": "x", "expiresAt": e.exp(time.Hour)}).wantError(400, payd.CodeAmountRequired)
		e1 := e.as("POST", "/v2/instant/qr/"+id+"/extension", ext).wantOK().str("result.extensionId")
		q := e.as("GET", "/v2/instant/qr/"+id, nil).wantOK()
		if q.str("result.extensionId") != e1 || q.str("result.orderId") != "L1" || q.num("result.amount") != 10 || q.str("result.description") != "Lunch" {
			t.Errorf("hybrid record = %s", q.body)
		}
		p := e.pay(id, 10).wantOK()
		if p.str("result.qrStatus") != "Active" || p.str("result.orderId") != "L1" {
			t.Errorf("hybrid payment = %s", p.body)
		}
		e.pay(id, 10).wantOK() // paid many times
		e.pay(id, 11).wantError(400, payd.CodeInvalidParameter)
		pays := e.as("GET", "/v2/instant/payments?count=10&offset=0&qrId="+id, nil).wantOK()
		if pays.num("result.totalCount") != 2 || pays.str("result.items.0.extensionId") != e1 || pays.str("result.items.0.terminalId") != "T9" {
			t.Errorf("hybrid payments = %s", pays.body)
		}
		// A new extension replaces the active one.
		ext["amount"], ext["orderId"] = 20, "L2"
		e.clock.Advance(time.Millisecond) // list order is by createdAt
		ext["expiresAt"] = e.exp(time.Hour)
		e2 := e.as("POST", "/v2/instant/qr/"+id+"/extension", ext).wantOK().str("result.extensionId")
		xs := e.as("GET", "/v2/instant/qr/extension?count=10&offset=0&qrId="+id, nil).wantOK()
		if xs.num("result.totalCount") != 2 || xs.str("result.items.0.status") != "Replaced" || xs.str("result.items.1.status") != "Active" {
			t.Errorf("extensions = %s", xs.body)
		}
		if r := e.as("GET", "/v2/instant/qr?count=10&offset=0&extensionId="+e1, nil); r.num("result.totalCount") != 1 {
			t.Errorf("QR by old extension id: %s", r.body)
		}
		// Cancelling the extension leaves the QR Active but unpayable, without extension fields.
		if r := e.as("POST", "/v2/instant/qr/"+id+"/extension/cancel", "").wantOK(); r.str("result.extensionId") != e2 {
			t.Errorf("extension cancel = %s", r.body)
		}
		q = e.as("GET", "/v2/instant/qr/"+id, nil).wantOK()
		if q.str("result.status") != "Active" || q.get("result.extensionId") != nil || q.get("result.amount") != nil {
			t.Errorf("after extension cancel = %s", q.body)
		}
		e.pay(id, 20).wantError(409, payd.CodeQRState)
		e.as("POST", "/v2/instant/qr/"+id+"/extension/cancel", nil).wantError(409, payd.CodeQRState)
		// Extension expiry makes the QR Expired; a new extension reactivates it.
		e3 := e.as("POST", "/v2/instant/qr/"+id+"/extension", ext).wantOK().str("result.extensionId")
		e.clock.Advance(time.Hour)
		q = e.as("GET", "/v2/instant/qr/"+id, nil).wantOK()
		if q.str("result.status") != "Expired" {
			t.Errorf("after extension expiry = %s", q.body)
		}
		if x := e.as("GET", "/v2/instant/qr/extension?count=10&offset=0&extensionId="+e3, nil); x.str("result.items.0.status") != "Expired" {
			t.Errorf("expired extension = %s", x.body)
		}
		e.pay(id, 20).wantError(409, payd.CodeQRState)
		ext["expiresAt"] = e.exp(time.Hour)
		e.as("POST", "/v2/instant/qr/"+id+"/extension", ext).wantOK()
		e.pay(id, 20).wantOK()
		// Cancel: the active extension is cancelled with it; payments stay refundable.
		e.as("POST", "/v2/instant/qr/"+id+"/cancel", map[string]any{"reason": "closed"}).wantOK()
		e.as("POST", "/v2/instant/qr/"+id+"/cancel", map[string]any{"reason": "closed"}).wantError(409, payd.CodeQRAlreadyCancelled)
		e.as("POST", "/v2/instant/qr/"+id+"/extension", ext).wantError(409, payd.CodeQRState)
		if x := e.as("GET", "/v2/instant/qr/extension?count=10&offset=0&qrId="+id+"&status=cancelled", nil); x.num("result.totalCount") != 2 {
			t.Errorf("cancelled extensions = %s", x.body)
		}
		e.as("POST", "/v2/payments/"+p.str("result.payId")+"/refund", map[string]any{"reason": "r"}).wantOK()
	})
}

// TestQRStatusTransitions walks the rows of spec §2.11.
func TestQRStatusTransitions(t *testing.T) {
	cfg := testConfig()
	forEachEngine(t, cfg, func(t *testing.T, e *env) {
		status := func(id string) string { return e.as("GET", "/v2/instant/qr/"+id, nil).wantOK().str("result.status") }
		dyn := func() string {
			return e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 5, "currency": "MDL", "description": "d", "expiresAt": e.exp(time.Hour), "callbackUrl": "https://m.example/cb"})
		}
		static := func() string {
			return e.qr(map[string]any{"type": "Static", "amountType": "Controlled", "amount": 5, "amountMin": 1, "amountMax": 9, "currency": "MDL", "description": "d"})
		}
		// Dynamic: Active → Paid, and only once.
		d := dyn()
		if r := e.pay(d, 5).wantOK(); r.str("result.qrStatus") != "Paid" || r.str("result.signatureKey") != e.merchant.SignatureKey {
			t.Errorf("dynamic pay = %s", r.body)
		}
		e.pay(d, 5).wantError(409, payd.CodeQRState)
		e.as("POST", "/v2/instant/qr/"+d+"/cancel", map[string]any{"reason": "x"}).wantError(409, payd.CodeQRState)
		cbs, _ := e.store.Callbacks(t.Context(), payd.CallbackPending, 10)
		if len(cbs) != 1 || cbs[0].Event != payd.EventQRPayment || !strings.Contains(string(cbs[0].Body), `"qrStatus":"Paid"`) || strings.Contains(string(cbs[0].Body), `"extensionId"`) {
			t.Errorf("QR callback = %+v", cbs)
		}
		// Dynamic: Active → Expired at expiresAt; cannot be paid or cancelled.
		d2 := dyn()
		e.clock.Advance(time.Hour)
		if s := status(d2); s != "Expired" {
			t.Errorf("dynamic after expiresAt = %s", s)
		}
		e.pay(d2, 5).wantError(409, payd.CodeQRState)
		e.as("POST", "/v2/instant/qr/"+d2+"/cancel", map[string]any{"reason": "x"}).wantError(409, payd.CodeQRState)
		// Static/Dynamic cancel.
		d3 := dyn()
		e.as("POST", "/v2/instant/qr/"+d3+"/cancel", map[string]any{}).wantError(400, payd.CodeInvalidParameter)
		if r := e.as("POST", "/v2/instant/qr/"+d3+"/cancel", map[string]any{"reason": "x"}).wantOK(); r.str("result.status") != "Cancelled" || r.str("result.qrId") != d3 {
			t.Errorf("cancel = %s", r.body)
		}
		e.pay(d3, 5).wantError(409, payd.CodeQRState)
		// Static cancel; Hybrid cancel from Expired (its extension expired).
		sc := static()
		e.as("POST", "/v2/instant/qr/"+sc+"/cancel", map[string]any{"reason": "x"}).wantOK()
		e.pay(sc, 5).wantError(409, payd.CodeQRState)
		he := e.as("POST", "/v2/instant/qr/hybrid", map[string]any{"amountType": "Fixed", "currency": "MDL",
			"extension": map[string]any{"amount": 3, "description": "d", "expiresAt": e.exp(2 * time.Minute)}}).wantOK().str("result.qrId")
		e.clock.Advance(2 * time.Minute)
		if st := status(he); st != "Expired" {
			t.Errorf("hybrid after its extension expired = %s", st)
		}
		e.as("POST", "/v2/instant/qr/"+he+"/cancel", map[string]any{"reason": "x"}).wantOK()
		if st := status(he); st != "Cancelled" {
			t.Errorf("cancelled expired hybrid = %s", st)
		}
		// Static: paid many times within its range; Inactive after 30 idle days, counted from the last payment.
		s := static()
		e.pay(s, 1).wantOK()
		e.pay(s, 9).wantOK()
		e.pay(s, 9.01).wantError(400, payd.CodeInvalidParameter)
		e.pay(s, 0.99).wantError(400, payd.CodeInvalidParameter)
		e.clock.Advance(29 * 24 * time.Hour)
		e.pay(s, 5).wantOK()
		e.clock.Advance(29 * 24 * time.Hour)
		if st := status(s); st != "Active" {
			t.Errorf("static 29 days after its last payment = %s", st)
		}
		e.clock.Advance(24 * time.Hour)
		r := e.as("GET", "/v2/instant/qr/"+s, nil).wantOK()
		if r.str("result.status") != "Inactive" {
			t.Errorf("static after 30 idle days = %s", r.body)
		}
		e.pay(s, 5).wantError(409, payd.CodeQRState)
		e.as("POST", "/v2/instant/qr/"+s+"/cancel", map[string]any{"reason": "x"}).wantError(409, payd.CodeQRState)
		// Hybrid: Inactive after idleness; the active extension expires with it.
		h := e.as("POST", "/v2/instant/qr/hybrid", map[string]any{"amountType": "Free", "currency": "MDL",
			"extension": map[string]any{"description": "d", "expiresAt": e.exp(59 * 24 * time.Hour)}}).wantOK()
		hid := h.str("result.qrId")
		e.pay(hid, 42.42).wantOK()
		e.clock.Advance(30 * 24 * time.Hour)
		if st := status(hid); st != "Inactive" {
			t.Errorf("hybrid after idleness = %s", st)
		}
		if x := e.as("GET", "/v2/instant/qr/extension?count=1&offset=0&qrId="+hid, nil); x.str("result.items.0.status") != "Expired" {
			t.Errorf("extension of an inactive hybrid = %s", x.body)
		}
		// The expiry loop writes what reads already show, and the lists agree.
		// (The inactive hybrid's extension too: Expired, updated at the QR's idle deadline.)
		lists := []string{"/v2/instant/qr?count=100&offset=0", "/v2/instant/qr/extension?count=100&offset=0&qrId=" + hid}
		var before []*resp
		for _, l := range lists {
			before = append(before, e.as("GET", l, nil).wantOK())
		}
		ex := &worker.Expiry{Store: e.store, Clock: e.clock}
		if n, err := ex.RunOnce(t.Context()); err != nil || n == 0 {
			t.Fatalf("expiry loop = %d, %v", n, err)
		}
		for i, l := range lists {
			if after := e.as("GET", l, nil).wantOK(); string(before[i].body) != string(after.body) {
				t.Errorf("%s: written state differs from the lazy view:\n%s\n%s", l, before[i].body, after.body)
			}
		}
		for st, want := range map[string]int{"Paid": 1, "Expired": 1, "Cancelled": 3, "Inactive": 2, "active": 0} {
			if r := e.as("GET", "/v2/instant/qr?count=100&offset=0&status="+st, nil); int(r.num("result.totalCount")) != want {
				t.Errorf("status=%s: %v, want %d", st, r.num("result.totalCount"), want)
			}
		}
		e.as("GET", "/v2/instant/qr?count=1&offset=0&status=Gone", nil).wantError(400, payd.CodeQRStatus)
		e.as("GET", "/v2/instant/qr?count=1&offset=0&type=Round", nil).wantError(400, payd.CodeQRType)
		e.as("GET", "/v2/instant/qr?count=1&offset=0&sortBy=amount", nil).wantError(400, payd.CodeQRSorting)
		e.as("GET", "/v2/instant/qr/extension?count=1&offset=0&status=Gone", nil).wantError(400, payd.CodeQRStatus)
		if r := e.as("GET", "/v2/instant/qr?count=100&offset=0&type=dynamic&sortBy=status&order=desc", nil).wantOK(); r.num("result.totalCount") != 3 || r.str("result.items.0.status") != "Paid" {
			t.Errorf("dynamic by status desc = %s", r.body)
		}
	})
}

func TestTestPayChecks(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 5, "currency": "MDL", "description": "d", "expiresAt": e.exp(time.Hour)})
		good := map[string]any{"qrId": id, "amount": 5, "currency": "MDL", "iban": payd.TestIBAN, "payerName": "P"}
		for _, c := range []struct {
			over   map[string]any
			status int
			code   string
		}{
			{map[string]any{"qrId": "x"}, 400, payd.CodeInvalidParameter},
			{map[string]any{"iban": "md88"}, 400, payd.CodeInvalidParameter},
			{map[string]any{"currency": "USD"}, 400, payd.CodeQRCurrency},
			{map[string]any{"payerName": strings.Repeat("p", 201)}, 400, payd.CodeInvalidParameter},
			{map[string]any{"amount": "5"}, 400, payd.CodeInvalidParameter},
			{map[string]any{"qrId": "01a1fd40-c28b-7c3f-afd5-3131fe323793"}, 404, payd.CodeQRNotFound},
			{map[string]any{"amount": 6}, 400, payd.CodeInvalidParameter},
		} {
			body := map[string]any{}
			for k, v := range good {
				body[k] = v
			}
			for k, v := range c.over {
				body[k] = v
			}
			e.as("POST", "/v2/instant/test-pay", body).wantError(c.status, c.code)
		}
		_, _, other := e.newMerchant(0)
		e.call("POST", "/v2/instant/test-pay", good, other).wantError(404, payd.CodeQRNotFound)
		e.call("GET", "/v2/instant/qr/"+id, nil, other).wantError(404, payd.CodeQRNotFound)
		e.call("POST", "/v2/instant/qr/"+id+"/cancel", map[string]any{"reason": "x"}, other).wantError(404, payd.CodeQRNotFound)
		// Concurrent payments of one Dynamic QR: exactly one succeeds.
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.as("POST", "/v2/instant/test-pay", good)
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if codes[200] != 1 || codes[409] != 9 {
			t.Errorf("concurrent test-pays: %v", codes)
		}
	})
}

func TestQRPaymentsAndRefunds(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		m, _, tok := e.newMerchant(100)
		e.merchant, e.token = m, tok
		id := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Donations", "terminalId": "T1"})
		payID := e.pay(id, 50).wantOK().str("result.payId")
		e.clock.Advance(time.Second)
		e.pay(id, 10).wantOK()
		rec := e.as("GET", "/v2/instant/payments/"+payID, nil).wantOK()
		if rec.num("result.commission") != 0.5 || !strings.HasPrefix(rec.str("result.referenceId"), "MIA") || len(rec.str("result.referenceId")) != 15 ||
			rec.str("result.status") != "Executed" || rec.str("result.description") != "Donations" || rec.get("result.extensionId") != nil {
			t.Errorf("QR payment = %s", rec.body)
		}
		// Partial, then the remainder; a third is refused.
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 60, "reason": "r"}).wantError(409, payd.CodeRefundTooLarge)
		tooMuch := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 50.01, "reason": "r"})
		if tooMuch.get("errors.0.errorArgs.refundableAmount") != "50.00" || tooMuch.get("errors.0.errorArgs.amount") != "50.01" {
			t.Errorf("14016 args = %s", tooMuch.body)
		}
		r1 := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 25, "reason": "r"}).wantOK().str("result.refundId")
		r2 := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "rest"}).wantOK().str("result.refundId")
		e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "again"}).wantError(409, payd.CodeAlreadyRefunded)
		if got := e.as("GET", "/v2/payments/refunds/"+r2, nil).wantOK(); got.num("result.amount") != 25 || got.str("result.refundType") != "Partial" {
			t.Errorf("remainder refund = %s", got.body)
		}
		proc := &sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}
		proc.RunOnce(t.Context())
		e.clock.Advance(time.Second)
		if n, _ := proc.RunOnce(t.Context()); n != 2 {
			t.Errorf("settled %d refunds", n)
		}
		rec = e.as("GET", "/v2/instant/payments/"+payID, nil).wantOK()
		if rec.str("result.status") != "Refunded" || rec.str("result.refundedAt") != payd.FormatTime(e.clock.Now()) {
			t.Errorf("refunded QR payment = %s", rec.body)
		}
		if p := e.as("GET", "/v2/payments/"+payID, nil).wantOK(); p.str("result.status") != "Refunded" || p.str("result.paymentIntentId") != id || p.str("result.paymentMethod") != "MiaQr" {
			t.Errorf("payments-area record = %s", p.body)
		}
		_ = r1
		if s := e.as("GET", "/v2/instant/qr/"+id, nil).str("result.status"); s != "Active" {
			t.Errorf("refunds changed the QR: %s", s)
		}
		// QR-area list filters.
		list := func(q string) int {
			return int(e.as("GET", "/v2/instant/payments?count=10&offset=0&"+q, nil).wantOK().num("result.totalCount"))
		}
		for q, want := range map[string]int{
			"": 2, "status=Refunded": 1, "status=executed": 1, "qrId=" + id: 2, "payId=" + payID: 1, "amountFrom=20": 1,
			"amountTo=10": 1, "payerName=test%20qr": 2, "description=donation": 2, "terminalId=T1": 2, "payerIban=" + payd.TestIBAN: 2,
			"referenceId=" + rec.str("result.referenceId"): 1, "executedAtFrom=" + url.QueryEscape(payd.FormatTime(e.clock.Now().Add(-time.Second))): 1,
		} {
			if got := list(q); got != want {
				t.Errorf("payments?%s: %d, want %d", q, got, want)
			}
		}
		e.as("GET", "/v2/instant/payments?count=10&offset=0&status=Failed", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/instant/payments?count=10&offset=0&sortBy=payerName", nil).wantError(400, payd.CodeQRSorting)
		if r := e.as("GET", "/v2/instant/payments?count=10&offset=0&sortBy=amount&order=desc", nil); r.num("result.items.0.amount") != 50 {
			t.Errorf("sorted by amount desc = %s", r.body)
		}
		// An RTP payment is not a QR payment.
		rtp := e.createRTP(nil)
		rtpPay := e.as("POST", "/v2/rtp/"+rtp+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		e.as("GET", "/v2/instant/payments/"+rtpPay, nil).wantError(404, payd.CodePaymentNotFound)
	})
}

func TestConcurrentPartialRefundsNeverExceedThePayment(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		payID := e.pay(id, 10).wantOK().str("result.payId")
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for i := 0; i < 25; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"amount": 1, "reason": "r"})
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		p := e.as("GET", "/v2/payments/"+payID, nil).wantOK()
		if codes[200] != 10 || codes[409] != 15 || p.num("result.requestedRefundAmount") != 10 || p.num("result.refundableAmount") != 0 {
			t.Errorf("codes %v, payment %s", codes, p.body)
		}
	})
}

func TestQRImagesDecode(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		b := e.browser()
		for _, size := range []string{"", "?size=64", "?size=5000", "?size=300"} {
			status, body, hdr := e.page(b, "GET", "/qr/"+id+".png"+size, nil, nil)
			if status != 200 || hdr.Get("Content-Type") != "image/png" {
				t.Fatalf("png%s: %d %s", size, status, hdr.Get("Content-Type"))
			}
			img, err := png.Decode(bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"": 256, "?size=64": 64, "?size=5000": 1024, "?size=300": 300}[size]
			if img.Bounds().Dx() != want {
				t.Errorf("png%s width %d, want %d", size, img.Bounds().Dx(), want)
			}
			bmp, _ := gozxing.NewBinaryBitmapFromImage(img)
			// Our images are pure codes (quiet zone, whole-pixel modules), so
			// decode them as such: gozxing's finder-pattern search misreads
			// about 1% of arbitrary codes at some scales, while pure decoding
			// read 3,000 of 3,000 generated ones.
			pure := map[gozxing.DecodeHintType]interface{}{gozxing.DecodeHintType_PURE_BARCODE: true}
			res, err := gozxingqr.NewQRCodeReader().Decode(bmp, pure)
			if err != nil || res.GetText() != e.api.cfg.PublicURL+"/qr/"+id {
				t.Errorf("png%s decodes to %v, %v", size, res, err)
			}
		}
		status, body, hdr := e.page(b, "GET", "/qr/"+id+".svg", nil, nil)
		if status != 200 || hdr.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") {
			t.Errorf("svg: %d %s", status, hdr.Get("Content-Type"))
		}
		for _, p := range []string{"/qr/01a1fd40-c28b-7c3f-afd5-3131fe323793.png", "/qr/nope.png", "/qr/" + id + ".gif"} {
			if status, _, hdr := e.page(b, "GET", p, nil, nil); status != 404 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
				t.Errorf("%s: %d %s", p, status, hdr.Get("Content-Type"))
			}
		}
	})
}

func TestQRPage(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		id := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 7.5, "currency": "MDL", "description": "Tea", "expiresAt": e.exp(time.Hour), "redirectUrl": "https://shop.example/ok"})
		b := e.browser()
		for lang, want := range map[string]string{"ro": "Plată prin QR", "ru": "Оплата по QR", "en": "QR payment"} {
			status, body, _ := e.page(b, "GET", "/qr/"+id+"?lang="+lang, nil, nil)
			if status != 200 || !strings.Contains(body, want) || !strings.Contains(body, "7.50 MDL") || !strings.Contains(body, "Tea") || !strings.Contains(body, `id="pay-form"`) {
				t.Errorf("%s page: %d\n%s", lang, status, body)
			}
		}
		_, body, _ := e.page(b, "GET", "/qr/"+id, nil, nil)
		csrf := csrfRE.FindStringSubmatch(body)[1]
		form := url.Values{"csrf": {csrf}, "amount": {"7.49"}, "payerName": {"Ion"}, "iban": {payd.TestIBAN}}
		if status, body, _ := e.page(b, "POST", "/qr/"+id+"/pay", form, nil); status != 400 || !strings.Contains(body, `value="7.49"`) {
			t.Errorf("wrong amount: %d", status)
		}
		form.Set("iban", "bad")
		if status, _, _ := e.page(b, "POST", "/qr/"+id+"/pay", form, nil); status != 400 {
			t.Errorf("bad iban: %d", status)
		}
		form.Set("iban", payd.TestIBAN)
		form.Set("amount", "7.50")
		status, _, hdr := e.page(b, "POST", "/qr/"+id+"/pay", form, nil)
		if status != 303 || hdr.Get("Location") != "https://shop.example/ok" {
			t.Errorf("pay: %d %s", status, hdr.Get("Location"))
		}
		if s := e.as("GET", "/v2/instant/qr/"+id, nil).str("result.status"); s != "Paid" {
			t.Errorf("after the page paid: %s", s)
		}
		if r := e.as("GET", "/v2/instant/payments?count=5&offset=0&qrId="+id, nil); r.str("result.items.0.payerName") != "Ion" {
			t.Errorf("page payment = %s", r.body)
		}
		if status, _, _ := e.page(b, "POST", "/qr/"+id+"/pay", form, nil); status != 409 {
			t.Errorf("second page payment: %d", status)
		}
		if status, _, _ := e.page(b, "POST", "/qr/"+id+"/pay", form, map[string]string{"Sec-Fetch-Site": "cross-site"}); status != 403 {
			t.Errorf("cross-site pay: %d", status)
		}
	})
}

func TestQRList(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		a := e.qr(map[string]any{"type": "Static", "amountType": "Fixed", "amount": 30, "currency": "MDL", "description": "Blue mug", "orderId": "b", "terminalId": "T1"})
		e.clock.Advance(time.Second)
		b := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 10, "currency": "MDL", "description": "red cup", "orderId": "a", "expiresAt": e.exp(2 * time.Hour)})
		e.clock.Advance(time.Second)
		c := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tip jar"})
		_, _, other := e.newMerchant(0)
		e.call("POST", "/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "x"}, other).wantOK()
		check := func(q string, want ...string) {
			t.Helper()
			r := e.as("GET", "/v2/instant/qr?"+q, nil).wantOK()
			var got []string
			items, _ := r.get("result.items").([]any)
			for _, it := range items {
				got = append(got, it.(map[string]any)["qrId"].(string))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %v, want %v", q, got, want)
			}
		}
		check("count=10&offset=0", a, b, c)
		check("count=10&offset=0&order=desc", c, b, a)
		check("count=1&offset=1", b)
		check("count=10&offset=0&sortBy=orderId", c, b, a)
		check("count=10&offset=0&sortBy=OrderId&order=desc", c, a, b)
		check("count=10&offset=0&sortBy=type", b, a, c) // byte order: Dynamic < Static
		check("count=10&offset=0&sortBy=amountType", a, b, c)
		check("count=10&offset=0&sortBy=expiresAt", a, c, b)
		check("count=10&offset=0&amountFrom=20", a)
		check("count=10&offset=0&amountTo=20", b)
		check("count=10&offset=0&description=CU", b)
		check("count=10&offset=0&terminalId=T1", a)
		check("count=10&offset=0&orderId=a", b)
		check("count=10&offset=0&type=Static", a, c)
		check("count=10&offset=0&amountType=free", c)
		check("count=10&offset=0&qrId="+b, b)
		check("count=10&offset=0&createdAtFrom="+url.QueryEscape(payd.FormatTime(e.clock.Now().Add(-time.Second))), b, c)
		check("count=10&offset=0&expiresAtTo="+url.QueryEscape(e.exp(3*time.Hour)), b)
		check("offset=0", a, b, c) // count and offset are optional
		e.as("GET", "/v2/instant/qr?count=0", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/instant/qr?count=1&offset=0&amountType=Some", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/instant/qr?count=1&offset=0&order=sideways", nil).wantError(400, payd.CodeQRSorting)
		e.as("GET", "/v2/mia/qr/extension?count=1&offset=0", nil).wantOK()
		e.as("GET", "/v2/instant/qr/extension?count=1&offset=0&sortBy=type", nil).wantError(400, payd.CodeQRSorting)
	})
}
