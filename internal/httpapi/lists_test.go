package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestListPages: every list takes count and offset as optional. Without
// count the paged lists answer a page of 10; the checkout and payment
// lists answer every match (the seed's rule), streamed a page at a time,
// in order and complete past several stream pages.
func TestListPages(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "tips", "callbackUrl": "https://shop.example/cb"})
		hybrid := e.as("POST", "/v2/instant/qr/hybrid", map[string]any{"amountType": "Free", "currency": "MDL"}).wantOK().str("result.qrId")
		for i := 0; i < 12; i++ {
			e.createRTP(nil)
			e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "q" + strconv.Itoa(i)})
			e.as("POST", "/v2/instant/qr/"+hybrid+"/extension", map[string]any{"expiresAt": e.exp(time.Hour), "description": "x"}).wantOK()
			e.pay(static, float64(i+1)).wantOK()
		}
		for _, path := range []string{"/v2/rtp", "/v2/instant/qr", "/v2/mia/qr", "/v2/instant/qr/extension", "/v2/instant/payments",
			"/v2/mia/payments", "/v2/callbacks"} {
			r := e.as("GET", path, nil).wantOK()
			if n := len(r.get("result.items").([]any)); n != defaultPage || r.num("result.totalCount") < 12 {
				t.Errorf("%s without count: %d items of %v", path, n, r.num("result.totalCount"))
			}
			if n := len(e.as("GET", path+"?count=12&offset=0", nil).wantOK().get("result.items").([]any)); n != 12 {
				t.Errorf("%s?count=12: %d items", path, n)
			}
			e.as("GET", path+"?count=1001", nil).wantError(400, payd.CodeInvalidParameter)
			e.as("GET", path+"?offset=-1", nil).wantError(400, payd.CodeInvalidParameter)
		}
		// Every match, across several stream pages.
		for i := 0; i < streamPage+37; i++ {
			co := payd.NewCheckout(payd.CheckoutInput{Amount: ptr(payd.Money(100 + i)), Currency: "MDL", Language: "ro"}, e.merchant.ID, time.Hour, e.clock.Now().Add(time.Duration(i)*time.Millisecond))
			if err := e.store.CreateCheckout(t.Context(), co); err != nil {
				t.Fatal(err)
			}
		}
		all := e.as("GET", "/v2/checkouts", nil).wantOK()
		items := all.get("result.items").([]any)
		if len(items) != streamPage+37 || all.num("result.count") != float64(len(items)) || all.num("result.totalCount") != float64(len(items)) {
			t.Fatalf("checkouts without count: %d items, count %v, totalCount %v", len(items), all.num("result.count"), all.num("result.totalCount"))
		}
		for i, it := range items {
			if amount := it.(map[string]any)["amount"].(float64); amount != float64(100+i)/100 {
				t.Fatalf("item %d has amount %v: the stream is out of order or has a gap", i, amount)
			}
		}
		from := e.as("GET", "/v2/checkouts?offset=230&order=desc", nil).wantOK()
		if n := len(from.get("result.items").([]any)); n != 7 || from.num("result.totalCount") != streamPage+37 {
			t.Errorf("checkouts from offset 230, newest first: %d items of %v", n, from.num("result.totalCount"))
		}
		if n := len(e.as("GET", "/v2/checkouts?count=5", nil).wantOK().get("result.items").([]any)); n != 5 {
			t.Errorf("checkouts?count=5: %d", n)
		}
		pays := e.as("GET", "/v2/payments", nil).wantOK()
		if n := len(pays.get("result.items").([]any)); n != 12 || pays.num("result.count") != 12 || pays.num("result.totalCount") != 12 {
			t.Errorf("payments without count: %s", pays.body)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// BenchmarkListWithoutCount is the peak heap of GET /v2/checkouts without
// count (every match, streamed) at two sizes of the merchant's list, on
// SQLite: it stays flat as the list grows, where building every record
// first grew with it (one request took 51 to 116 MB at 10,000 checkouts).
//
//	go test -run '^$' -bench ListWithoutCount -benchtime 3x ./internal/httpapi/
func BenchmarkListWithoutCount(b *testing.B) {
	for _, rows := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("checkouts=%d", rows), func(b *testing.B) {
			s, _ := storetest.SQLite(b)
			e := newEnv(b, s, testConfig())
			seedCheckouts(b, s, e.merchant.ID, rows, e.clock.Now())
			handler := e.api
			old := debug.SetGCPercent(10) // garbage goes at once: the peak is what is live
			defer debug.SetGCPercent(old)
			var peak atomic.Uint64
			stop := make(chan struct{})
			go func() {
				var m runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapAlloc > peak.Load() {
						peak.Store(m.HeapAlloc)
					}
				}
			}()
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			peak.Store(base.HeapAlloc)
			for b.Loop() {
				req := httptest.NewRequest("GET", "/v2/checkouts", nil).WithContext(context.Background())
				req.Header.Set("Authorization", "Bearer "+e.token)
				w := &countingWriter{h: http.Header{}}
				handler.ServeHTTP(w, req)
				if w.status != 200 || w.n < int64(rows)*300 {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
			}
			close(stop)
			b.ReportMetric(float64(peak.Load()-base.HeapAlloc)/(1<<20), "peak-heap-MB")
		})
	}
}

