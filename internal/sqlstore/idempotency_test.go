package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestIdempotencyThroughFaults: a request under an Idempotency-Key whose
// commit a fault cut off is resolved by its claim's mark, never guessed.
// Committed with its answer lost: the use case succeeds (the request
// answers as if nothing happened) and its retry replays that answer. Not
// committed: the use case fails, nothing is applied, and the retry runs
// it, once, at once (not a 409 for minutes). A claim that applied nothing
// and whose request is gone is taken over after IdemStale, and the old
// claim can then write nothing; one that applied is never taken over.
func TestIdempotencyThroughFaults(t *testing.T) {
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		cr, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "Shop", IBAN: reconIBAN}, now)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := s.Merchant(ctx, cr.MerchantID)
		var fault string
		sqlstore.ClaimFaults(t, func() string { f := fault; fault = ""; return f })
		amount := payd.Money(5000)
		exp := now.Add(time.Hour)
		rtps := func() int {
			_, n, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m.ID, Count: 100}, now)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// create is one POST /v2/rtp under key: its claim, the use case,
		// its finish; it returns the use case's error, or the answer.
		create := func(key string, at time.Time) (string, error) {
			t.Helper()
			req := sqlstore.IdemRequest{MerchantID: m.ID, Key: key, Method: "POST", Path: "/v2/rtp", BodyHash: "h"}
			outcome, stored, claim, err := s.BeginIdempotent(ctx, req, at)
			switch {
			case err != nil:
				t.Fatal(err)
			case outcome == sqlstore.IdemReplay:
				return "replay " + string(stored), nil
			case outcome != sqlstore.IdemNew:
				return fmt.Sprint("outcome ", outcome), nil
			}
			r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "d"}, m.ID, at)
			err = s.CreateRTP(sqlstore.WithClaim(ctx, claim), m, r)
			answer := `{"rtpId":"` + r.ID + `"}`
			if ferr := s.FinishIdempotent(ctx, claim, err == nil, []byte(answer)); ferr != nil {
				t.Fatal(ferr)
			}
			return answer, err
		}

		// Committed, the answer lost: resolved as committed.
		fault = "after"
		first, err := create("k1", now)
		if err != nil || rtps() != 1 {
			t.Fatalf("a commit whose answer was lost: %q %v, %d RTPs", first, err, rtps())
		}
		if again, _ := create("k1", now.Add(time.Second)); again != "replay "+first {
			t.Errorf("its retry: %q, want the first answer %q", again, first)
		}

		// Not committed: fails, applies nothing; the retry runs once.
		fault = "before"
		if _, err := create("k2", now); !sqlstore.Unavailable(err) || rtps() != 1 {
			t.Fatalf("a commit that did not happen: %v, %d RTPs", err, rtps())
		}
		second, err := create("k2", now.Add(time.Second))
		if err != nil || rtps() != 2 {
			t.Fatalf("its retry: %q %v, %d RTPs", second, err, rtps())
		}
		if again, _ := create("k2", now.Add(2*time.Second)); again != "replay "+second {
			t.Errorf("the retry's retry: %q", again)
		}

		// A claim whose request is gone (it applied nothing; its release
		// never came): busy for IdemStale, then taken over; the old claim
		// then writes nothing.
		req := sqlstore.IdemRequest{MerchantID: m.ID, Key: "k3", Method: "POST", Path: "/v2/rtp", BodyHash: "h"}
		_, _, gone, err := s.BeginIdempotent(ctx, req, now)
		if err != nil || gone == nil {
			t.Fatal(err)
		}
		if got, _ := create("k3", now.Add(sqlstore.IdemStale/2)); got != fmt.Sprint("outcome ", sqlstore.IdemBusy) {
			t.Errorf("while the first may still run: %q", got)
		}
		third, err := create("k3", now.Add(sqlstore.IdemStale+time.Second))
		if err != nil || rtps() != 3 {
			t.Fatalf("taken over: %q %v", third, err)
		}
		r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "late"}, m.ID, now)
		if err := s.CreateRTP(sqlstore.WithClaim(ctx, gone), m, r); !payd.IsCode(err, payd.CodeIdempotencyBusy) || rtps() != 3 {
			t.Errorf("the old claim wrote: %v, %d RTPs", err, rtps())
		}

		// A claim that applied, its answer not stored (its instance died
		// after the commit): busy, never run again, however long after.
		req.Key = "k4"
		_, _, applied, err := s.BeginIdempotent(ctx, req, now)
		if err != nil {
			t.Fatal(err)
		}
		r, _ = payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "d"}, m.ID, now)
		if err := s.CreateRTP(sqlstore.WithClaim(ctx, applied), m, r); err != nil {
			t.Fatal(err)
		}
		if got, _ := create("k4", now.Add(time.Hour)); got != fmt.Sprint("outcome ", sqlstore.IdemBusy) || rtps() != 4 {
			t.Errorf("an applied claim an hour later: %q, %d RTPs", got, rtps())
		}
	})
}
