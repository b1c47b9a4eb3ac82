package maibecomm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"payd"
)

// TestDeliverOutcomes: a card refund's order against an acquirer on
// loopback HTTP. Its own 4xx rejects the refund for good; an acquirer that
// does not answer, answers 5xx or 429, or gives no token, takes nothing
// now (payd.ErrRailsUnavailable), and a token's 4xx is never read as the
// refund's answer.
func TestDeliverOutcomes(t *testing.T) {
	order := &payd.RailsOrder{ID: "o1", Kind: payd.OrderCardRefund, ObjectID: "rf1",
		Data: payd.OrderData{OriginalRef: "pay-1", Amount: 500, OriginalTotal: 1000}}
	answer := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
	const tokenOK = `{"ok":true,"result":{"accessToken":"a","expiresIn":300,"refreshToken":"r","refreshExpiresIn":3000}}`
	const already = `{"ok":false,"errors":[{"errorCode":"13116","errorMessage":"Payment is already refunded"}]}`
	for _, c := range []struct {
		name          string
		token, refund int
		refundBody    string
		refunded      string // pay-info's refundAmount; "" for none
		want          string // "accepted", "rejected", "manual" or "unavailable"
	}{
		{"refunded", 200, 200, `{"ok":true,"result":{"status":"OK"}}`, "", "accepted"},
		// "Already refunded": what the acquirer refunded decides.
		{"already refunded, this amount", 200, 400, already, "5.00", "accepted"},
		{"already refunded, another amount", 200, 400, already, "3.00", "manual"},
		{"already refunded, no amount said", 200, 400, already, "", "manual"},
		{"reversed, this amount", 200, 200, `{"ok":true,"result":{"status":"REVERSED"}}`, "5.00", "accepted"},
		{"reversed, another amount", 200, 200, `{"ok":true,"result":{"status":"REVERSED"}}`, "10.00", "manual"},
		{"refused", 200, 400, `{"ok":false,"errors":[{"errorCode":"12001","errorMessage":"Invalid amount"}]}`, "", "rejected"},
		{"acquirer down", 200, 503, `{"ok":false,"errors":[{"errorCode":"500","errorMessage":"Unavailable"}]}`, "", "unavailable"},
		{"too many requests", 200, 429, `{"ok":false,"errors":[{"errorCode":"429","errorMessage":"Slow down"}]}`, "", "unavailable"},
		{"no token", 400, 200, `{"ok":true,"result":{"status":"OK"}}`, "", "unavailable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			refunds := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/generate-token":
					if c.token != 200 {
						answer(w, c.token, `{"ok":false,"errors":[{"errorCode":"11001","errorMessage":"Invalid project credentials"}]}`)
						return
					}
					answer(w, 200, tokenOK)
				case "/v1/refund":
					refunds++
					answer(w, c.refund, c.refundBody)
				case "/v1/pay-info/pay-1":
					amount := ""
					if c.refunded != "" {
						amount = `,"refundAmount":` + c.refunded
					}
					answer(w, 200, `{"ok":true,"result":{"payId":"pay-1","status":"REVERSED","amount":10.00`+amount+`}}`)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			cl := &Client{URL: srv.URL, ProjectID: "p", ProjectSecret: "s", Clock: payd.NewFakeClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}
			taken, err := cl.Deliver(context.Background(), order)
			got := "unavailable"
			switch {
			case err == nil && taken.Refund == payd.RefundAccepted:
				got = "accepted"
			case err == nil && taken.Refund == payd.RefundRejected:
				got = "rejected"
			case err == nil && taken.Refund == payd.RefundManual:
				got = "manual"
			case err == nil || !errors.Is(err, payd.ErrRailsUnavailable):
				got = fmt.Sprintf("%+v, %v", taken, err)
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if c.token != 200 && refunds != 0 {
				t.Errorf("the refund was asked without a token")
			}
		})
	}
	t.Run("nothing listening", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		cl := &Client{URL: srv.URL, ProjectID: "p", ProjectSecret: "s", Clock: payd.NewFakeClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}
		if _, err := cl.Deliver(context.Background(), order); !errors.Is(err, payd.ErrRailsUnavailable) {
			t.Errorf("%v, want the acquirer unavailable", err)
		}
	})
}

// TestDeliverReversal: a reversal of a charge no checkout took, which has
// no refund to settle: made (or made before, for its amount) it is taken;
// refused, it is payd.ErrOrderRefused with the acquirer's answer, never a
// silent success.
func TestDeliverReversal(t *testing.T) {
	order := &payd.RailsOrder{ID: "o2", Kind: payd.OrderCardReverse, ObjectID: "co1",
		Data: payd.OrderData{OriginalRef: "pay-2", Amount: 1000, OriginalTotal: 1000}}
	for _, c := range []struct {
		name, refund, refunded string
		status                 int
		refused                bool
	}{
		{"made", `{"ok":true,"result":{"status":"OK"}}`, "", 200, false},
		{"made before", `{"ok":true,"result":{"status":"REVERSED"}}`, "10.00", 200, false},
		{"made before for less", `{"ok":true,"result":{"status":"REVERSED"}}`, "4.00", 200, true},
		{"refused", `{"ok":false,"errors":[{"errorCode":"13117","errorMessage":"Refund is not allowed for payment in DECLINED status"}]}`, "", 409, true},
		{"failed", `{"ok":true,"result":{"status":"FAILED"}}`, "", 200, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case "/v1/generate-token":
					fmt.Fprint(w, `{"ok":true,"result":{"accessToken":"a","expiresIn":300}}`)
				case "/v1/refund":
					w.WriteHeader(c.status)
					fmt.Fprint(w, c.refund)
				case "/v1/pay-info/pay-2":
					fmt.Fprintf(w, `{"ok":true,"result":{"payId":"pay-2","status":"REVERSED","amount":10.00,"refundAmount":%s}}`, c.refunded)
				}
			}))
			defer srv.Close()
			cl := &Client{URL: srv.URL, ProjectID: "p", ProjectSecret: "s", Clock: payd.NewFakeClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}
			taken, err := cl.Deliver(context.Background(), order)
			if c.refused != errors.Is(err, payd.ErrOrderRefused) || taken.Refund != "" || !c.refused && err != nil {
				t.Errorf("%+v, %v; refused %v", taken, err, c.refused)
			}
		})
	}
}
