package sqlstore_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/seed"
	"payd/internal/sqlstore/storetest"
)

// BenchmarkCreateRTP is one RTP insert transaction, on each engine
// (PostgreSQL when PAYD_TEST_POSTGRES_URL is set). Run with -cpu to vary
// the parallelism: go test -bench CreateRTP -benchmem -cpu 1,8,32 ./internal/sqlstore/
func BenchmarkCreateRTP(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			s := benchStore(b, engine)
			create := benchCreator(b, s)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					create()
				}
			})
		})
	}
}

// benchCreator makes a merchant and returns a function that creates one
// of its RTPs.
func benchCreator(b *testing.B, s *sqlstore.Store) func() *payd.RTP {
	c, _ := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "b"}, storetest.Epoch)
	m, _ := s.Merchant(ctx, c.MerchantID)
	amount, exp := payd.Money(5000), storetest.Epoch.Add(time.Hour)
	return func() *payd.RTP {
		r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "d"}, c.MerchantID, storetest.Epoch)
		if err := s.CreateRTP(ctx, m, r); err != nil {
			b.Fatal(err)
		}
		return r
	}
}

// BenchmarkRTPGet is one read of an RTP by id (rtp-get's store call),
// from many goroutines over 1,000 RTPs, on each engine:
// go test -run '^$' -bench RTPGet -benchmem -cpu 32 ./internal/sqlstore/
func BenchmarkRTPGet(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			s := benchStore(b, engine)
			create := benchCreator(b, s)
			rtps := make([]*payd.RTP, 1000)
			for i := range rtps {
				rtps[i] = create()
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					want := rtps[next.Add(1)%int64(len(rtps))]
					if r, err := s.RTP(ctx, want.MerchantID, want.ID, storetest.Epoch); err != nil || r.ID != want.ID {
						b.Fatal(r, err)
					}
				}
			})
		})
	}
}

// BenchmarkRTPList is one page of 50 with its count, for every list shape
// the benchmarks time, on one merchant's 10,000 of 100,000 RTPs (the
// per-merchant size of BENCHMARKS.md's 1M runs), on each engine:
// go test -run '^$' -bench RTPList -benchtime 200x ./internal/sqlstore/
func BenchmarkRTPList(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			s := benchStore(b, engine)
			var ms []string
			for i := 0; i < 10; i++ {
				c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "b"}, storetest.Epoch)
				if err != nil {
					b.Fatal(err)
				}
				ms = append(ms, c.MerchantID)
			}
			if err := seed.RTPs(ctx, s.WriteDB(), s.Engine() == sqlstore.Postgres, ms, 100_000, storetest.Epoch); err != nil {
				b.Fatal(err)
			}
			shapes := sqlstore.RTPListShapes(storetest.Epoch)
			names := make([]string, 0, len(shapes))
			for name := range shapes {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				f := shapes[name]
				// Every merchant's descriptions include the searched word (an eighth).
				f.MerchantID, f.Count = ms[2], 50
				b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
					for b.Loop() {
						if _, _, err := s.RTPs(ctx, f, storetest.Epoch); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// benchStore opens a migrated store on engine; PostgreSQL skips without
// PAYD_TEST_POSTGRES_URL.
func benchStore(b *testing.B, engine string) *sqlstore.Store {
	if engine == "sqlite" {
		s, _ := storetest.SQLite(b)
		return s
	}
	s, _ := storetest.Postgres(b)
	return s
}

// BenchmarkExpireRTPs is one expiry transaction over a backlog of overdue
// RTPs, by batch size: on SQLite every API write waits behind it, so its
// time per op is how long the expiry loop holds the writer (worker.ExpiryBatch):
// go test -run '^$' -bench ExpireRTPs -benchtime 20x ./internal/sqlstore/
func BenchmarkExpireRTPs(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, batch := range []int{100, 500} {
			b.Run(fmt.Sprintf("%s/batch=%d", engine, batch), func(b *testing.B) {
				s := benchStore(b, engine)
				c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "b"}, storetest.Epoch)
				if err != nil {
					b.Fatal(err)
				}
				// Deadlines 1–1,000 hours after creation; 3 in 7 open.
				if err := seed.RTPs(ctx, s.WriteDB(), s.Engine() == sqlstore.Postgres, []string{c.MerchantID}, 100_000, storetest.Epoch); err != nil {
					b.Fatal(err)
				}
				later := storetest.Epoch.Add(2000 * time.Hour)
				moved := 0
				for b.Loop() {
					n, err := s.ExpireRTPs(ctx, later, batch)
					if err != nil || n == 0 {
						b.Fatalf("expired %d after %d: %v (the backlog ran out: fewer iterations)", n, moved, err)
					}
					moved += int(n)
				}
				b.ReportMetric(float64(moved)/float64(b.N), "rtps/op")
			})
		}
	}
}

// BenchmarkSettlement is a merchant's settlement report over a month of
// 100,000 payments (10,000 refunded), and one day of it:
// go test -run '^$' -bench Settlement -benchtime 200x ./internal/sqlstore/
func BenchmarkSettlement(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			s := benchStore(b, engine)
			c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "b", IBAN: "MD24AG000225100013104168"}, storetest.Epoch)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			if err := s.SeedPayments(ctx, c.MerchantID, 100_000, start, 31*24*time.Hour); err != nil {
				b.Fatal(err)
			}
			// The first report of a month sums its payments (and keeps the sums).
			b.Run("month_first_read", func(b *testing.B) {
				for b.Loop() {
					if err := s.ForgetSettlement(ctx, c.MerchantID); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Settlement(ctx, c.MerchantID, "2026-10-01", "2026-10-31", time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)); err != nil {
						b.Fatal(err)
					}
				}
			})
			// Reports ending today sum yesterday and today live.
			b.Run("month_ending_today", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Settlement(ctx, c.MerchantID, "2026-10-01", "2026-10-31", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, r := range [][2]string{{"2026-10-01", "2026-10-31"}, {"2026-10-15", "2026-10-15"}} {
				b.Run(r[0]+"_"+r[1], func(b *testing.B) {
					for b.Loop() {
						days, err := s.Settlement(ctx, c.MerchantID, r[0], r[1], time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
						if err != nil || len(days) == 0 {
							b.Fatal(err, len(days))
						}
					}
				})
			}
		})
	}
}
