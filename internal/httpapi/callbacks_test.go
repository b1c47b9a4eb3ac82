package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/webhook"
	"payd/internal/worker"
)

// logReceiver answers with the given statuses and bodies, then 200, and
// keeps every delivery.
type logReceiver struct {
	mu      sync.Mutex
	answers []struct {
		status int
		body   string
	}
	got    []http.Header
	bodies []string
}

func (l *logReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got, l.bodies = append(l.got, r.Header.Clone()), append(l.bodies, string(b))
	status, body := 200, "thanks"
	if len(l.answers) > 0 {
		status, body = l.answers[0].status, l.answers[0].body
		l.answers = l.answers[1:]
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// TestCallbackLog: the merchant's callbacks with filters, one callback with
// what was sent and each attempt's answer, a resend of a delivered callback
// (same body and body signature, fresh X-Signature), and isolation.
func TestCallbackLog(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		rcv := &logReceiver{answers: []struct {
			status int
			body   string
		}{{500, "nope"}}}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		rtp := e.createRTP(map[string]any{"callbackUrl": srv.URL + "/cb"})
		payID := e.as("POST", "/v2/rtp/"+rtp+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		d := &worker.Delivery{Store: e.store, Client: webhook.NewClient(true), Clock: e.clock, Owner: "log",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jitter: func() float64 { return 0 }}
		d.RunOnce(t.Context())
		if l := e.as("GET", "/v2/callbacks?count=10&offset=0&state=pending", nil).wantOK(); l.num("result.totalCount") != 1 ||
			l.str("result.items.0.state") != "Pending" || l.num("result.items.0.lastStatusCode") != 500 || l.get("result.items.0.nextAttemptAt") == nil {
			t.Errorf("after a failed attempt: %s", l.body)
		}
		e.clock.Advance(10 * time.Second)
		d.RunOnce(t.Context())

		list := e.as("GET", "/v2/callbacks?count=10&offset=0", nil).wantOK()
		id := list.str("result.items.0.callbackId")
		if list.num("result.totalCount") != 1 || list.str("result.items.0.state") != "Delivered" || list.num("result.items.0.attempts") != 2 ||
			list.str("result.items.0.objectId") != rtp || list.str("result.items.0.event") != "rtp.accepted" || list.get("result.items.0.deliveredAt") == nil {
			t.Errorf("list: %s", list.body)
		}
		for q, want := range map[string]float64{
			"objectId=" + rtp: 1, "objectId=" + payID: 1, "objectId=01a1fd38-56fa-7f9d-ba9b-1038a64df444": 0,
			"state=Delivered": 1, "state=failed": 0, "event=rtp.accepted": 1, "event=refund.accepted": 0,
			"createdAtFrom=" + payd.FormatTime(e.clock.Now().Add(time.Hour)): 0,
		} {
			if n := e.as("GET", "/v2/callbacks?count=10&offset=0&"+q, nil).wantOK().num("result.totalCount"); n != want {
				t.Errorf("%s: %v callbacks, want %v", q, n, want)
			}
		}
		e.as("GET", "/v2/callbacks?count=10&offset=0&state=Gone", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/callbacks?count=1001", nil).wantError(400, payd.CodeInvalidParameter)
		e.as("GET", "/v2/callbacks?sortBy=attempts", nil).wantError(400, payd.CodeInvalidParameter)
		if n := e.as("GET", "/v2/callbacks", nil).wantOK().num("result.totalCount"); n < 1 {
			t.Errorf("the callback list without count or offset: %v callbacks", n)
		}

		got := e.as("GET", "/v2/callbacks/"+id, nil).wantOK()
		rcv.mu.Lock()
		first, firstHeader := rcv.bodies[0], rcv.got[0]
		rcv.mu.Unlock()
		if got.str("result.body") != first || got.str("result.headers.X-Signature") != firstHeader.Get("X-Signature") ||
			got.str("result.headers.X-Signature-Timestamp") != firstHeader.Get("X-Signature-Timestamp") {
			t.Errorf("detail does not show what was sent: %s", got.body)
		}
		if got.num("result.attemptLog.0.statusCode") != 500 || got.str("result.attemptLog.0.responseBody") != "nope" ||
			got.num("result.attemptLog.1.statusCode") != 200 || got.str("result.attemptLog.1.responseBody") != "thanks" {
			t.Errorf("attempt log: %s", got.body)
		}

		// Resend a delivered callback: it arrives again with the same body and a fresh, valid X-Signature.
		e.clock.Advance(time.Minute)
		if r := e.as("POST", "/v2/callbacks/"+id+"/resend", nil).wantOK(); r.str("result.state") != "Pending" {
			t.Errorf("resend: %s", r.body)
		}
		d.RunOnce(t.Context())
		rcv.mu.Lock()
		n := len(rcv.bodies)
		last, lastHeader := rcv.bodies[n-1], rcv.got[n-1]
		rcv.mu.Unlock()
		ts, _ := strconv.ParseInt(lastHeader.Get("X-Signature-Timestamp"), 10, 64)
		if n != 3 || last != first || lastHeader.Get("X-Signature-Timestamp") == firstHeader.Get("X-Signature-Timestamp") ||
			lastHeader.Get("X-Signature") != "sha256="+payd.HMACSignature(e.merchant.SignatureKey, []byte(last), ts) ||
			ts != e.clock.Now().UnixMilli() || lastHeader.Get("X-Callback-Id") != id {
			t.Errorf("the resend: %d deliveries; headers %v", n, lastHeader)
		}
		if r := e.as("GET", "/v2/callbacks/"+id, nil).wantOK(); r.str("result.state") != "Delivered" || r.num("result.attempts") != 3 {
			t.Errorf("after the resend: %s", r.body)
		}

		// Another merchant sees none of it.
		_, _, tokB := e.newMerchant(0)
		e.call("GET", "/v2/callbacks/"+id, nil, tokB).wantError(404, payd.CodeCallbackNotFound)
		e.call("POST", "/v2/callbacks/"+id+"/resend", nil, tokB).wantError(404, payd.CodeCallbackNotFound)
		if n := e.call("GET", "/v2/callbacks?count=10&offset=0", nil, tokB).wantOK().num("result.totalCount"); n != 0 {
			t.Errorf("merchant B lists %v callbacks", n)
		}
		e.as("GET", "/v2/callbacks/01a1fd38-56fa-7f9d-ba9b-1038a64df444", nil).wantError(404, payd.CodeCallbackNotFound)
		e.as("GET", "/v2/callbacks/nope", nil).wantError(404, payd.CodeCallbackNotFound)
	})
}
