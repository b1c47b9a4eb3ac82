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
	for _, c := range []struct {
		name          string
		token, refund int
		refundBody    string
		want          string // "accepted", "rejected" or "unavailable"
	}{
		{"refunded", 200, 200, `{"ok":true,"result":{"status":"OK"}}`, "accepted"},
		{"already refunded", 200, 400, `{"ok":false,"errors":[{"errorCode":"13116","errorMessage":"Payment is already refunded"}]}`, "accepted"},
		{"refused", 200, 400, `{"ok":false,"errors":[{"errorCode":"12001","errorMessage":"Invalid amount"}]}`, "rejected"},
		{"acquirer down", 200, 503, `{"ok":false,"errors":[{"errorCode":"500","errorMessage":"Unavailable"}]}`, "unavailable"},
		{"too many requests", 200, 429, `{"ok":false,"errors":[{"errorCode":"429","errorMessage":"Slow down"}]}`, "unavailable"},
		{"no token", 400, 200, `{"ok":true,"result":{"status":"OK"}}`, "unavailable"},
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
