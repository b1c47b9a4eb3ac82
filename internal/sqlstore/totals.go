package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"
)

// A description search's total is its dearest part: an exact count reads
// every index entry of the merchant (10,000 at 1M rows, 100,000 at 10M)
// and tests the pattern on each, where the page stops at its last row.
// Yet the total of a search by fields an RTP never changes (its id,
// order id, terminal, amount, description, creation and deadline) can
// change only when the merchant gains an RTP, and RTPs are never
// deleted: the merchant's number of RTPs (rtp_counts, moved in the
// inserting transaction) names the set the total was counted over. So
// an instance keeps each such total with that number and answers a
// repeat of the search (the next page, a refresh) from it while the
// number is the same, on every instance, whoever creates.
//
// The number is read before the search and the search's snapshot is
// later, so the search counted at least those RTPs. Had it counted more,
// its total filed under that number could never be served (the number
// only grows) but would push out a good one, so a total is kept only when
// the number read after the search is the same. A merchant creating RTPs
// while it searches counts each time, as before, plus the two reads of
// its number.

// maxSearchTotals bounds the totals an instance keeps; past it one is
// dropped for each one added.
const maxSearchTotals = 4096

type searchTotal struct {
	rtps  int // the merchant's number of RTPs when counted
	total int
}

type searchTotals struct {
	mu sync.Mutex
	m  map[string]searchTotal
}

func (c *searchTotals) get(key string, rtps int) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[key]
	return t.total, ok && t.rtps == rtps
}

func (c *searchTotals) put(key string, rtps, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]searchTotal{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxSearchTotals {
		for k := range c.m { // any one
			delete(c.m, k)
			break
		}
	}
	c.m[key] = searchTotal{rtps: rtps, total: total}
}

// fixedSearchKey is the key of f's total among the kept ones, and false
// when f is not a description search by fixed fields alone (a status as
// of now changes without a new RTP).
func fixedSearchKey(f payd.RTPFilter) (string, bool) {
	if f.Description == "" || len(f.Statuses) > 0 {
		return "", false
	}
	var b strings.Builder
	for _, s := range []string{f.MerchantID, f.Description, f.RTPID, f.OrderID, f.TerminalID} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	if f.Amount != nil {
		b.WriteString(strconv.FormatInt(int64(*f.Amount), 10))
	}
	for _, t := range []*time.Time{f.CreatedFrom, f.CreatedTo, f.ExpiresFrom, f.ExpiresTo} {
		b.WriteByte(0)
		if t != nil {
			b.WriteString(strconv.FormatInt(ms(*t), 10))
		}
	}
	return b.String(), true
}

// totalsHit, when set (by tests), learns each search answered from a
// kept total.
var totalsHit func()

// RTPs lists the RTPs matching f as of now and counts all matches.
func (s *Store) RTPs(ctx context.Context, f payd.RTPFilter, now time.Time) ([]*payd.RTP, int, error) {
	key, fixed := fixedSearchKey(f)
	if !fixed {
		return s.listRTPs(ctx, f, now)
	}
	before, err := s.merchantRTPs(ctx, f.MerchantID)
	if err != nil {
		return nil, 0, err
	}
	if total, ok := s.totals.get(key, before); ok {
		if totalsHit != nil {
			totalsHit()
		}
		if total <= f.Offset {
			return nil, total, nil
		}
		if q := s.descriptionWalk(f); q != nil {
			return s.walkPage(ctx, f, q, before, total, now)
		}
		return s.pagedRTPs(ctx, f, total, now)
	}
	out, total, err := s.listRTPs(ctx, f, now)
	if err != nil {
		return nil, 0, err
	}
	if after, err := s.merchantRTPs(ctx, f.MerchantID); err == nil && after == before {
		s.totals.put(key, before, total)
	}
	return out, total, nil
}

// merchantRTPsQ is how many RTPs a merchant has, from its counters (015).
const merchantRTPsQ = "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM rtp_counts WHERE merchant_id = ?"

func (s *Store) merchantRTPs(ctx context.Context, merchantID string) (int, error) {
	n, err := s.count(ctx, merchantRTPsQ, []any{merchantID})
	if err != nil {
		return 0, fmt.Errorf("count rtps: %w", err)
	}
	return n, nil
}
