package seed_test

import (
	"context"
	"testing"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/seed"
	"payd/internal/sqlstore/storetest"
)

// TestSeedGivesEveryMerchantEveryWord: the load generator's description
// search runs as one merchant, so a seed where a merchant's RTPs carried
// only some of the words measured a search that matched nothing (with 100
// merchants and 8 words, each merchant had two of them).
func TestSeedGivesEveryMerchantEveryWord(t *testing.T) {
	ctx := context.Background()
	storetest.Engines(t, func(t *testing.T, s *sqlstore.Store, _ string) {
		var ids []string
		for range 4 {
			c, err := s.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: "m"}, storetest.Epoch)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.MerchantID)
		}
		const each = 5 // RTPs per merchant and word
		if err := seed.RTPs(ctx, s.WriteDB(), s.Engine() == sqlstore.Postgres, ids, len(ids)*len(seed.Words)*each, storetest.Epoch); err != nil {
			t.Fatal(err)
		}
		for _, m := range ids {
			for _, w := range seed.Words {
				_, total, err := s.RTPs(ctx, payd.RTPFilter{MerchantID: m, Description: w, Count: 1}, storetest.Epoch)
				if err != nil {
					t.Fatal(err)
				}
				if total != each {
					t.Errorf("%s: %d RTPs described %q, want %d", m, total, w, each)
				}
			}
		}
	})
}
