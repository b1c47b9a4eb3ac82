package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"payd"
)

// Reconciliation: the bank's statements taken once by MsgId, page and
// content, their bookings once however many documents carry them, and the
// lines those book matched to the payments and refunds they book
// (payd.MatchUnits decides; the store loads the candidates and keeps the
// outcomes), in the transaction that takes the statement.

// bankLoc is the bank's time zone, whose calendar booking dates are in:
// a payment at 00:30 in Chișinău is one of that day's.
var defaultBankLoc = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Chisinau")
	if err != nil {
		return time.UTC
	}
	return loc
}()

// SetBankLocation sets the bank's time zone (PAYD_BANK_TIMEZONE; by
// default Europe/Chisinau).
func (s *Store) SetBankLocation(loc *time.Location) { s.bankLoc.Store(loc) }

// BankLocation is the bank's time zone.
func (s *Store) BankLocation() *time.Location {
	if l := s.bankLoc.Load(); l != nil {
		return l
	}
	return defaultBankLoc
}

// bankDay is the bank-calendar date of t.
func (s *Store) bankDay(t time.Time) string { return t.In(s.BankLocation()).Format(time.DateOnly) }

// bankDayBounds are the first millisecond of date in the bank's time zone
// and that of the day after it.
func (s *Store) bankDayBounds(date string) (int64, int64, error) {
	d, err := time.ParseInLocation(time.DateOnly, date, s.BankLocation())
	if err != nil {
		return 0, 0, fmt.Errorf("date %q: %w", date, err)
	}
	return d.UnixMilli(), d.AddDate(0, 0, 1).UnixMilli(), nil
}

