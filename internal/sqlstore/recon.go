package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"payd"
)

// Reconciliation: statements taken once, their entries matched to the
// payments and refunds they book (payd.MatchEntries decides; the store
// loads the candidates and keeps the outcome), and the reports.

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

// ImportStatement takes a statement once (by its MsgId) with its entries,
// and matches its new entries, and the entries still missing in payd on
// the same accounts, in the same transaction. A statement taken before
// changes nothing (fresh false): importing twice is importing once.
func (s *Store) ImportStatement(ctx context.Context, st *payd.Statement, source string, now time.Time) (fresh bool, err error) {
	defer func() {
		if fresh && err == nil {
			s.statementsTaken.Add(1)
		}
	}()
	err = s.inTx(ctx, func(t *tx) error {
		fresh = false
		res, err := t.exec(ctx, `INSERT INTO statements (msg_id, kind, source, created_at, received_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (msg_id) DO NOTHING`, st.MsgID, st.Kind, source, ms(st.CreatedAt), ms(now))
		if err != nil {
			return fmt.Errorf("take statement: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		fresh = true
		eod := 0
		if st.EndOfDay {
			eod = 1
		}
		var fresher []payd.StatementEntry
		for _, r := range st.Reports {
			if _, err := t.exec(ctx, `INSERT INTO statement_reports (msg_id, report_id, account, end_of_day, from_date, to_date, entries)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, st.MsgID, r.ID, r.Account, eod, r.From, r.To, len(r.Entries)); err != nil {
				return fmt.Errorf("take statement report: %w", err)
			}
			for _, e := range r.Entries {
				res, err := t.exec(ctx, `INSERT INTO statement_entries (id, msg_id, account, booking_date, direction, amount, currency,
					entry_ref, bank_ref, end_to_end_id, tx_id, outcome, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'missing_in_payd', ?)
					ON CONFLICT (id) DO NOTHING`, e.ID, st.MsgID, e.Account, e.BookingDate, e.Direction, int64(e.Amount), e.Currency,
					nullStr(e.EntryRef), nullStr(e.BankRef), nullStr(e.EndToEndID), nullStr(e.TxID), ms(now))
				if err != nil {
					return fmt.Errorf("take statement entry: %w", err)
				}
				if n, _ := res.RowsAffected(); n == 1 {
					fresher = append(fresher, e)
				}
			}
		}
		return t.match(ctx, fresher)
	})
	return fresh, err
}

// match matches entries (and the entries of the same accounts still
// missing in payd, whose payment may have come since) and keeps the
// outcomes.
func (t *tx) match(ctx context.Context, entries []payd.StatementEntry) error {
	if len(entries) == 0 {
		return nil
	}
	byAccount := map[string][2]string{} // account → first and last booking date
	known := map[string]bool{}
	for _, e := range entries {
		known[e.ID] = true
		w, ok := byAccount[e.Account]
		if !ok || e.BookingDate < w[0] {
			w[0] = e.BookingDate
		}
		if !ok || e.BookingDate > w[1] {
			w[1] = e.BookingDate
		}
		byAccount[e.Account] = w
	}
	tol := int64(payd.ReconTolerance / time.Millisecond)
	var items []payd.ReconItem
	for acct, w := range byAccount {
		from, err := dayStart(w[0])
		if err != nil {
			return err
		}
		to, err := dayStart(w[1])
		if err != nil {
			return err
		}
		// Entries still missing in payd on this account get another chance.
		open, err := t.openEntries(ctx, acct, dayOf(from-tol), dayOf(to+tol))
		if err != nil {
			return err
		}
		for _, e := range open {
			if !known[e.ID] {
				known[e.ID] = true
				entries = append(entries, e)
			}
		}
		its, err := t.reconItems(ctx, acct, from-2*tol, to+dayMS+2*tol)
		if err != nil {
			return err
		}
		items = append(items, its...)
	}
	taken, err := t.takenItems(ctx, items)
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].BookingDate != entries[j].BookingDate {
			return entries[i].BookingDate < entries[j].BookingDate
		}
		return entries[i].ID < entries[j].ID
	})
	for _, m := range payd.MatchEntries(entries, items, taken) {
		if m.Outcome == payd.ReconMissingInPayd {
			continue // as written
		}
		if _, err := t.exec(ctx, `UPDATE statement_entries SET outcome = ?, item_kind = ?, item_id = ?, payd_amount = ? WHERE id = ?`,
			m.Outcome, m.ItemKind, m.ItemID, int64(m.PaydAmount), m.EntryID); err != nil {
			return fmt.Errorf("keep match: %w", err)
		}
	}
	return nil
}

// openEntries are the account's entries missing in payd, booked between
// two dates.
func (t *tx) openEntries(ctx context.Context, acct, from, to string) ([]payd.StatementEntry, error) {
	rows, err := t.query(ctx, `SELECT id, account, booking_date, direction, amount, currency, entry_ref, bank_ref, end_to_end_id, tx_id
		FROM statement_entries WHERE outcome = 'missing_in_payd' AND account = ? AND booking_date >= ? AND booking_date <= ?`, acct, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []payd.StatementEntry
	for rows.Next() {
		var e payd.StatementEntry
		var amount int64
		var eref, bref, e2e, txid sql.NullString
		if err := rows.Scan(&e.ID, &e.Account, &e.BookingDate, &e.Direction, &amount, &e.Currency, &eref, &bref, &e2e, &txid); err != nil {
			return nil, err
		}
		e.Amount, e.EntryRef, e.BankRef, e.EndToEndID, e.TxID = payd.Money(amount), eref.String, bref.String, e2e.String, txid.String
		out = append(out, e)
	}
	return out, rows.Err()
}

// railsPayment selects the payments the bank books: credits that came
// through the rails (QR and RTP payments with the network's reference).
const railsPayment = `p.kind IN ('qr','rtp') AND p.network_ref IS NOT NULL`

// reconItems are the payments and accepted refunds of the merchants whose
// account is acct, executed in [from, to) (Unix ms).
func (t *tx) reconItems(ctx context.Context, acct string, from, to int64) ([]payd.ReconItem, error) {
	var out []payd.ReconItem
	add := func(kind, dir, q string) error {
		rows, err := t.query(ctx, q, acct, from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, ccy string
			var amount, at int64
			var rtp, qr, ext, nref sql.NullString
			if err := rows.Scan(&id, &amount, &ccy, &at, &rtp, &qr, &ext, &nref); err != nil {
				return err
			}
			it := payd.ReconItem{Kind: kind, ID: id, Account: acct, Direction: dir, Amount: payd.Money(amount), Currency: ccy,
				At: payd.UnixMilli(at)}
			for _, v := range []string{ext.String, qr.String, rtp.String} {
				if v != "" {
					it.TargetIDs = append(it.TargetIDs, v)
					if it.EndToEndID == "" || v == rtp.String {
						it.EndToEndID = v
					}
				}
			}
			if kind == "payment" {
				it.BankRef = payd.NormalizeRef(nref.String)
			} else {
				it.BankRef = id
			}
			out = append(out, it)
		}
		return rows.Err()
	}
	if err := add("payment", payd.DirCredit, `SELECT p.id, p.amount, p.currency, p.executed_at, p.rtp_id, p.qr_id, p.extension_id, p.network_ref
		FROM payments p JOIN merchants m ON m.id = p.merchant_id
		WHERE m.iban = ? AND `+railsPayment+` AND p.executed_at >= ? AND p.executed_at < ?`); err != nil {
		return nil, fmt.Errorf("reconciliation payments: %w", err)
	}
	if err := add("refund", payd.DirDebit, `SELECT r.id, r.amount, r.currency, r.executed_at, p.rtp_id, p.qr_id, p.extension_id, p.network_ref
		FROM refunds r JOIN payments p ON p.id = r.payment_id JOIN merchants m ON m.id = r.merchant_id
		WHERE m.iban = ? AND r.status = 'Accepted' AND `+railsPayment+` AND r.executed_at >= ? AND r.executed_at < ?`); err != nil {
		return nil, fmt.Errorf("reconciliation refunds: %w", err)
	}
	return out, nil
}

// takenItems are the items among items that an entry books already.
func (t *tx) takenItems(ctx context.Context, items []payd.ReconItem) (map[string]string, error) {
	taken := map[string]string{}
	for i := 0; i < len(items); i += 500 {
		chunk := items[i:min(i+500, len(items))]
		args := make([]any, len(chunk))
		for k, it := range chunk {
			args[k] = it.ID
		}
		rows, err := t.query(ctx, `SELECT item_kind, item_id, id FROM statement_entries WHERE outcome IN ('matched','amount_mismatch')
			AND item_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var kind, item, entry string
			if err := rows.Scan(&kind, &item, &entry); err != nil {
				rows.Close()
				return nil, err
			}
			taken[kind+":"+item] = entry
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return taken, nil
}

// ReconDay is the reconciliation of a booking date (payd.ReconDay).
func (s *Store) ReconDay(ctx context.Context, date string) (*payd.ReconDay, error) {
	start, err := dayStart(date)
	if err != nil {
		return nil, err
	}
	d := &payd.ReconDay{Date: date}
	rows, err := s.query(ctx, `SELECT r.msg_id, s.kind, r.report_id, r.account, s.received_at, r.entries, r.end_of_day
		FROM statement_reports r JOIN statements s ON s.msg_id = r.msg_id
		WHERE r.from_date <= ? AND r.to_date >= ? ORDER BY s.received_at, r.msg_id, r.account`, date, date)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var si payd.StatementInfo
		var at int64
		var eod int
		if err := rows.Scan(&si.MsgID, &si.Kind, &si.StatementID, &si.Account, &at, &si.Entries, &eod); err != nil {
			rows.Close()
			return nil, err
		}
		si.ReceivedAt = payd.UnixMilli(at)
		d.Closed = d.Closed || eod == 1
		d.Statements = append(d.Statements, si)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = s.query(ctx, `SELECT e.id, e.outcome, e.account, e.direction, e.amount, e.payd_amount, e.currency, e.booking_date,
			e.entry_ref, e.bank_ref, e.end_to_end_id, e.tx_id, e.item_kind, e.item_id, r.payment_id,
			COALESCE(p.merchant_id, r.merchant_id, (SELECT MIN(m.id) FROM merchants m WHERE m.iban = e.account))
		FROM statement_entries e
		LEFT JOIN payments p ON e.item_kind = 'payment' AND p.id = e.item_id
		LEFT JOIN refunds r ON e.item_kind = 'refund' AND r.id = e.item_id
		WHERE e.booking_date = ? ORDER BY e.account, e.id`, date)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var l payd.ReconLine
		var amount int64
		var paydAmount sql.NullInt64
		var eref, bref, e2e, txid, kind, item, refundPayment, merchant sql.NullString
		if err := rows.Scan(&l.EntryID, &l.Outcome, &l.Account, &l.Direction, &amount, &paydAmount, &l.Currency, &l.BookingDate,
			&eref, &bref, &e2e, &txid, &kind, &item, &refundPayment, &merchant); err != nil {
			rows.Close()
			return nil, err
		}
		l.Amount, l.EntryRef, l.BankRef, l.EndToEndID, l.TxID, l.MerchantID = payd.Money(amount), eref.String, bref.String, e2e.String, txid.String, merchant.String
		if paydAmount.Valid && kind.Valid {
			m := payd.Money(paydAmount.Int64)
			l.PaydAmount = &m
		}
		switch kind.String {
		case "payment":
			l.PaymentID = item.String
		case "refund":
			l.RefundID, l.PaymentID = item.String, refundPayment.String
		}
		d.Lines = append(d.Lines, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !d.Closed {
		return d, nil
	}
	missing, err := s.missingInBank(ctx, start, start+dayMS, false)
	if err != nil {
		return nil, err
	}
	d.Lines = append(d.Lines, missing...)
	return d, nil
}

// missingInBank are the payments and accepted refunds executed in [from,
// to) that no entry books (countOnly: one line, its Amount the count).
func (s *Store) missingInBank(ctx context.Context, from, to int64, countOnly bool) ([]payd.ReconLine, error) {
	unbooked := ` AND NOT EXISTS (SELECT 1 FROM statement_entries e WHERE e.item_id = %s AND e.outcome IN ('matched','amount_mismatch'))`
	q := `SELECT 'payment', p.id, p.id, p.merchant_id, m.iban, p.amount, p.currency, p.executed_at, p.rtp_id, p.qr_id, p.extension_id, p.network_ref
		FROM payments p JOIN merchants m ON m.id = p.merchant_id
		WHERE ` + railsPayment + ` AND p.executed_at >= ? AND p.executed_at < ?` + fmt.Sprintf(unbooked, "p.id") + `
		UNION ALL
		SELECT 'refund', r.id, r.payment_id, r.merchant_id, m.iban, r.amount, r.currency, r.executed_at, p.rtp_id, p.qr_id, p.extension_id, r.id
		FROM refunds r JOIN payments p ON p.id = r.payment_id JOIN merchants m ON m.id = r.merchant_id
		WHERE r.status = 'Accepted' AND ` + railsPayment + ` AND r.executed_at >= ? AND r.executed_at < ?` + fmt.Sprintf(unbooked, "r.id")
	if countOnly {
		var n int64
		err := s.queryRow(ctx, "SELECT COUNT(*) FROM ("+q+") x", from, to, from, to).Scan(&n)
		return []payd.ReconLine{{Outcome: payd.ReconMissingInBank, Amount: payd.Money(n)}}, err
	}
	rows, err := s.query(ctx, q+" ORDER BY 5, 8", from, to, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []payd.ReconLine
	for rows.Next() {
		var kind, id, payment, merchant, ccy string
		var iban, rtp, qr, ext, ref sql.NullString
		var amount, at int64
		if err := rows.Scan(&kind, &id, &payment, &merchant, &iban, &amount, &ccy, &at, &rtp, &qr, &ext, &ref); err != nil {
			return nil, err
		}
		l := payd.ReconLine{Outcome: payd.ReconMissingInBank, Account: payd.NormalizeIBAN(iban.String), Amount: payd.Money(amount),
			Currency: ccy, BookingDate: dayOf(at), PaymentID: payment, MerchantID: merchant, TxID: payd.NormalizeRef(ref.String)}
		l.PaydAmount = &l.Amount
		l.Direction = payd.DirCredit
		if kind == "refund" {
			l.Direction, l.RefundID = payd.DirDebit, id
		}
		for _, v := range []string{rtp.String, ext.String, qr.String} {
			if v != "" {
				l.EndToEndID = v
				break
			}
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// ReconUnresolved counts what does not match, by outcome, over the booking
// dates from since on: entries missing in payd, mismatched or duplicated,
// and payments and refunds of the closed dates that no entry books.
func (s *Store) ReconUnresolved(ctx context.Context, since string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, o := range payd.ReconOutcomes {
		if o != payd.ReconMatched {
			out[o] = 0
		}
	}
	rows, err := s.query(ctx, `SELECT outcome, COUNT(*) FROM statement_entries WHERE outcome <> 'matched' AND booking_date >= ? GROUP BY outcome`, since)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o string
		var n int64
		if err := rows.Scan(&o, &n); err != nil {
			rows.Close()
			return nil, err
		}
		out[o] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	closed, err := s.closedDates(ctx, since)
	if err != nil {
		return nil, err
	}
	for _, d := range closed {
		start, _ := dayStart(d)
		n, err := s.missingInBank(ctx, start, start+dayMS, true)
		if err != nil {
			return nil, err
		}
		out[payd.ReconMissingInBank] += int64(n[0].Amount)
	}
	return out, nil
}

// closedDates are the booking dates from since on that an end-of-day
// statement covers.
func (s *Store) closedDates(ctx context.Context, since string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT from_date, to_date FROM statement_reports WHERE end_of_day = 1 AND to_date >= ?`, since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			return nil, err
		}
		if from < since {
			from = since
		}
		f, err1 := time.Parse(time.DateOnly, from)
		l, err2 := time.Parse(time.DateOnly, to)
		if err1 != nil || err2 != nil {
			continue
		}
		for d := f; !d.After(l) && len(set) < 400; d = d.AddDate(0, 0, 1) {
			set[d.Format(time.DateOnly)] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, rows.Err()
}

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

// StatementsTaken counts the statements this process took, so that what
// reports on them (the reconciliation gauge) knows to read again.
func (s *Store) StatementsTaken() int64 { return s.statementsTaken.Load() }
