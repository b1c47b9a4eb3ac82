package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"payd"
)

// The reconciliation's reports: what the statements booked on booking
// dates of the bank's calendar, and what payd expected on the closed ones.

// MaxReconDays is the longest range a reconciliation report covers.
const MaxReconDays = 92

// ReconReport is the reconciliation of the booking dates f.From to f.To
// (payd.ReconReport), of one account or merchant, or of one outcome, when
// f says so.
func (s *Store) ReconReport(ctx context.Context, f payd.ReconFilter) (*payd.ReconReport, error) {
	from, err := time.Parse(time.DateOnly, f.From)
	if err != nil {
		return nil, fmt.Errorf("from %q: %w", f.From, err)
	}
	to, err := time.Parse(time.DateOnly, f.To)
	if err != nil || to.Before(from) {
		return nil, fmt.Errorf("to %q: not a date on or after from", f.To)
	}
	if to.Sub(from) >= MaxReconDays*24*time.Hour {
		return nil, fmt.Errorf("a report covers at most %d days", MaxReconDays)
	}
	rep := &payd.ReconReport{From: f.From, To: f.To}
	accounts, err := s.reportAccounts(ctx, f)
	if err != nil {
		return nil, err
	}
	if err := s.reportStatements(ctx, rep, accounts); err != nil {
		return nil, err
	}
	if err := s.reportUnits(ctx, rep, f, accounts); err != nil {
		return nil, err
	}
	if err := s.reportSums(ctx, rep, accounts); err != nil {
		return nil, err
	}
	closed, err := s.closedDays(ctx, rep.From, rep.To, accounts)
	if err != nil {
		return nil, err
	}
	for _, acct := range accounts {
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			date := d.Format(time.DateOnly)
			rep.Days = append(rep.Days, payd.ReconAccountDay{Account: acct, Date: date, Closed: closed[acct][date]})
			if closed[acct][date] && (f.Outcome == "" || f.Outcome == payd.ReconMissingInBank) {
				missing, err := s.missingInBank(ctx, acct, date, f.MerchantID)
				if err != nil {
					return nil, err
				}
				rep.Lines = append(rep.Lines, missing...)
			}
		}
	}
	if f.Outcome != "" {
		kept := rep.Lines[:0]
		for _, l := range rep.Lines {
			if l.Outcome == f.Outcome {
				kept = append(kept, l)
			}
		}
		rep.Lines = kept
	}
	return rep, nil
}

// reportAccounts are the accounts a report covers: the one asked for; the
// merchant's; else every account a statement reported or a merchant holds.
func (s *Store) reportAccounts(ctx context.Context, f payd.ReconFilter) ([]string, error) {
	var q string
	var args []any
	switch {
	case f.Account != "" && f.MerchantID != "":
		q, args = "SELECT iban FROM merchants WHERE iban = ? AND id = ?", []any{f.Account, f.MerchantID}
	case f.Account != "":
		return []string{f.Account}, nil
	case f.MerchantID != "":
		q, args = "SELECT iban FROM merchants WHERE id = ? AND iban IS NOT NULL AND iban <> ''", []any{f.MerchantID}
	default:
		q, args = `SELECT iban FROM merchants WHERE iban IS NOT NULL AND iban <> '' UNION
			SELECT account FROM recon_reports WHERE from_date <= ? AND to_date >= ?`, []any{f.To, f.From}
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		set[payd.NormalizeIBAN(a)] = true
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out, rows.Err()
}

func inAccounts(accounts []string) (string, []any) {
	if len(accounts) == 0 {
		return "(NULL)", nil
	}
	args := make([]any, len(accounts))
	for i, a := range accounts {
		args[i] = a
	}
	return "(" + placeholders(len(accounts)) + ")", args
}

func placeholders(n int) string {
	b := make([]byte, 0, 2*n)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '?')
	}
	return string(b)
}

