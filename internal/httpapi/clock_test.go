package httpapi

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/callback"
	"payd/internal/rails/sandbox"
	"payd/internal/webhook"
	"payd/internal/worker"
)

// TestTestClock: a merchant's clock moves its expiries, inactivity,
// abandonment, written timestamps, callback retries and refund settlements;
// other merchants' time is untouched; a reset returns to real time.
func TestTestClock(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		start := e.clock.Now()
		if r := e.as("GET", "/v2/sandbox/clock", nil).wantOK(); r.str("result.now") != payd.FormatTime(start) || r.num("result.offsetSeconds") != 0 {
			t.Errorf("clock: %s", r.body)
		}
		for _, body := range []any{map[string]any{"seconds": 0}, map[string]any{"seconds": 31536001}, map[string]any{"seconds": "60"},
			map[string]any{"seconds": 1.5}, map[string]any{}} {
			if r := e.as("POST", "/v2/sandbox/clock/advance", body).wantError(400, payd.CodeInvalidParameter); r.str("errors.0.errorArgs.parameter") != "seconds" {
				t.Errorf("advance %v: %s", body, r.body)
			}
		}
		_, _, tokB := e.newMerchant(0)
		rtpB := e.call("POST", "/v2/rtp", e.rtpBody(nil), tokB).wantOK().str("result.rtpId")
		rtp := e.createRTP(nil) // expires in an hour
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "tips"})
		co := e.checkout(nil) // abandoned after 25 minutes unopened

		// A failing receiver: the first attempt fails, the retry is due in 10 s real time.
		rcv := &logReceiver{answers: []struct {
			status int
			body   string
		}{{500, "down"}}}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		cbRTP := e.createRTP(map[string]any{"callbackUrl": srv.URL})
		payID := e.as("POST", "/v2/rtp/"+cbRTP+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		d := &worker.Delivery{Store: e.store, Client: webhook.NewClient(true), Clock: e.clock, Owner: "clock",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jitter: func() float64 { return 0 }, Clocked: true}
		d.RunOnce(t.Context())
		refund := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "clock"}).wantOK().str("result.refundId")

		// 31 days pass for this merchant.
		adv := e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 31 * 24 * 3600}).wantOK()
		later := start.Add(31 * 24 * time.Hour)
		if adv.str("result.now") != payd.FormatTime(later) || adv.num("result.offsetSeconds") != 31*24*3600 {
			t.Errorf("advance: %s", adv.body)
		}
		for path, want := range map[string]string{"/v2/rtp/" + rtp: "Expired", "/v2/instant/qr/" + static: "Inactive", "/v2/checkouts/" + co: "Abandoned"} {
			if s := e.as("GET", path, nil).wantOK().str("result.status"); s != want {
				t.Errorf("%s after the advance: %s, want %s", path, s, want)
			}
		}
		// The payer pages follow the merchant's time too.
		if _, body, _ := e.page(e.browser(), "GET", "/rtp/"+rtp+"?lang=en", nil, nil); !strings.Contains(body, `data-status="Expired"`) || strings.Contains(body, `id="accept"`) {
			t.Errorf("the RTP page after the advance:\n%s", body)
		}
		if _, body, _ := e.page(e.browser(), "GET", "/qr/"+static+"?lang=en", nil, nil); !strings.Contains(body, `data-status="Inactive"`) {
			t.Errorf("the QR page after the advance:\n%s", body)
		}
		if s := e.call("GET", "/v2/rtp/"+rtpB, nil, tokB).wantOK().str("result.status"); s != "Active" {
			t.Errorf("another merchant's RTP: %s", s)
		}
		if s := e.call("GET", "/v2/sandbox/clock", nil, tokB).wantOK().num("result.offsetSeconds"); s != 0 {
			t.Errorf("another merchant's clock moved: %v", s)
		}
		// New objects are written in the merchant's time.
		newRTP := e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"expiresAt": payd.FormatTime(later.Add(time.Hour))})).wantOK().str("result.rtpId")
		if c := e.as("GET", "/v2/rtp/"+newRTP, nil).wantOK().str("result.createdAt"); c != payd.FormatTime(later) {
			t.Errorf("createdAt after the advance: %s", c)
		}
		// Due work: the retry and the refund's settlement are due now (real time has not moved),
		// and so is the first attempt of a callback created in the merchant's time.
		fresh := e.createRTP(map[string]any{"callbackUrl": srv.URL, "expiresAt": payd.FormatTime(later.Add(time.Hour))})
		e.as("POST", "/v2/rtp/"+fresh+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK()
		if n, _ := d.RunOnce(t.Context()); n != 2 {
			t.Errorf("%d callbacks were due after the advance, want the retry and the new one", n)
		}
		if _, err := (&sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}).RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if r := e.as("GET", "/v2/payments/refunds/"+refund, nil).wantOK(); r.str("result.status") != "Accepted" ||
			r.str("result.executedAt") != payd.FormatTime(later) {
			t.Errorf("the refund after the advance (settled in the merchant's time): %s", r.body)
		}
		// The expiry loop writes what reads already show, in the merchant's time.
		if _, err := (&worker.Expiry{Store: e.store, Clock: e.clock}).RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		for table, id := range map[string]string{"rtps": rtp, "qrs": static, "checkouts": co} {
			var status string
			if err := e.db().QueryRow("SELECT status FROM " + table + " WHERE id = '" + id + "'").Scan(&status); err != nil || status == "Active" || status == "WaitingForInit" {
				t.Errorf("%s %s stored as %s after the expiry loop (%v)", table, id, status, err)
			}
		}
		var stored string
		e.db().QueryRow("SELECT status FROM rtps WHERE id = '" + rtpB + "'").Scan(&stored)
		if stored != "Active" {
			t.Errorf("another merchant's RTP was written %s", stored)
		}
		// Reset: back to real time; what was written keeps its dates.
		reset := e.as("POST", "/v2/sandbox/clock/reset", nil).wantOK()
		if reset.num("result.offsetSeconds") != 0 || reset.str("result.now") != payd.FormatTime(start) {
			t.Errorf("reset: %s", reset.body)
		}
		if c := e.as("GET", "/v2/rtp/"+newRTP, nil).wantOK().str("result.createdAt"); c != payd.FormatTime(later) {
			t.Errorf("createdAt after the reset: %s", c)
		}
		if s := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.status"); s != "Expired" {
			t.Errorf("after the reset an expired RTP is %s", s)
		}
	})
	prod := testConfig()
	prod.Sandbox = false
	forEachEngine(t, prod, func(t *testing.T, e *env) {
		e.as("GET", "/v2/sandbox/clock", nil).wantError(403, payd.CodeSandboxOnly)
		e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 60}).wantError(403, payd.CodeSandboxOnly)
		e.as("POST", "/v2/sandbox/clock/reset", nil).wantError(403, payd.CodeSandboxOnly)
	})
}

