package sqlstore

import (
	"context"
	"testing"
	"time"

	"payd"
)

// TestSeedGivesEveryMerchantEveryWord: the load generator's description
// search runs as one merchant, so a seed where a merchant's RTPs carried
// only some of the words measured a search that matched nothing (with 100
// merchants and 8 words, each merchant had two of them).
func TestSeedGivesEveryMerchantEveryWord(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s *Store) {
		ids := []string{"m0", "m1", "m2", "m3"}
		now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		const each = 5 // RTPs per merchant and word
		seedMerchants(t, s, ids, len(ids)*len(seedWords)*each, now)
		for _, m := range ids {
			for _, w := range seedWords {
				_, total, err := s.RTPs(context.Background(), payd.RTPFilter{MerchantID: m, Description: w, Count: 1}, now)
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
