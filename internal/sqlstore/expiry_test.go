package sqlstore_test

import (
	"slices"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestExpiryRulesAgree: the store states the domain's expiry rules in SQL
// (the status read as of now, and which rows the expirers move). On both
// engines, for every status and a deadline just before, at and just after
// now, the SQL and RTP.Observe / Checkout.Observe agree.
func TestExpiryRulesAgree(t *testing.T) {
	rtpStatuses := []payd.RTPStatus{payd.RTPCreated, payd.RTPActive, payd.RTPAccepted, payd.RTPRejected,
		payd.RTPExpired, payd.RTPCancelled, payd.RTPRefunded}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	deadlines := []time.Duration{-time.Hour, -time.Millisecond, 0, time.Millisecond, time.Hour}
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		ctx := t.Context()
		for _, st := range rtpStatuses {
			for _, d := range deadlines {
				r := &payd.RTP{Status: st, ExpiresAt: now.Add(d)}
				moved := r.Observe(now)
				got, err := s.RTPStatusAt(ctx, string(st), r.ExpiresAt, now)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(r.Status) {
					t.Errorf("RTP %s, deadline now%+v: SQL reads %s, Observe %s", st, d, got, r.Status)
				}
				due, err := s.DueAt(ctx, string(st), string(st), r.ExpiresAt, now)
				if err != nil {
					t.Fatal(err)
				}
				swept := due && slices.Contains(sqlstore.RTPExpiring(), string(st))
				if swept != moved {
					t.Errorf("RTP %s, deadline now%+v: the expirer moves it %v, Observe %v", st, d, swept, moved)
				}
			}
		}
		for _, st := range payd.CheckoutStatuses {
			for _, d := range deadlines {
				c := &payd.Checkout{Status: st, ExpiresAt: now.Add(d)}
				c.Observe(now)
				to := st
				for _, m := range sqlstore.CheckoutDeadlines() {
					due, err := s.DueAt(ctx, string(st), m[0], c.ExpiresAt, now)
					if err != nil {
						t.Fatal(err)
					}
					if due {
						to = payd.CheckoutStatus(m[1])
					}
				}
				if to != c.Status {
					t.Errorf("checkout %s, deadline now%+v: the expirer makes it %s, Observe %s", st, d, to, c.Status)
				}
				read, err := s.CheckoutStatusAt(ctx, string(st), c.ExpiresAt, now)
				if err != nil {
					t.Fatal(err)
				}
				if read != string(c.Status) {
					t.Errorf("checkout %s, deadline now%+v: SQL reads %s, Observe %s", st, d, read, c.Status)
				}
			}
		}
	})
}
