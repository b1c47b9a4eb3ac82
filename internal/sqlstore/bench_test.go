package sqlstore_test

import (
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// BenchmarkCreateRTP is one RTP insert transaction, on each engine
// (PostgreSQL when PAYD_TEST_POSTGRES_URL is set). Run with -cpu to vary
// the parallelism: go test -bench CreateRTP -benchmem -cpu 1,8,32 ./internal/sqlstore/
func BenchmarkCreateRTP(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			var s *sqlstore.Store
			if engine == "sqlite" {
				s, _ = storetest.SQLite(b)
			} else {
				s, _ = storetest.Postgres(b)
			}
			c, _ := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "b"}, storetest.Epoch)
			m, _ := s.Merchant(ctx, c.MerchantID)
			amount, exp := payd.Money(5000), storetest.Epoch.Add(time.Hour)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, _ := payd.NewRTP(payd.RTPInput{Alias: "37369112221", Amount: &amount, ExpiresAt: &exp, Currency: "MDL", Description: "d"}, c.MerchantID, storetest.Epoch)
					if err := s.CreateRTP(ctx, m, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
