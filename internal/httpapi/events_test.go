package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"payd/internal/rails/sandbox"
	"payd/internal/worker"
)

// TestEventsRecordEveryChange: every state change is an event row with its
// from, to, time and cause, written with the change; a refused transition
// writes none; other merchants' events stay theirs.
func TestEventsRecordEveryChange(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		ctx := t.Context()
		changes := func(merchantID, id string) string {
			t.Helper()
			evs, err := e.store.Changes(ctx, merchantID, id)
			if err != nil {
				t.Fatal(err)
			}
			var b []string
			for _, ev := range evs {
				b = append(b, fmt.Sprintf("%s %s→%s %s", ev.Object, ev.From, ev.To, ev.Cause))
			}
			return strings.Join(b, "; ")
		}
		want := func(id, w string) {
			t.Helper()
			if got := changes(e.merchant.ID, id); got != w {
				t.Errorf("changes of %s:\n got %s\nwant %s", id, got, w)
			}
		}
		// The payer accepts; the merchant refunds; the network settles.
		accepted := e.createRTP(nil)
		payID := e.as("POST", "/v2/rtp/"+accepted+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
		refund := e.as("POST", "/v2/payments/"+payID+"/refund", map[string]any{"reason": "events"}).wantOK().str("result.refundId")
		e.clock.Advance(2 * time.Second) // past the refund delay
		if _, err := (&sandbox.Refunds{Store: e.store, Ledger: e.store, Clock: e.clock}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		want(accepted, "rtp Active→Accepted payer; rtp Accepted→Refunded bank")
		want(payID, "payment Executed→Refunded bank")
		want(refund, "refund Created→Requested bank; refund Requested→Accepted bank")
		// A refused transition records nothing.
		if r := e.as("POST", "/v2/rtp/"+accepted+"/cancel", map[string]any{"reason": "late"}); r.status == 200 {
			t.Errorf("cancelling a refunded RTP: %s", r.body)
		}
		want(accepted, "rtp Active→Accepted payer; rtp Accepted→Refunded bank")

		// The merchant cancels; a deadline passes.
		cancelled := e.createRTP(nil)
		e.as("POST", "/v2/rtp/"+cancelled+"/cancel", map[string]any{"reason": "changed my mind"}).wantOK()
		want(cancelled, "rtp Active→Cancelled api")
		expiring := e.createRTP(map[string]any{"expiresAt": e.exp(time.Minute)})
		e.clock.Advance(2 * time.Minute)
		if _, err := (&worker.Expiry{Store: e.store, Clock: e.clock}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		want(expiring, "rtp Active→Expired expiry")

		// A hybrid QR's extensions: replaced by the merchant, then the payer pays.
		hybrid := e.as("POST", "/v2/mia/qr/hybrid", map[string]any{"amountType": "Fixed", "currency": "MDL", "terminalId": "T9"}).wantOK().str("result.qrId")
		ext := map[string]any{"amount": 10, "description": "Lunch", "expiresAt": e.exp(time.Hour)}
		first := e.as("POST", "/v2/instant/qr/"+hybrid+"/extension", ext).wantOK().str("result.extensionId")
		second := e.as("POST", "/v2/instant/qr/"+hybrid+"/extension", ext).wantOK().str("result.extensionId")
		e.pay(hybrid, 10).wantOK()
		want(first, "extension Active→Replaced api")
		want(second, "") // paying an extension changes no status: it stays payable until replaced or expired

		// The payer opens a checkout page.
		co := e.checkout(nil)
		e.page(e.browser(), "GET", "/checkout/"+co+"?lang=en", nil, nil)
		want(co, "checkout WaitingForInit→Initialized payer")

		// The test clock: 31 days make a Static QR Inactive, by the clock.
		static := e.qr(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "tips"})
		e.as("POST", "/v2/sandbox/clock/advance", map[string]any{"seconds": 31 * 24 * 3600}).wantOK()
		if _, err := (&worker.Expiry{Store: e.store, Clock: e.clock}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		want(static, "qr Active→Inactive clock")

		// Another merchant sees none of them.
		other, _, _ := e.newMerchant(0)
		if got := changes(other.ID, accepted); got != "" {
			t.Errorf("another merchant reads %s", got)
		}
		recent, err := e.store.RecentChanges(ctx, e.merchant.ID, 100)
		if err != nil || len(recent) < 10 || recent[0].ID < recent[len(recent)-1].ID {
			t.Errorf("recent changes: %d, %v (newest first)", len(recent), err)
		}
	})
}
