package sqlstore

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	"payd"
)

const dayMS = int64(24 * time.Hour / time.Millisecond)

// dayStart is the first millisecond of a YYYY-MM-DD date (UTC).
func dayStart(date string) (int64, error) {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return 0, fmt.Errorf("date %q: %w", date, err)
	}
	return t.UnixMilli(), nil
}

func dayOf(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.DateOnly) }

// The settlement report sums a merchant's payments and refunds per day.
// Summing a month of a busy merchant's payments at every request is the
// slow part, so the sums of days before yesterday are kept
// (settlement_days, a row per day and currency, and a marker row with no
// currency for every day summed) and those of yesterday and today are
// summed live. A payment recorded for a day before yesterday (a bank's
// late credit, backdated to its acceptance) drops its day's kept sums in
// its own transaction (settlementChanged); a refund is executed when it
// settles, so always on a live day.

// settlementLive is how many days, today included, are always summed live.
const settlementLive = 2

func dayNum(t time.Time) int64 { return t.UnixMilli() / dayMS }

// settlementChanged drops the kept sums of the day a payment executed at
// was recorded into at now, when that day is one of the kept ones.
func (t *tx) settlementChanged(ctx context.Context, merchantID string, at, now time.Time) error {
	if dayNum(at) > dayNum(now)-settlementLive {
		return nil
	}
	_, err := t.exec(ctx, "DELETE FROM settlement_days WHERE merchant_id = ? AND day = ?", merchantID, dayNum(at))
	return err
}

// forgetSettlement drops a merchant's kept settlement sums (the sandbox's
// test clock moved, so "before yesterday" moved with it).
func (t *tx) forgetSettlement(ctx context.Context, merchantID string) error {
	_, err := t.exec(ctx, "DELETE FROM settlement_days WHERE merchant_id = ?", merchantID)
	return err
}

type settleKey struct {
	day int64
	ccy string
}

// sumSettlement sums the merchant's payments and accepted refunds of the
// days [from, to] (day numbers) per day and currency.
func (s *Store) sumSettlement(ctx context.Context, merchantID string, from, to int64) (map[settleKey]*payd.SettlementDay, error) {
	days := map[settleKey]*payd.SettlementDay{}
	get := func(k settleKey) *payd.SettlementDay {
		d := days[k]
		if d == nil {
			d = &payd.SettlementDay{Date: dayOf(k.day * dayMS), Currency: k.ccy}
			days[k] = d
		}
		return d
	}
	start, end := from*dayMS, (to+1)*dayMS
	rows, err := s.query(ctx, `SELECT executed_at / ?, currency, COUNT(*), SUM(amount), SUM(commission) FROM payments
		WHERE merchant_id = ? AND failed = 0 AND executed_at >= ? AND executed_at < ? GROUP BY 1, 2`, dayMS, merchantID, start, end)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k settleKey
		var n, gross, commission int64
		if err := rows.Scan(&k.day, &k.ccy, &n, &gross, &commission); err != nil {
			rows.Close()
			return nil, err
		}
		d := get(k)
		d.Payments, d.Gross, d.Commission = int(n), payd.Money(gross), payd.Money(commission)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = s.query(ctx, `SELECT executed_at / ?, currency, COUNT(*), SUM(amount) FROM refunds
		WHERE merchant_id = ? AND status = 'Accepted' AND executed_at >= ? AND executed_at < ? GROUP BY 1, 2`, dayMS, merchantID, start, end)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k settleKey
		var n, refunded int64
		if err := rows.Scan(&k.day, &k.ccy, &n, &refunded); err != nil {
			rows.Close()
			return nil, err
		}
		d := get(k)
		d.Refunds, d.Refunded = int(n), payd.Money(refunded)
	}
	rows.Close()
	return days, rows.Err()
}

// Settlement is a merchant's money per day and currency between two dates
// (inclusive, UTC) as of now: its payments (declined cards not counted),
// their commission, its accepted refunds, and the net (payd.SettlementDay).
func (s *Store) Settlement(ctx context.Context, merchantID, from, to string, now time.Time) ([]payd.SettlementDay, error) {
	start, err := dayStart(from)
	if err != nil {
		return nil, err
	}
	end, err := dayStart(to)
	if err != nil {
		return nil, err
	}
	fromN, toN, live := start/dayMS, end/dayMS, dayNum(now)-settlementLive+1
	all := map[settleKey]*payd.SettlementDay{}
	if keptTo := min(toN, live-1); fromN <= keptTo {
		kept, err := s.keptSettlement(ctx, merchantID, fromN, keptTo)
		if err != nil {
			return nil, err
		}
		maps.Copy(all, kept)
	}
	if liveFrom := max(fromN, live); liveFrom <= toN {
		sums, err := s.sumSettlement(ctx, merchantID, liveFrom, toN)
		if err != nil {
			return nil, err
		}
		maps.Copy(all, sums)
	}
	out := make([]payd.SettlementDay, 0, len(all))
	for k, d := range all {
		if k.ccy == "" {
			continue // a kept day without money
		}
		d.Settle()
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Date != out[j].Date {
			return out[i].Date < out[j].Date
		}
		return out[i].Currency < out[j].Currency
	})
	return out, nil
}

