package httpapi

import (
	"sync"
	"testing"
	"time"
)

// parallel runs f n times at once and counts the statuses.
func parallel(n int, f func(i int) *resp) map[int]int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := f(i)
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

func TestConcurrency(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		// 50 parallel test-accepts on one RTP: exactly one payment.
		id := e.createRTP(map[string]any{"callbackUrl": "https://m.example/cb"})
		codes := parallel(50, func(int) *resp {
			return e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"})
		})
		if codes[200] != 1 || codes[409] != 49 {
			t.Errorf("parallel accepts: %v", codes)
		}
		if r := e.as("GET", "/v2/payments?paymentIntentId="+id, nil); r.num("result.totalCount") != 1 {
			t.Errorf("payments of the RTP: %s", r.body)
		}

		// Cancel racing accept, many times over: one wins, and the state agrees with who won.
		for i := 0; i < 10; i++ {
			id := e.createRTP(nil)
			var accept, cancel *resp
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				accept = e.as("POST", "/v2/rtp/"+id+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"})
			}()
			go func() {
				defer wg.Done()
				cancel = e.as("POST", "/v2/rtp/"+id+"/cancel", map[string]any{"reason": "race"})
			}()
			wg.Wait()
			status := e.as("GET", "/v2/rtp/"+id, nil).str("result.status")
			pays := e.as("GET", "/v2/payments?paymentIntentId="+id, nil).num("result.totalCount")
			switch {
			case accept.status == 200 && cancel.status == 409 && status == "Accepted" && pays == 1:
			case cancel.status == 200 && accept.status == 409 && status == "Cancelled" && pays == 0:
			default:
				t.Errorf("accept %d, cancel %d, status %s, payments %v", accept.status, cancel.status, status, pays)
			}
		}

		// 50 parallel partial refunds of 3.00 on 100.00: exactly 33 succeed.
		qr := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "d"})
		pay := e.pay(qr, 100).wantOK().str("result.payId")
		codes = parallel(50, func(int) *resp {
			return e.as("POST", "/v2/payments/"+pay+"/refund", map[string]any{"amount": 3, "reason": "r"})
		})
		p := e.as("GET", "/v2/payments/"+pay, nil).wantOK()
		if codes[200] != 33 || codes[409] != 17 || p.num("result.requestedRefundAmount") != 99 || p.num("result.refundableAmount") != 1 {
			t.Errorf("parallel refunds: %v, payment %s", codes, p.body)
		}

		// 50 parallel test-pays of one Dynamic QR: one payment.
		dyn := e.qr(map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 5, "currency": "MDL", "description": "d", "expiresAt": e.exp(time.Hour)})
		codes = parallel(50, func(int) *resp { return e.pay(dyn, 5) })
		if codes[200] != 1 || codes[409] != 49 {
			t.Errorf("parallel test-pays: %v", codes)
		}
		if r := e.as("GET", "/v2/instant/payments?count=10&offset=0&qrId="+dyn, nil); r.num("result.totalCount") != 1 {
			t.Errorf("payments of the Dynamic QR: %s", r.body)
		}
	})
}
