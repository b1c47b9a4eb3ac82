package sqlstore

import (
	"testing"
	"time"

	"payd"
)

// TestSearchKeysDistinct: filters that differ in any field a kept total
// or a shared reading depends on have different keys, also when a text
// holds the byte that once separated the fields.
func TestSearchKeysDistinct(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	zero, one := payd.Money(0), payd.Money(1)
	base := payd.RTPFilter{MerchantID: "m", Description: "coffee"}
	with := func(edit func(*payd.RTPFilter)) payd.RTPFilter { f := base; edit(&f); return f }
	filters := []payd.RTPFilter{
		base,
		with(func(f *payd.RTPFilter) { f.Description = "coffee\x00" }),
		with(func(f *payd.RTPFilter) { f.Description = "coffee\x00x" }),
		with(func(f *payd.RTPFilter) { f.RTPID = "x" }),
		with(func(f *payd.RTPFilter) { f.OrderID = "x" }),
		with(func(f *payd.RTPFilter) { f.TerminalID = "x" }),
		with(func(f *payd.RTPFilter) { f.Description, f.RTPID = "coffee\x00", "\x00x" }),
		with(func(f *payd.RTPFilter) { f.Description, f.OrderID = "coffee\x00\x00", "x" }),
		// Once the same key: the text of each field, then a NUL.
		with(func(f *payd.RTPFilter) { f.Description, f.RTPID = "coffee\x00x", "y" }),
		with(func(f *payd.RTPFilter) { f.RTPID = "x\x00y" }),
		with(func(f *payd.RTPFilter) { f.Amount = &zero }),
		with(func(f *payd.RTPFilter) { f.Amount = &one }),
		with(func(f *payd.RTPFilter) { f.CreatedFrom = &at }),
		with(func(f *payd.RTPFilter) { f.CreatedTo = &at }),
		with(func(f *payd.RTPFilter) { f.ExpiresFrom = &at }),
		with(func(f *payd.RTPFilter) { f.ExpiresTo = &at }),
	}
	seen := map[string]int{}
	for i, f := range filters {
		key, ok := fixedSearchKey(f)
		if !ok {
			t.Fatalf("filter %d: not a fixed search", i)
		}
		if j, dup := seen[key]; dup {
			t.Errorf("filters %d and %d share the key %q", j, i, key)
		}
		seen[key] = i
	}
	if _, ok := fixedSearchKey(with(func(f *payd.RTPFilter) { f.Statuses = []payd.RTPStatus{payd.RTPActive} })); ok {
		t.Error("a search by status has a kept total")
	}
}