// SettlementKeepBack is how many days before the live ones KeepSettlement
// makes sure are kept: a week, so an instance (or all of them) down for
// days catches up.
const SettlementKeepBack = 7

// KeepSettlement keeps the sums of the merchant's days that have stopped
// being live (the SettlementKeepBack days before yesterday, as of now), so
// that a report reads them instead of summing its payments: a month of
// 100,000 payments summed (twice, see keptSettlement) at its first read
// took 141-157 ms, read kept 0.1-0.2 ms (BenchmarkSettlement). Days already kept cost one indexed read.
func (s *Store) KeepSettlement(ctx context.Context, merchantID string, now time.Time) error {
	live := dayNum(now) - settlementLive + 1
	_, err := s.keptSettlement(ctx, merchantID, live-SettlementKeepBack, live-1)
	return err
}

// keptSettlement reads the kept sums of the days [from, to], summing (and
// keeping) the days not kept yet.
func (s *Store) keptSettlement(ctx context.Context, merchantID string, from, to int64) (map[settleKey]*payd.SettlementDay, error) {
	out := map[settleKey]*payd.SettlementDay{}
	kept := map[int64]bool{}
	rows, err := s.query(ctx, `SELECT day, currency, payments, gross, commission, refunds, refunded FROM settlement_days
		WHERE merchant_id = ? AND day >= ? AND day <= ?`, merchantID, from, to)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k settleKey
		var n, r int
		var gross, commission, refunded int64
		if err := rows.Scan(&k.day, &k.ccy, &n, &gross, &commission, &r, &refunded); err != nil {
			rows.Close()
			return nil, err
		}
		kept[k.day] = true
		out[k] = &payd.SettlementDay{Date: dayOf(k.day * dayMS), Currency: k.ccy, Payments: n, Gross: payd.Money(gross),
			Commission: payd.Money(commission), Refunds: r, Refunded: payd.Money(refunded)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	first, last := int64(-1), int64(-1)
	for d := from; d <= to; d++ {
		if !kept[d] {
			if first < 0 {
				first = d
			}
			last = d
		}
	}
	if first < 0 {
		return out, nil
	}
	sums, err := s.sumSettlement(ctx, merchantID, first, last)
	if err != nil {
		return nil, err
	}
	if afterSettlementSum != nil {
		afterSettlementSum()
	}
	err = s.inTx(ctx, func(t *tx) error {
		for d := first; d <= last; d++ {
			if kept[d] {
				continue
			}
			if _, err := t.exec(ctx, `INSERT INTO settlement_days (merchant_id, day, currency, payments, gross, commission, refunds, refunded)
				VALUES (?, ?, '', 0, 0, 0, 0, 0) ON CONFLICT DO NOTHING`, merchantID, d); err != nil {
				return err
			}
		}
		for k, v := range sums {
			if kept[k.day] {
				continue
			}
			if _, err := t.exec(ctx, `INSERT INTO settlement_days (merchant_id, day, currency, payments, gross, commission, refunds, refunded)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, merchantID, k.day, k.ccy, v.Payments, int64(v.Gross),
				int64(v.Commission), v.Refunds, int64(v.Refunded)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A payment recorded for one of these days after the sum and before
	// the insert found no kept row to drop (settlementChanged). Summed
	// again now that the rows are there, a day that changed is dropped
	// (the next read sums and keeps it again); a payment recorded after
	// this second sum drops the day's rows itself.
	again, err := s.sumSettlement(ctx, merchantID, first, last)
	if err != nil {
		return nil, err
	}
	for d := first; d <= last && err == nil; d++ {
		if !kept[d] && !sameDay(sums, again, d) {
			err = s.write1(ctx, "DELETE FROM settlement_days WHERE merchant_id = ? AND day = ?", merchantID, d)
		}
	}
	for k, v := range again {
		if !kept[k.day] {
			out[k] = v
		}
	}
	return out, err
}

// afterSettlementSum, when set (by a test), runs between keptSettlement's
// sum and its insert.
var afterSettlementSum func()

// sameDay reports whether two sums agree on day d in every currency.
func sameDay(a, b map[settleKey]*payd.SettlementDay, d int64) bool {
	for _, m := range [2]map[settleKey]*payd.SettlementDay{a, b} {
		for k := range m {
			if k.day == d && (a[k] == nil || b[k] == nil || *a[k] != *b[k]) {
				return false
			}
		}
	}
	return true
}
