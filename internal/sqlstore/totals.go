package sqlstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"

	"golang.org/x/sync/singleflight"
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

// The searches that find no kept total while the merchant has the same
// number of RTPs, for the same page, share one reading (searchFlights):
// a dashboard's few tabs, or the clients of one merchant, refresh the
// same search together, and each new RTP sends them all to count again
// at once, where one count serves them all. Each of them read the same
// number before it joined (the shared key holds it), and the number only
// grows: no RTP was created between the first one's read and the last
// one's. The reading, taken after the first one's read, therefore counted
// at least the RTPs any of them could have seen, as when each counts
// alone. Each gets its own copies of the page's RTPs, observed as of its
// own now.

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
	// Each text goes with its length, so that no two filters share a key
	// whatever their texts hold (a NUL too).
	var b strings.Builder
	for _, s := range []string{f.MerchantID, f.Description, f.RTPID, f.OrderID, f.TerminalID} {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
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

// searchRead, when set (by tests), runs in each reading of a search that
// found no kept total, before it reads.
var searchRead func()

// searchFlight is one reading of a search shared by the searches that
// wait for it.
type searchFlight struct {
	out   []*payd.RTP
	total int
}

// flightKey is the key of f's reading among those running: its kept
// total's key, the merchant's number of RTPs, and f's page.
func flightKey(key string, rtps int, f payd.RTPFilter) string {
	return fmt.Sprintf("%s\x00%d\x00%d\x00%d\x00%s\x00%t", key, rtps, f.Offset, f.Count, f.SortBy, f.Desc)
}

// RTPs lists the RTPs matching f as of now and counts all matches.
func (s *Store) RTPs(ctx context.Context, f payd.RTPFilter, now time.Time) ([]*payd.RTP, int, error) {
	key, fixed := fixedSearchKey(f)
	if !fixed || s.plain {
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
	// The reading goes on if this search's client goes away, as others
	// may be waiting for it: like a coalesced read (coalesce.go), it is
	// bounded by coalesceTimeout instead.
	flight := s.searchFlights.DoChan(flightKey(key, before, f), func() (any, error) {
		if searchRead != nil {
			searchRead()
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), coalesceTimeout)
		defer cancel()
		out, total, err := s.listRTPs(ctx, f, now)
		if err != nil {
			return nil, err
		}
		if after, err := s.merchantRTPs(ctx, f.MerchantID); err == nil && after == before {
			s.totals.put(key, before, total)
		}
		return searchFlight{out, total}, nil
	})
	var res singleflight.Result
	select {
	case res = <-flight:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if res.Err != nil {
		return nil, 0, res.Err
	}
	sf := res.Val.(searchFlight)
	out := make([]*payd.RTP, len(sf.out))
	for i, r := range sf.out {
		cp := *r // each search its own copy, observed as of its own now
		cp.Observe(now)
		out[i] = &cp
	}
	return out, sf.total, nil
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