// TestClockResetUndoes: a reset returns the merchant to real time at once
// (a real-time expiresAt is accepted right after it), the work scheduled
// in its time is due on real time (a refund taken up a day ahead settles
// now), a callback created while ahead carries the real time in
// X-Signature-Timestamp (a verifier on a real clock accepts it), a
// refused expiresAt says the clock is ahead and by how much, and the
// advance's bounds cannot be overflowed.
func TestClockResetUndoes(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		real := e.clock.Now()
		for _, body := range []string{`{"seconds":9223372036854775807}`, `{"seconds":-1}`, `{"seconds":-9223372036854775808}`,
			`{"seconds":9223372036854775808}`, `{"seconds":31536001}`} {
			e.as("POST", "/v2/sandbox/clock/advance", body).wantError(400, payd.CodeInvalidParameter)
		}
		if r := e.as("GET", "/v2/sandbox/clock", nil).wantOK(); r.num("result.offsetSeconds") != 0 || r.str("result.now") != payd.FormatTime(real) {
			t.Errorf("a refused advance moved the clock: %s", r.body)
		}
		// Ten years ahead in all, no more.
		for i := 0; i < 10; i++ {
			e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 365 * 24 * 3600}).wantOK()
		}
		e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 1}).wantError(400, payd.CodeInvalidParameter)
		e.as("POST", "/v2/sandbox/clock/reset", nil).wantOK()

		rcv := &logReceiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		key := e.creds.SignatureKey
		e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 24 * 3600}).wantOK()
		ahead := real.Add(24 * time.Hour)
		// A real-time expiresAt is refused while ahead, and the answer says why.
		r := e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"expiresAt": payd.FormatTime(real.Add(time.Hour))})).wantError(400, payd.CodeExpiresAtWindow)
		if msg := r.str("errors.0.errorMessage"); !strings.Contains(msg, "1 day ahead of real time") || !strings.Contains(msg, payd.FormatTime(ahead)) {
			t.Errorf("12006 while ahead: %s", r.body)
		}
		rtp := e.createRTP(map[string]any{"callbackUrl": srv.URL, "expiresAt": payd.FormatTime(ahead.Add(time.Hour))})
		payID := e.as("POST", "/v2/rtp/"+rtp+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		refund := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "ahead"}).wantOK().str("result.refundId")
		proc := &sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}
		proc.RunOnce(t.Context()) // taken up (Requested), due a second later in the merchant's time

		reset := e.as("POST", "/v2/sandbox/clock/reset", nil).wantOK()
		if reset.str("result.now") != payd.FormatTime(real) || reset.num("result.offsetSeconds") != 0 {
			t.Errorf("reset: %s", reset.body)
		}
		e.as("POST", "/v2/rtp", e.rtpBody(map[string]any{"expiresAt": payd.FormatTime(real.Add(time.Hour))})).wantOK()
		if c := e.as("GET", "/v2/rtp/"+rtp, nil).wantOK().str("result.createdAt"); c != payd.FormatTime(ahead) {
			t.Errorf("the RTP created ahead lost its date: %s", c)
		}
		e.clock.Advance(time.Second)
		proc.RunOnce(t.Context())
		if st := e.as("GET", "/v2/payments/refunds/"+refund, nil).wantOK().str("result.status"); st != "Accepted" {
			t.Errorf("a refund taken up ahead, a second after the reset: %s", st)
		}
		// The callback made while ahead: its body in the merchant's time,
		// its signature timestamp on the real clock.
		d := &worker.Delivery{Store: e.store, Client: webhook.NewClient(true), Clock: e.clock, Owner: "reset",
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jitter: func() float64 { return 0 }}
		d.RunOnce(t.Context())
		if len(rcv.got) == 0 {
			t.Fatal("no callback delivered after the reset")
		}
		v := callback.NewVerifier(key)
		v.Now = e.clock.Now
		for i, h := range rcv.got {
			if _, err := v.Verify(h, []byte(rcv.bodies[i])); err != nil {
				t.Errorf("callback %d (%s) refused by a verifier on the real clock: %v", i, h.Get("X-Callback-Event"), err)
			}
		}
		accepted := 0
		for i, h := range rcv.got {
			if h.Get("X-Callback-Event") != string(payd.EventRTPAccepted) {
				continue
			}
			accepted++
			if ts := h.Get("X-Signature-Timestamp"); ts != strconv.FormatInt(real.UnixMilli(), 10) {
				t.Errorf("X-Signature-Timestamp %s, want the real time %d", ts, real.UnixMilli())
			}
			if !strings.Contains(rcv.bodies[i], `"executedAt":"`+payd.FormatTime(ahead)+`"`) {
				t.Errorf("the body lost the merchant's time: %s", rcv.bodies[i])
			}
		}
		if accepted != 1 {
			t.Errorf("%d rtp.accepted callbacks delivered, want 1", accepted)
		}
	})
}