func seedCheckouts(tb testing.TB, s *sqlstore.Store, merchantID string, n int, now time.Time) {
	tb.Helper()
	for i := 0; i < n; i++ {
		co := payd.NewCheckout(payd.CheckoutInput{Amount: ptr(payd.Money(100 + i)), Currency: "MDL", Language: "ro",
			Order: &payd.Order{ID: "ORD-" + strconv.Itoa(i), Description: "a checkout of the benchmark", Items: []payd.OrderItem{}}},
			merchantID, time.Hour, now.Add(time.Duration(i)*time.Millisecond))
		if err := s.CreateCheckout(context.Background(), co); err != nil {
			tb.Fatal(err)
		}
	}
}

// countingWriter keeps nothing of a response but its status and length.
type countingWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *countingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(200)
	w.n += int64(len(b))
	return len(b), nil
}

// TestUnknownListFiltersRefused: a parameter a list does not have is a
// filter payd would otherwise ignore, answering every record as if it
// matched (qrId on /v2/payments): it is refused with the area's invalid
// parameter code, naming it; the list's own parameters pass.
func TestUnknownListFiltersRefused(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		for path, code := range map[string]string{
			"/v2/payments?qrId=019ca8d7-2d00-7905-9513-65be639a6d6f": payd.CodeInvalidParameter,
			"/v2/rtp?count=10&offset=0&statuss=Pending":              payd.CodeInvalidParameter,
			"/v2/instant/qr?count=10&offset=0&foo=1":                 payd.CodeInvalidParameter,
			"/v2/instant/payments?count=10&offset=0&rtpId=x":         payd.CodeInvalidParameter,
			"/v2/checkouts?orderID=42":                               payd.CodeCheckoutFormat,
			"/v2/callbacks?evnt=rtp.accepted":                        payd.CodeInvalidParameter,
		} {
			r := e.as("GET", path, nil).wantError(400, code)
			name := path[strings.LastIndex(path, "&")+1:]
			name = name[strings.LastIndex(name, "?")+1:]
			name = name[:strings.Index(name, "=")]
			if got := paramsOf(r); len(got) != 1 || got[0] != name {
				t.Errorf("GET %s: parameters %v, want [%s]", path, got, name)
			}
		}
		for _, path := range []string{"/v2/payments?count=5&offset=0&sortBy=executedAt&order=desc", "/v2/rtp?count=10&offset=0&status=Pending",
			"/v2/checkouts?count=5&offset=0&orderId=42", "/v2/instant/qr?count=10&offset=0", "/v2/callbacks"} {
			e.as("GET", path, nil).wantOK()
		}
	})
}
