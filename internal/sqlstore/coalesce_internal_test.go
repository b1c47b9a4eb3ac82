package sqlstore

import (
	"testing"
	"time"

	"payd"
)

// TestPreparedColumns: the arrays of a coalesced insert, gathered from
// the rows each create prepared for itself, hold every row's value of
// every column where rtpArgs puts it, NULL as a nil element.
func TestPreparedColumns(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_000).UTC()
	rows := []*payd.RTP{
		{ID: "r1", MerchantID: "m1", Alias: "+37360000001", Amount: 1050, Currency: "MDL", Description: "one",
			OrderID: "o-1", Status: payd.RTPCreated, CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(time.Hour)},
		{ID: "r2", MerchantID: "m2", Alias: "+37360000002", Amount: 7, Currency: "MDL", Description: "two",
			TerminalID: "t-2", AutoAction: "accept", AutoAt: at.Add(time.Minute), Status: payd.RTPCreated,
			CreatedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second), ExpiresAt: at.Add(2 * time.Hour)},
	}
	ins := make([]rtpInsert, len(rows))
	for j, r := range rows {
		ins[j] = rtpInsert{r: r}
		if err := ins[j].prepare(); err != nil {
			t.Fatal(err)
		}
	}
	cols := rtpColumns(ins)
	if len(cols) != len(rtpColTypes) {
		t.Fatalf("%d columns, want %d", len(cols), len(rtpColTypes))
	}
	for j, r := range rows {
		for i, want := range rtpArgs(r) {
			var got any
			switch col := cols[i].(type) {
			case []*string:
				if col[j] != nil {
					got = *col[j]
				}
			case []*int64:
				if col[j] != nil {
					got = *col[j]
				}
			default:
				t.Fatalf("column %d is %T", i, cols[i])
			}
			if got != want {
				t.Errorf("row %d column %d: %v (%T), want %v (%T)", j, i, got, got, want, want)
			}
		}
	}
}