func (s *Store) reportStatements(ctx context.Context, rep *payd.ReconReport, accounts []string) error {
	in, args := inAccounts(accounts)
	rows, err := s.query(ctx, `SELECT r.msg_id, d.kind, d.version, r.report_id, r.account, r.page, d.received_at, r.entries, r.superseded_by
		FROM recon_reports r JOIN recon_docs d ON d.msg_id = r.msg_id AND d.page = r.page
		WHERE r.from_date <= ? AND r.to_date >= ? AND r.account IN `+in+` ORDER BY d.received_at, r.msg_id, r.page, r.seq`,
		append([]any{rep.To, rep.From}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var si payd.StatementInfo
		var at int64
		var by sql.NullString
		if err := rows.Scan(&si.MsgID, &si.Kind, &si.Version, &si.StatementID, &si.Account, &si.Page, &at, &si.Entries, &by); err != nil {
			return err
		}
		si.ReceivedAt, si.SupersededBy = payd.UnixMilli(at), by.String
		rep.Statements = append(rep.Statements, si)
	}
	return rows.Err()
}

// reportUnits are the lines booked in the report's dates.
func (s *Store) reportUnits(ctx context.Context, rep *payd.ReconReport, f payd.ReconFilter, accounts []string) error {
	in, args := inAccounts(accounts)
	q := `SELECT u.entry_id, u.seq, u.outcome, u.class, u.basis, u.review, u.account, u.direction, u.amount, u.payd_amount, u.currency,
			u.booking_date, e.entry_ref, u.bank_ref, u.code, u.end_to_end_id, u.tx_id, u.item_kind, u.item_id, r.payment_id,
			COALESCE(p.merchant_id, r.merchant_id, (SELECT MIN(m.id) FROM merchants m WHERE m.iban = u.account)),
			u.note, u.noted_by, u.noted_at
		FROM recon_units u JOIN recon_entries e ON e.id = u.entry_id
		LEFT JOIN payments p ON u.item_kind = 'payment' AND p.id = u.item_id
		LEFT JOIN refunds r ON u.item_kind = 'refund' AND r.id = u.item_id
		WHERE u.booking_date >= ? AND u.booking_date <= ? AND u.account IN ` + in
	qargs := append([]any{rep.From, rep.To}, args...)
	if f.Outcome != "" {
		q += " AND u.outcome = ?"
		qargs = append(qargs, f.Outcome)
	}
	rows, err := s.query(ctx, q+" ORDER BY u.booking_date, u.account, u.entry_id, u.seq", qargs...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var l payd.ReconLine
		var amount int64
		var review int
		var paydAmount, notedAt sql.NullInt64
		var class, basis, eref, bref, e2e, txid, kind, item, refundPayment, merchant, note, by sql.NullString
		if err := rows.Scan(&l.EntryID, &l.Seq, &l.Outcome, &class, &basis, &review, &l.Account, &l.Direction, &amount, &paydAmount, &l.Currency,
			&l.BookingDate, &eref, &bref, &l.Code, &e2e, &txid, &kind, &item, &refundPayment, &merchant, &note, &by, &notedAt); err != nil {
			return err
		}
		if f.MerchantID != "" && merchant.String != f.MerchantID {
			continue
		}
		l.Amount, l.Class, l.Basis, l.Review = payd.Money(amount), class.String, basis.String, review == 1
		l.EntryRef, l.BankRef, l.EndToEndID, l.TxID, l.MerchantID = eref.String, bref.String, e2e.String, txid.String, merchant.String
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
		if note.Valid {
			l.Explained = &payd.Explanation{Note: note.String, By: by.String, At: payd.UnixMilli(notedAt.Int64)}
		}
		rep.Lines = append(rep.Lines, l)
	}
	return rows.Err()
}

// reportSums are the sums of the bank's that do not hold, of live reports
// of the report's accounts and dates.
func (s *Store) reportSums(ctx context.Context, rep *payd.ReconReport, accounts []string) error {
	in, args := inAccounts(accounts)
	rows, err := s.query(ctx, `SELECT x.kind, x.account, x.date, x.entry_id, x.expected, x.actual, x.currency, x.detail, x.msg_id
		FROM recon_sums x JOIN recon_reports r ON r.msg_id = x.msg_id AND r.page = x.page AND r.seq = x.seq
		WHERE r.superseded_by IS NULL AND x.date >= ? AND x.date <= ? AND x.account IN `+in+` ORDER BY x.date, x.account, x.msg_id, x.n`,
		append([]any{rep.From, rep.To}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var l payd.ReconLine
		var kind, msg string
		var entry sql.NullString
		var expected, actual int64
		if err := rows.Scan(&kind, &l.Account, &l.BookingDate, &entry, &expected, &actual, &l.Currency, &l.Detail, &msg); err != nil {
			return err
		}
		l.Outcome, l.Class, l.EntryID = payd.ReconSumMismatch, kind, entry.String
		l.Amount = payd.Money(expected)
		a := payd.Money(actual)
		l.PaydAmount = &a
		l.Detail = msg + ": " + l.Detail
		rep.Lines = append(rep.Lines, l)
	}
	return rows.Err()
}

// closedDays are, for each account, the dates between from and to that a
// live end-of-day report of it covers.
func (s *Store) closedDays(ctx context.Context, from, to string, accounts []string) (map[string]map[string]bool, error) {
	in, args := inAccounts(accounts)
	rows, err := s.query(ctx, `SELECT account, from_date, to_date FROM recon_reports
		WHERE end_of_day = 1 AND superseded_by IS NULL AND from_date <= ? AND to_date >= ? AND account IN `+in, append([]any{to, from}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var acct, f, t string
		if err := rows.Scan(&acct, &f, &t); err != nil {
			return nil, err
		}
		d0, err1 := time.Parse(time.DateOnly, max(f, from))
		d1, err2 := time.Parse(time.DateOnly, min(t, to))
		if err1 != nil || err2 != nil {
			continue
		}
		if out[acct] == nil {
			out[acct] = map[string]bool{}
		}
		for d := d0; !d.After(d1); d = d.AddDate(0, 0, 1) {
			out[acct][d.Format(time.DateOnly)] = true
		}
	}
	return out, rows.Err()
}

// missingInBank are the payments and accepted refunds of the merchants of
// acct executed on its bank date that no line books (a reversed one is
// reported as reversed, not here).
func (s *Store) missingInBank(ctx context.Context, acct, date, merchantID string) ([]payd.ReconLine, error) {
	start, end, err := s.bankDayBounds(date)
	if err != nil {
		return nil, err
	}
	unbooked := ` AND NOT EXISTS (SELECT 1 FROM recon_units u WHERE u.item_id = %s AND u.outcome IN ('matched','amount_mismatch','reversal','reversed'))`
	q := `SELECT 'payment', p.id, p.id, p.merchant_id, p.amount, p.currency, p.executed_at, p.rtp_id, p.qr_id, p.extension_id, p.network_ref
		FROM payments p JOIN merchants m ON m.id = p.merchant_id
		WHERE m.iban = ? AND ` + railsPayment + ` AND p.executed_at >= ? AND p.executed_at < ?` + fmt.Sprintf(unbooked, "p.id") + `
		UNION ALL
		SELECT 'refund', r.id, r.payment_id, r.merchant_id, r.amount, r.currency, r.executed_at, p.rtp_id, p.qr_id, p.extension_id, r.id
		FROM refunds r JOIN payments p ON p.id = r.payment_id JOIN merchants m ON m.id = r.merchant_id
		WHERE m.iban = ? AND r.status = 'Accepted' AND ` + railsPayment + ` AND r.executed_at >= ? AND r.executed_at < ?` + fmt.Sprintf(unbooked, "r.id")
	rows, err := s.query(ctx, q+" ORDER BY 7", acct, start, end, acct, start, end)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []payd.ReconLine
	for rows.Next() {
		var kind, id, payment, merchant, ccy string
		var rtp, qr, ext, ref sql.NullString
		var amount, at int64
		if err := rows.Scan(&kind, &id, &payment, &merchant, &amount, &ccy, &at, &rtp, &qr, &ext, &ref); err != nil {
			return nil, err
		}
		if merchantID != "" && merchant != merchantID {
			continue
		}
		l := payd.ReconLine{Outcome: payd.ReconMissingInBank, Account: acct, Amount: payd.Money(amount), Currency: ccy,
			BookingDate: date, PaymentID: payment, MerchantID: merchant, TxID: payd.NormalizeRef(ref.String)}
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

// ReconUnresolved counts what asks the operator to act, by outcome, over
// the booking dates from since to through (the reconciliation gauge): the
// lines not explained, and the payments and refunds of closed days no line
// books.
func (s *Store) ReconUnresolved(ctx context.Context, since, through string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, o := range payd.ReconOutcomes {
		if payd.Unresolved(o) {
			out[o] = 0
		}
	}
	rep, err := s.ReconReport(ctx, payd.ReconFilter{From: since, To: through})
	if err != nil {
		return nil, err
	}
	for _, l := range rep.Lines {
		if payd.Unresolved(l.Outcome) && l.Explained == nil {
			out[l.Outcome]++
		}
	}
	return out, nil
}

// AccountsWithoutStatement are the merchants' accounts (of active
// merchants with an IBAN) that no live end-of-day report covers for date:
// a day the bank did not close.
func (s *Store) AccountsWithoutStatement(ctx context.Context, date string) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT m.iban FROM merchants m WHERE m.active = 1 AND m.iban IS NOT NULL AND m.iban <> ''
		AND NOT EXISTS (SELECT 1 FROM recon_reports r WHERE r.account = m.iban AND r.end_of_day = 1 AND r.superseded_by IS NULL
			AND r.from_date <= ? AND r.to_date >= ?) ORDER BY m.iban`, date, date)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
