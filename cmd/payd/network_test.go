package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/network"
)

// testRails is a second rails network, registered by this file alone as a
// network's package registers itself: nothing else of payd names it. It
// takes every order it is handed and carries credits in at its own
// endpoint.
type testRails struct {
	mu     sync.Mutex
	orders []payd.RailsOrder
}

func (r *testRails) Deliver(_ context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orders = append(r.orders, *o)
	return payd.Taken{}, nil
}

// wait returns the order of kind for object, once it has come.
func (r *testRails) wait(t *testing.T, kind payd.OrderKind, object string) payd.RailsOrder {
	t.Helper()
	var got payd.RailsOrder
	waitUntil(t, 10*time.Second, "the "+string(kind)+" order of "+object+" at the test rails", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, o := range r.orders {
			if o.Kind == kind && o.ObjectID == object {
				got = o
				return true
			}
		}
		return false
	})
	return got
}

var secondRails = &testRails{}

func init() {
	network.Register(network.Network{
		Name: "test-rails", Role: network.Rails,
		Settings: []network.Setting{{Flag: "test-rails-label", Env: "PAYD_TEST_RAILS_LABEL", Help: "the test rails' label (required)"}},
		Check: func(v network.Values) error {
			if v["test-rails-label"] == "" {
				return errors.New("PAYD_TEST_RAILS_LABEL is required with PAYD_RAILS=test-rails")
			}
			return nil
		},
		Start: func(h *network.Host) (network.Started, error) {
			h.Mount("POST /rails/test-rails/credit/{target}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p, err := h.Ledger.Credit(r.Context(), payd.Credit{Network: "test-rails", TargetID: r.PathValue("target"),
					PayerName: "ION POPESCU", PayerIBAN: "MD24AG000225100013104169", Reference: "T-" + r.PathValue("target")}, h.Clock.Now())
				if err != nil {
					http.Error(w, err.Error(), http.StatusConflict)
					return
				}
				json.NewEncoder(w).Encode(map[string]string{"paymentId": p.ID, "label": h.Values["test-rails-label"]})
			}))
			return network.Started{Orders: secondRails}, nil
		},
	})
}

// TestASecondRailsIsOnePackage: a rails network registered as above is
// offered by payd serve's settings and checked with them, and a production
// payd that chooses it sends it the RTPs' orders, takes its credits, and
// sends a refund of its payment back to it, each order naming it.
func TestASecondRailsIsOnePackage(t *testing.T) {
	if out, _ := runAll(nil, "serve", "-h"); !strings.Contains(out, "-test-rails-label") || !strings.Contains(out, "iso20022 or test-rails") {
		t.Errorf("payd serve -h does not offer the test rails:\n%s", out)
	}
	env := map[string]string{
		"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db"), "PAYD_MODE": "production",
		"PAYD_PUBLIC_URL": "https://payd.example", "PAYD_RAILS": "test-rails", "PAYD_ALLOW_HTTP_URLS": "true",
	}
	if out, code := runAll(env, "serve", "--addr", "127.0.0.1:0"); code == 0 || !strings.Contains(out, "PAYD_TEST_RAILS_LABEL is required") {
		t.Errorf("serve without the network's setting: exit %d\n%s", code, out)
	}
	env["PAYD_TEST_RAILS_LABEL"] = "second"
	out, code := runCmd(t, env, "merchant", "create", "--name", "Shop", "--iban", shopIBAN)
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	s := startServer(t, env)
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, s.base, cr)}
	st, v := c.do("POST", s.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 50, "currency": "MDL",
		"description": "Order 42", "expiresAt": payd.FormatTime(time.Now().Add(time.Hour))})
	if st != 200 {
		t.Fatalf("create rtp: %d %v", st, v)
	}
	rtpID := str(result(v), "rtpId")
	if o := secondRails.wait(t, payd.OrderSendRTP, rtpID); o.Network != "test-rails" {
		t.Errorf("the RTP's order names network %q", o.Network)
	}

	res, err := http.Post(s.base+"/rails/test-rails/credit/"+rtpID, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var credited map[string]string
	json.NewDecoder(res.Body).Decode(&credited)
	res.Body.Close()
	if res.StatusCode != 200 || credited["label"] != "second" {
		t.Fatalf("the test rails' credit: %d %v", res.StatusCode, credited)
	}
	if _, g := c.do("GET", s.base+"/v2/rtp/"+rtpID, nil); str(result(g), "status") != "Accepted" {
		t.Fatalf("the RTP after the credit: %v", g)
	}
	st, v = c.do("POST", s.base+"/v2/payments/"+credited["paymentId"]+"/refund", map[string]any{"reason": "returned"})
	if st != 200 {
		t.Fatalf("refund: %d %v", st, v)
	}
	if o := secondRails.wait(t, payd.OrderRefund, str(result(v), "refundId")); o.Network != "test-rails" || o.Data.PaymentID != credited["paymentId"] {
		t.Errorf("the refund's order: %+v", o)
	}
}