// ImportStatement takes a statement: each of its pages once, by MsgId,
// page and content (the same content again changes nothing; other content
// under a taken MsgId and page is payd.ErrStatementReused), its bookings
// once, a corrected end-of-day report superseding the one it corrects,
// the sums of each complete report checked, and its lines matched with
// the open lines of the same accounts, all in one transaction.
func (s *Store) ImportStatement(ctx context.Context, st *payd.Statement, source string, now time.Time) (payd.StatementTaken, error) {
	var out payd.StatementTaken
	digest := st.Digest()
	err := s.inTx(ctx, func(t *tx) error {
		out = payd.StatementTaken{}
		var was string
		switch err := t.queryRow(ctx, "SELECT digest FROM recon_docs WHERE msg_id = ? AND page = ?", st.MsgID, st.Page).Scan(&was); {
		case err == nil && (was == digest || was == ""):
			// ("": taken before payd kept digests; taken, whatever it held)
			return nil
		case err == nil:
			return payd.ErrStatementReused
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("take statement: %w", err)
		}
		out.Fresh = true
		eod := boolInt(st.EndOfDay)
		if _, err := t.exec(ctx, `INSERT INTO recon_docs (msg_id, page, kind, version, digest, last_page, source, created_at, received_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, st.MsgID, st.Page, st.Kind, st.Version, digest, boolInt(st.LastPage), source,
			ms(st.CreatedAt), ms(now)); err != nil {
			return fmt.Errorf("take statement: %w", err)
		}
		var fresh []payd.ReconUnit
		accounts := map[string][2]string{}
		for i := range st.Reports {
			r := &st.Reports[i]
			bal, _ := json.Marshal(r.Balances)
			sum, _ := json.Marshal(r.Summary)
			if _, err := t.exec(ctx, `INSERT INTO recon_reports (msg_id, page, seq, report_id, account, end_of_day, from_date, to_date, elec_seq,
				legal_seq, stmt_page, last_page, entries, balances, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				st.MsgID, st.Page, i, r.ID, r.Account, eod, r.From, r.To, nullStr(r.ElectronicSeq), nullStr(r.LegalSeq), nullInt(r.Page),
				boolInt(r.LastPage), len(r.Entries), string(bal), string(sum)); err != nil {
				return fmt.Errorf("take statement report: %w", err)
			}
			w := accounts[r.Account]
			for _, e := range r.Entries {
				units, isNew, err := t.takeEntry(ctx, st.MsgID, st.Page, i, e, now)
				if err != nil {
					return err
				}
				out.Entries++
				if isNew {
					out.New++
				}
				fresh = append(fresh, units...)
				if w[0] == "" || e.BookingDate < w[0] {
					w[0] = e.BookingDate
				}
				if e.BookingDate > w[1] {
					w[1] = e.BookingDate
				}
			}
			if w[0] == "" {
				w = [2]string{r.From, r.To}
			}
			accounts[r.Account] = w
			if st.EndOfDay {
				superseded, units, err := t.supersede(ctx, st.MsgID, st.Page, i, r)
				if err != nil {
					return err
				}
				out.Superseded = append(out.Superseded, superseded...)
				fresh = append(fresh, units...)
			}
			if err := t.checkSums(ctx, st, i); err != nil {
				return err
			}
		}
		return t.matchUnits(ctx, fresh, accounts, now)
	})
	if err == nil && out.Fresh {
		s.statementsTaken.Add(1)
	}
	return out, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// takeEntry records one booking of a report: once (a booking payd knows
// keeps its lines), with the details a later document brings (a camt.054
// detailing in several transactions what the camt.053 booked as one: the
// lines of the more detailed document replace the others, and are matched
// again). It returns the lines to match.
func (t *tx) takeEntry(ctx context.Context, msgID string, page, seq int, e payd.StatementEntry, now time.Time) ([]payd.ReconUnit, bool, error) {
	if _, err := t.exec(ctx, `INSERT INTO recon_entry_docs (entry_id, msg_id, page, seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		e.ID, msgID, page, seq); err != nil {
		return nil, false, fmt.Errorf("take statement entry: %w", err)
	}
	res, err := t.exec(ctx, `INSERT INTO recon_entries (id, account, booking_date, value_date, direction, amount, currency, reversal, entry_ref,
		bank_ref, code, batch_count, tx_count, first_msg, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.Account, e.BookingDate, nullStr(e.ValueDate), e.Direction, int64(e.Amount), e.Currency, boolInt(e.Reversal), nullStr(e.EntryRef),
		nullStr(e.BankRef), e.Code.String(), e.BatchCount, len(e.Txs), msgID, ms(now))
	if err != nil {
		return nil, false, fmt.Errorf("take statement entry: %w", err)
	}
	units := payd.UnitsOf(e)
	if n, _ := res.RowsAffected(); n == 1 {
		return units, true, t.insertUnits(ctx, units)
	}
	// Known: does this document detail it more than what payd has?
	var known int
	if err := t.queryRow(ctx, "SELECT tx_count FROM recon_entries WHERE id = ?", e.ID).Scan(&known); err != nil {
		return nil, false, err
	}
	if len(e.Txs) <= known || len(e.Txs) < 2 {
		return nil, false, nil
	}
	if _, err := t.exec(ctx, "DELETE FROM recon_units WHERE entry_id = ?", e.ID); err != nil {
		return nil, false, err
	}
	if _, err := t.exec(ctx, "UPDATE recon_entries SET tx_count = ? WHERE id = ?", len(e.Txs), e.ID); err != nil {
		return nil, false, err
	}
	return units, false, t.insertUnits(ctx, units)
}

func (t *tx) insertUnits(ctx context.Context, units []payd.ReconUnit) error {
	for _, u := range units {
		if _, err := t.exec(ctx, `INSERT INTO recon_units (entry_id, seq, account, booking_date, direction, amount, no_amount, currency, reversal,
			lump, code, end_to_end_id, tx_id, bank_ref, refs, outcome, review) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'missing_in_payd', 0)`,
			u.EntryID, u.Seq, u.Account, u.BookingDate, u.Direction, int64(u.Amount), boolInt(u.NoAmount), u.Currency, boolInt(u.Reversal),
			boolInt(u.Lump), u.Code.String(), nullStr(u.EndToEndID), nullStr(u.TxID), nullStr(u.BankRef), strings.Join(u.Refs, " ")); err != nil {
			return fmt.Errorf("take statement line: %w", err)
		}
	}
	return nil
}

// supersede makes the end-of-day report just taken replace the live ones
// it corrects: of its account, from another document, for the same
// period or with its sequence number. A booking they carried and this one
// does not is superseded (its lines' items free again) unless another
// live document carries it. It returns the MsgIds superseded and the
// lines whose state that changed, to match.
func (t *tx) supersede(ctx context.Context, msgID string, page, seq int, r *payd.StatementReport) ([]string, []payd.ReconUnit, error) {
	rows, err := t.query(ctx, `SELECT msg_id, page, seq FROM recon_reports WHERE account = ? AND end_of_day = 1 AND superseded_by IS NULL
		AND msg_id <> ? AND ((from_date = ? AND to_date = ?) OR (elec_seq IS NOT NULL AND elec_seq = ?) OR (legal_seq IS NOT NULL AND legal_seq = ?))`,
		r.Account, msgID, r.From, r.To, r.ElectronicSeq, r.LegalSeq)
	if err != nil {
		return nil, nil, err
	}
	type key struct {
		msg       string
		page, seq int
	}
	var old []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.msg, &k.page, &k.seq); err != nil {
			rows.Close()
			return nil, nil, err
		}
		old = append(old, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(old) == 0 {
		return nil, nil, err
	}
	var msgs []string
	for _, k := range old {
		if _, err := t.exec(ctx, "UPDATE recon_reports SET superseded_by = ? WHERE msg_id = ? AND page = ? AND seq = ?", msgID, k.msg, k.page, k.seq); err != nil {
			return nil, nil, err
		}
		if len(msgs) == 0 || msgs[len(msgs)-1] != k.msg {
			msgs = append(msgs, k.msg)
		}
		// Its bookings that no live document carries any more.
		if _, err := t.exec(ctx, `UPDATE recon_units SET outcome = 'superseded', item_kind = NULL, item_id = NULL, payd_amount = NULL, class = NULL,
			basis = NULL, review = 0 WHERE entry_id IN (SELECT d.entry_id FROM recon_entry_docs d WHERE d.msg_id = ? AND d.page = ? AND d.seq = ?)
			AND NOT EXISTS (SELECT 1 FROM recon_entry_docs o JOIN recon_reports r ON r.msg_id = o.msg_id AND r.page = o.page AND r.seq = o.seq
				WHERE o.entry_id = recon_units.entry_id AND r.superseded_by IS NULL)`, k.msg, k.page, k.seq); err != nil {
			return nil, nil, err
		}
	}
	return msgs, nil, nil
}

// checkSums checks the sums of the report at seq of st and keeps what
// does not hold: its batches as each page comes; its balances and summary
// once every page of it has arrived (a report of one page as it comes; one
// of several, MsgPgntn or StmtPgntn, when its last missing page completes
// it, over the bookings of all its pages).
func (t *tx) checkSums(ctx context.Context, st *payd.Statement, seq int) error {
	r := &st.Reports[seq]
	found := payd.CheckBatches(r)
	paged := !(st.Page == 1 && st.LastPage) || r.Page > 1 || r.Page == 1 && !r.LastPage
	whole := r
	if paged {
		full, _, err := t.pagedReport(ctx, st, seq)
		if err != nil {
			return err
		}
		whole = full
	}
	if whole != nil {
		found = append(found, payd.CheckTotals(whole)...)
	}
	for n, m := range found {
		if _, err := t.exec(ctx, `INSERT INTO recon_sums (msg_id, page, seq, n, kind, account, date, entry_id, expected, actual, currency, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, st.MsgID, st.Page, seq, n, m.Kind, m.Account, m.Date, nullStr(m.EntryID),
			int64(m.Expected), int64(m.Actual), m.Currency, m.Detail); err != nil {
			return err
		}
	}
	return nil
}

// pagedReport is the whole of a report given in pages, once its last page
// and every page before it are here: the pages of its MsgId (MsgPgntn),
// or the reports of its id and account (StmtPgntn). ok false while pages
// are missing.
func (t *tx) pagedReport(ctx context.Context, st *payd.Statement, seq int) (*payd.StatementReport, bool, error) {
	r := st.Reports[seq]
	rows, err := t.query(ctx, `SELECT r.msg_id, r.page, r.seq, COALESCE(r.stmt_page, 0), r.last_page, d.last_page, r.balances, r.summary
		FROM recon_reports r JOIN recon_docs d ON d.msg_id = r.msg_id AND d.page = r.page
		WHERE r.account = ? AND r.report_id = ? AND r.superseded_by IS NULL AND (r.msg_id = ? OR r.stmt_page IS NOT NULL)`, r.Account, r.ID, st.MsgID)
	if err != nil {
		return nil, false, err
	}
	full := payd.StatementReport{ID: r.ID, Account: r.Account, AccountCcy: r.AccountCcy, From: r.From, To: r.To}
	type part struct {
		msg       string
		page, seq int
	}
	var parts []part
	pages := map[int]bool{}
	last := 0
	for rows.Next() {
		var p part
		var stmtPage, repLast, docLast int
		var bal, sum sql.NullString
		if err := rows.Scan(&p.msg, &p.page, &p.seq, &stmtPage, &repLast, &docLast, &bal, &sum); err != nil {
			rows.Close()
			return nil, false, err
		}
		n, isLast := p.page, docLast == 1
		if stmtPage > 0 {
			n, isLast = stmtPage, repLast == 1
		}
		pages[n] = true
		if isLast {
			last = n
		}
		var bs []payd.Balance
		json.Unmarshal([]byte(bal.String), &bs)
		full.Balances = append(full.Balances, bs...)
		var summary *payd.TxSummary
		if json.Unmarshal([]byte(sum.String), &summary) == nil && summary != nil {
			full.Summary = summary
		}
		parts = append(parts, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	for n := 1; n <= last; n++ {
		if !pages[n] {
			return nil, false, nil
		}
	}
	if last == 0 {
		return nil, false, nil
	}
	for _, p := range parts {
		es, err := t.entriesOfDoc(ctx, p.msg, p.page, p.seq)
		if err != nil {
			return nil, false, err
		}
		full.Entries = append(full.Entries, es...)
	}
	return &full, true, nil
}

// entriesOfDoc are the bookings a document's report carried (their
// lines' amounts as the transactions of a detailed one).
func (t *tx) entriesOfDoc(ctx context.Context, msgID string, page, seq int) ([]payd.StatementEntry, error) {
	rows, err := t.query(ctx, `SELECT e.id, e.booking_date, e.direction, e.amount, e.currency, e.batch_count
		FROM recon_entries e JOIN recon_entry_docs d ON d.entry_id = e.id WHERE d.msg_id = ? AND d.page = ? AND d.seq = ? ORDER BY e.id`,
		msgID, page, seq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []payd.StatementEntry
	for rows.Next() {
		var e payd.StatementEntry
		var amount int64
		if err := rows.Scan(&e.ID, &e.BookingDate, &e.Direction, &amount, &e.Currency, &e.BatchCount); err != nil {
			return nil, err
		}
		e.Amount = payd.Money(amount)
		out = append(out, e)
	}
	return out, rows.Err()
}

// reconWindow is how far around the lines' booking dates their items and
// the accounts' open lines are looked for.
const reconWindow = 3 * 24 * time.Hour

// matchUnits matches lines with the open lines of their accounts (missing
// in payd or duplicates, whose payment may have come since) within the
// window of their dates, and keeps the outcomes.
func (t *tx) matchUnits(ctx context.Context, units []payd.ReconUnit, accounts map[string][2]string, now time.Time) error {
	if len(accounts) == 0 {
		return nil
	}
	known := map[string]bool{}
	seen := map[string]bool{}
	for _, u := range units {
		seen[u.Key()] = true
	}
	var items []payd.ReconItem
	for acct, w := range accounts {
		if w[0] == "" {
			continue
		}
		from, _, err := t.s.bankDayBounds(w[0])
		if err != nil {
			return err
		}
		_, to, err := t.s.bankDayBounds(w[1])
		if err != nil {
			return err
		}
		win := int64(reconWindow / time.Millisecond)
		open, err := t.openUnits(ctx, acct, t.s.bankDay(payd.UnixMilli(from-win)), t.s.bankDay(payd.UnixMilli(to+win)))
		if err != nil {
			return err
		}
		for _, u := range open {
			if !seen[u.Key()] {
				seen[u.Key()] = true
				units = append(units, u)
			}
		}
		its, err := t.reconItems(ctx, acct, from-2*win, to+2*win)
		if err != nil {
			return err
		}
		items = append(items, its...)
		var one int
		switch err := t.queryRow(ctx, "SELECT 1 FROM merchants WHERE iban = ? LIMIT 1", acct).Scan(&one); {
		case err == nil:
			known[acct] = true
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	if len(units) == 0 {
		return nil
	}
	booked, err := t.bookings(ctx, items)
	if err != nil {
		return err
	}
	sort.SliceStable(units, func(i, j int) bool {
		if units[i].BookingDate != units[j].BookingDate {
			return units[i].BookingDate < units[j].BookingDate
		}
		if units[i].Reversal != units[j].Reversal {
			return !units[i].Reversal // what a reversal takes back first
		}
		return units[i].Key() < units[j].Key()
	})
	for _, m := range payd.MatchUnits(units, items, booked, func(a string) bool { return known[a] }) {
		if _, err := t.exec(ctx, `UPDATE recon_units SET outcome = ?, class = ?, basis = ?, review = ?, item_kind = ?, item_id = ?, payd_amount = ?
			WHERE entry_id = ? AND seq = ?`, m.Outcome, nullStr(m.Class), nullStr(m.Basis), boolInt(m.Review), nullStr(m.ItemKind),
			nullStr(m.ItemID), itemAmount(m.ItemID, m.PaydAmount), m.EntryID, m.Seq); err != nil {
			return fmt.Errorf("keep match: %w", err)
		}
	}
	return nil
}

// itemAmount is payd's amount of a match's item, NULL without one.
func itemAmount(item string, m payd.Money) any {
	if item == "" {
		return nil
	}
	return int64(m)
}

const unitCols = `entry_id, seq, account, booking_date, direction, amount, no_amount, currency, reversal, lump, code, end_to_end_id, tx_id, bank_ref, refs`

func scanUnit(sc scanner) (payd.ReconUnit, error) {
	var u payd.ReconUnit
	var amount int64
	var noAmount, reversal, lump int
	var code string
	var e2e, txID, bref sql.NullString
	var refs string
	if err := sc.Scan(&u.EntryID, &u.Seq, &u.Account, &u.BookingDate, &u.Direction, &amount, &noAmount, &u.Currency, &reversal, &lump, &code,
		&e2e, &txID, &bref, &refs); err != nil {
		return u, err
	}
	u.Amount, u.NoAmount, u.Reversal, u.Lump = payd.Money(amount), noAmount == 1, reversal == 1, lump == 1
	u.Code, u.EndToEndID, u.TxID, u.BankRef = parseCode(code), e2e.String, txID.String, bref.String
	u.Refs = strings.Fields(refs)
	return u, nil
}

// parseCode reads BankTxCode.String back.
func parseCode(s string) payd.BankTxCode {
	var c payd.BankTxCode
	iso, prop, _ := strings.Cut(s, " ")
	if !strings.Contains(iso, "/") {
		iso, prop = "", s
	}
	parts := strings.Split(iso, "/")
	if len(parts) == 3 {
		c.Domain, c.Family, c.SubFamily = parts[0], parts[1], parts[2]
	}
	c.Proprietary = prop
	return c
}

// openUnits are an account's lines booked between two dates that are
// missing in payd or duplicates.
func (t *tx) openUnits(ctx context.Context, acct, from, to string) ([]payd.ReconUnit, error) {
	rows, err := t.query(ctx, `SELECT `+unitCols+` FROM recon_units WHERE outcome IN ('missing_in_payd','duplicate')
		AND account = ? AND booking_date >= ? AND booking_date <= ?`, acct, from, to)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scanUnit)
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

// bookings are how the items are booked already: by a line that matched
// them, and whether a reversal took that back.
func (t *tx) bookings(ctx context.Context, items []payd.ReconItem) (map[string]payd.Booking, error) {
	out := map[string]payd.Booking{}
	for i := 0; i < len(items); i += 500 {
		chunk := items[i:min(i+500, len(items))]
		args := make([]any, len(chunk))
		for k, it := range chunk {
			args[k] = it.ID
		}
		rows, err := t.query(ctx, `SELECT item_kind, item_id, entry_id, seq, outcome, review FROM recon_units
			WHERE outcome IN ('matched','amount_mismatch','reversal','reversed') AND item_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var kind, item, entry, outcome string
			var seq, review int
			if err := rows.Scan(&kind, &item, &entry, &seq, &outcome, &review); err != nil {
				rows.Close()
				return nil, err
			}
			key := kind + ":" + item
			b := out[key]
			switch outcome {
			case payd.ReconMatched, payd.ReconAmountMismatch:
				if !b.Reversed {
					b.Unit, b.Review = entry+"/"+fmt.Sprint(seq), review == 1
				}
			default:
				b = payd.Booking{Unit: entry + "/" + fmt.Sprint(seq), Reversed: true}
			}
			out[key] = b
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MatchAgain matches again the open lines (missing in payd, duplicates)
// booked from from to to (the bank's calendar) on every account, against
// the payments and refunds of the window around them: what arrived late
// (a credit sent again after two days, a quiet day's payment) resolves.
// The operator's run is audited. It returns how many lines it matched.
func (s *Store) MatchAgain(ctx context.Context, from, to, actor string, now time.Time) (int, error) {
	if _, _, err := s.bankDayBounds(from); err != nil {
		return 0, err
	}
	if _, _, err := s.bankDayBounds(to); err != nil {
		return 0, err
	}
	n := 0
	err := s.inTx(ctx, func(t *tx) error {
		rows, err := t.query(ctx, `SELECT DISTINCT account FROM recon_units WHERE outcome IN ('missing_in_payd','duplicate')
			AND booking_date >= ? AND booking_date <= ?`, from, to)
		if err != nil {
			return err
		}
		accounts := map[string][2]string{}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				rows.Close()
				return err
			}
			accounts[a] = [2]string{from, to}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var before int
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM recon_units WHERE outcome IN ('matched','amount_mismatch')`).Scan(&before); err != nil {
			return err
		}
		if err := t.matchUnits(ctx, nil, accounts, now); err != nil {
			return err
		}
		var after int
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM recon_units WHERE outcome IN ('matched','amount_mismatch')`).Scan(&after); err != nil {
			return err
		}
		n = after - before
		_, err = t.exec(ctx, `INSERT INTO recon_audit (at, actor, action, note) VALUES (?, ?, 'match_again', ?)`, ms(now), actor,
			fmt.Sprintf("%s to %s: %d lines matched", from, to, n))
		return err
	})
	return n, err
}

// Explain records an operator's explanation of a line (of entry entryID,
// its seq'th): it asks nothing more of anyone, and the report says who
// explained it, when and why; the action is audited. ErrNotFound for a
// line payd does not have.
func (s *Store) Explain(ctx context.Context, entryID string, seq int, note, actor string, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		res, err := t.exec(ctx, "UPDATE recon_units SET note = ?, noted_by = ?, noted_at = ? WHERE entry_id = ? AND seq = ?",
			note, actor, ms(now), entryID, seq)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrNotFound
		}
		_, err = t.exec(ctx, `INSERT INTO recon_audit (at, actor, action, entry_id, seq, note) VALUES (?, ?, 'explain', ?, ?, ?)`,
			ms(now), actor, entryID, seq, note)
		return err
	})
}

// ReconAudit are the last n operator actions on the reconciliation,
// newest first.
func (s *Store) ReconAudit(ctx context.Context, n int) ([]payd.ReconAction, error) {
	rows, err := s.query(ctx, `SELECT at, actor, action, COALESCE(entry_id, ''), COALESCE(seq, 0), note FROM recon_audit
		ORDER BY id DESC LIMIT ?`, n)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(sc scanner) (payd.ReconAction, error) {
		var a payd.ReconAction
		var at int64
		err := sc.Scan(&at, &a.Actor, &a.Action, &a.EntryID, &a.Seq, &a.Note)
		a.At = payd.UnixMilli(at)
		return a, err
	})
}

// StatementsTaken counts the statements this process took, so that what
// reports on them (the reconciliation gauge) knows to read again.
func (s *Store) StatementsTaken() int64 { return s.statementsTaken.Load() }
