package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"payd"
)

// SetQRInactivity sets the idle period after which Static and Hybrid QRs
// become Inactive (default 30 days).
func (s *Store) SetQRInactivity(d time.Duration) { s.inactivity = d }

func (s *Store) qrInactivity() time.Duration {
	if s.inactivity == 0 {
		return payd.DefaultQRInactivity
	}
	return s.inactivity
}

const qrCols = `q.id, q.merchant_id, q.type, q.amount_type, q.currency, q.terminal_id, q.status, q.extension_id,
	e.status, q.amount, q.amount_min, q.amount_max, q.description, q.order_id, q.callback_url, q.redirect_url,
	q.expires_at, q.idle_from, q.checkout_id, q.cancel_reason, q.created_at, q.updated_at`

const qrFrom = ` FROM qrs q LEFT JOIN qr_extensions e ON e.id = q.extension_id`

func nullMoney(v sql.NullInt64) *payd.Money {
	if !v.Valid {
		return nil
	}
	m := payd.Money(v.Int64)
	return &m
}

func moneyArg(m *payd.Money) any {
	if m == nil {
		return nil
	}
	return int64(*m)
}

func scanQR(sc scanner) (*payd.QR, error) {
	var q payd.QR
	var typ, at, status string
	var term, ext, extStatus, desc, order, cb, redir, co, reason sql.NullString
	var amount, min, max, expires sql.NullInt64
	var idle, created, updated int64
	if err := sc.Scan(&q.ID, &q.MerchantID, &typ, &at, &q.Currency, &term, &status, &ext, &extStatus, &amount, &min, &max,
		&desc, &order, &cb, &redir, &expires, &idle, &co, &reason, &created, &updated); err != nil {
		return nil, notFound(err)
	}
	q.Type, q.AmountType, q.Status = payd.QRType(typ), payd.AmountType(at), payd.QRStatus(status)
	q.TerminalID, q.ExtensionID, q.ExtStatus = term.String, ext.String, payd.ExtensionStatus(extStatus.String)
	q.Amounts = payd.Amounts{Amount: nullMoney(amount), Min: nullMoney(min), Max: nullMoney(max)}
	q.Description, q.OrderID, q.CallbackURL, q.RedirectURL = desc.String, order.String, cb.String, redir.String
	q.ExpiresAt, q.IdleFrom = fromNullMS(expires), payd.UnixMilli(idle)
	q.CheckoutID, q.CancelReason = co.String, reason.String
	q.CreatedAt, q.UpdatedAt = payd.UnixMilli(created), payd.UnixMilli(updated)
	return &q, nil
}

const extCols = `x.id, x.qr_id, x.merchant_id, x.status, x.amount, x.amount_min, x.amount_max, x.description, x.order_id,
	x.callback_url, x.redirect_url, x.created_at, x.updated_at, x.expires_at`

func scanExtension(sc scanner) (*payd.Extension, error) {
	var e payd.Extension
	var status string
	var order, cb, redir sql.NullString
	var amount, min, max sql.NullInt64
	var created, updated, expires int64
	if err := sc.Scan(&e.ID, &e.QRID, &e.MerchantID, &status, &amount, &min, &max, &e.Description, &order, &cb, &redir,
		&created, &updated, &expires); err != nil {
		return nil, notFound(err)
	}
	e.Status = payd.ExtensionStatus(status)
	e.Amounts = payd.Amounts{Amount: nullMoney(amount), Min: nullMoney(min), Max: nullMoney(max)}
	e.OrderID, e.CallbackURL, e.RedirectURL = order.String, cb.String, redir.String
	e.CreatedAt, e.UpdatedAt, e.ExpiresAt = payd.UnixMilli(created), payd.UnixMilli(updated), payd.UnixMilli(expires)
	return &e, nil
}

func (t *tx) insertExtension(ctx context.Context, e *payd.Extension) error {
	_, err := t.exec(ctx, `INSERT INTO qr_extensions (id, qr_id, merchant_id, status, amount, amount_min, amount_max, description,
		order_id, callback_url, redirect_url, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.QRID, e.MerchantID, string(e.Status), moneyArg(e.Amounts.Amount), moneyArg(e.Amounts.Min), moneyArg(e.Amounts.Max),
		e.Description, nullStr(e.OrderID), nullStr(e.CallbackURL), nullStr(e.RedirectURL), ms(e.CreatedAt), ms(e.UpdatedAt), ms(e.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert extension: %w", err)
	}
	return nil
}

// CreateQR stores a new QR and, for a Hybrid, its first extension.
func (s *Store) CreateQR(ctx context.Context, q *payd.QR, ext *payd.Extension) error {
	return s.inTx(ctx, func(t *tx) error { return t.insertQR(ctx, q, ext) })
}

func (t *tx) insertQR(ctx context.Context, q *payd.QR, ext *payd.Extension) error {
	_, err := t.exec(ctx, `INSERT INTO qrs (id, merchant_id, type, amount_type, currency, terminal_id, status, extension_id,
		amount, amount_min, amount_max, description, order_id, callback_url, redirect_url, expires_at, idle_from, checkout_id,
		created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		q.ID, q.MerchantID, string(q.Type), string(q.AmountType), q.Currency, nullStr(q.TerminalID), string(q.Status),
		nullStr(q.ExtensionID), moneyArg(q.Amounts.Amount), moneyArg(q.Amounts.Min), moneyArg(q.Amounts.Max),
		nullStr(q.Description), nullStr(q.OrderID), nullStr(q.CallbackURL), nullStr(q.RedirectURL), nullMS(q.ExpiresAt),
		ms(q.IdleFrom), nullStr(q.CheckoutID), ms(q.CreatedAt), ms(q.UpdatedAt))
	if err != nil {
		return fmt.Errorf("insert qr: %w", err)
	}
	if ext != nil {
		if err := t.insertExtension(ctx, ext); err != nil {
			return err
		}
	}
	return t.registerQR(ctx, nil, q, q.CreatedAt)
}

// QR reads one of the merchant's QRs as of now; merchantID "" reads any
// merchant's (the public QR page and image).
func (s *Store) QR(ctx context.Context, merchantID, id string, now time.Time) (*payd.QR, error) {
	q := "SELECT " + qrCols + qrFrom + " WHERE q.id = ?"
	args := []any{id}
	if merchantID != "" {
		q += " AND q.merchant_id = ?"
		args = append(args, merchantID)
	}
	qr, err := scanQR(s.queryRow(ctx, q, args...))
	if err != nil {
		return nil, err
	}
	qr.Observe(now, s.qrInactivity())
	return qr, nil
}

// lockQR loads a QR under its row lock; merchantID "" loads any merchant's.
func (t *tx) lockQR(ctx context.Context, merchantID, id string) (*payd.QR, error) {
	if merchantID == "" {
		return scanQR(t.queryRow(ctx, "SELECT "+qrCols+qrFrom+" WHERE q.id = ?"+t.s.d.forUpdateOf("q"), id))
	}
	return scanQR(t.queryRow(ctx, "SELECT "+qrCols+qrFrom+" WHERE q.id = ? AND q.merchant_id = ?"+t.s.d.forUpdateOf("q"), id, merchantID))
}

// lockQRForCredit loads, under its row lock, the QR target names (its own
// id, or one of its extensions'), with its merchant: one statement.
func (t *tx) lockQRForCredit(ctx context.Context, target string) (*payd.QR, *payd.Merchant, error) {
	q := "SELECT " + qrCols + ", " + merchantCols + qrFrom + " JOIN merchants m ON m.id = q.merchant_id" +
		" WHERE q.id = COALESCE((SELECT x.qr_id FROM qr_extensions x WHERE x.id = ?), ?)" + t.s.d.forUpdateOf("q")
	var m *payd.Merchant
	qr, err := scanQR(scanFunc(func(qr ...any) error {
		var err error
		m, err = t.s.scanMerchant(scanFunc(func(merchant ...any) error {
			return t.queryRow(ctx, q, target, target).Scan(append(qr, merchant...)...)
		}))
		return err
	}))
	if err != nil {
		return nil, nil, notFound(err)
	}
	return qr, m, nil
}

// saveQR writes q's state, guarded by the stored status and extension it
// was loaded with, and the status of its current extension.
func (t *tx) saveQR(ctx context.Context, q *payd.QR, fromStatus payd.QRStatus, fromExt string) error {
	// Queued with the transaction's other writes on PostgreSQL (postgres/writes.go):
	// the row is locked, and a guard that misses ends the transaction.
	err := t.write(ctx, 1, payd.ErrConflict, `UPDATE qrs SET status = ?, extension_id = ?, amount = ?, amount_min = ?, amount_max = ?,
		description = ?, order_id = ?, callback_url = ?, redirect_url = ?, expires_at = ?, idle_from = ?, cancel_reason = ?,
		updated_at = ? WHERE id = ? AND status = ? AND COALESCE(extension_id, '') = ?`,
		string(q.Status), nullStr(q.ExtensionID), moneyArg(q.Amounts.Amount), moneyArg(q.Amounts.Min), moneyArg(q.Amounts.Max),
		nullStr(q.Description), nullStr(q.OrderID), nullStr(q.CallbackURL), nullStr(q.RedirectURL), nullMS(q.ExpiresAt),
		ms(q.IdleFrom), nullStr(q.CancelReason), ms(q.UpdatedAt), q.ID, string(fromStatus), fromExt)
	if err != nil {
		return fmt.Errorf("save qr %s: %w", q.ID, err)
	}
	return t.event(ctx, q.MerchantID, payd.ObjectQR, q.ID, string(fromStatus), string(q.Status), q.UpdatedAt)
}

// setExtensionStatus ends one of the QR's extensions if it is still Active.
func (t *tx) setExtensionStatus(ctx context.Context, q *payd.QR, id string, st payd.ExtensionStatus, at time.Time) error {
	res, err := t.exec(ctx, "UPDATE qr_extensions SET status = ?, updated_at = ? WHERE id = ? AND status = 'Active'", string(st), ms(at), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil
	}
	return t.event(ctx, q.MerchantID, payd.ObjectExtension, id, string(payd.ExtActive), string(st), at)
}

// updateQR runs a transition on one of the merchant's QRs under its row
// lock, observing time first, and saves it.
func (s *Store) updateQR(ctx context.Context, merchantID, id string, now time.Time, f func(t *tx, q *payd.QR) error) (*payd.QR, error) {
	var q *payd.QR
	err := s.inTx(ctx, func(t *tx) error {
		var err error
		if q, err = t.lockQR(ctx, merchantID, id); err != nil {
			return err
		}
		return t.transitionQR(ctx, q, now, f)
	})
	return q, err
}

// transitionQR runs a transition on q, locked: observes time first (and
// ends an extension that expired), runs f and saves q.
func (t *tx) transitionQR(ctx context.Context, q *payd.QR, now time.Time, f func(t *tx, q *payd.QR) error) error {
	fromStatus, fromExt, extWas := q.Status, q.ExtensionID, q.ExtStatus
	stored := *q
	q.Observe(now, t.s.qrInactivity())
	if extWas == payd.ExtActive && q.ExtStatus == payd.ExtExpired {
		if err := t.setExtensionStatus(ctx, q, fromExt, payd.ExtExpired, q.UpdatedAt); err != nil {
			return err
		}
	}
	if err := f(t, q); err != nil {
		return err
	}
	if err := t.saveQR(ctx, q, fromStatus, fromExt); err != nil {
		return err
	}
	return t.registerQR(ctx, &stored, q, now)
}

// CancelQR cancels a QR and its active extension.
func (s *Store) CancelQR(ctx context.Context, merchantID, id, reason string, now time.Time) (*payd.QR, error) {
	return s.updateQR(ctx, merchantID, id, now, func(t *tx, q *payd.QR) error {
		ext, err := q.Cancel(now, reason)
		if err != nil || ext == "" {
			return err
		}
		return t.setExtensionStatus(ctx, q, ext, payd.ExtCancelled, now)
	})
}

// CreateExtension gives a Hybrid QR new terms; the previous active
// extension is Replaced.
func (s *Store) CreateExtension(ctx context.Context, merchantID, id string, in payd.ExtensionInput, now time.Time) (*payd.Extension, error) {
	var ext *payd.Extension
	_, err := s.updateQR(ctx, merchantID, id, now, func(t *tx, q *payd.QR) error {
		var replaced string
		var err error
		if ext, replaced, err = q.Extend(now, in); err != nil {
			return err
		}
		if replaced != "" {
			if err := t.setExtensionStatus(ctx, q, replaced, payd.ExtReplaced, now); err != nil {
				return err
			}
		}
		return t.insertExtension(ctx, ext)
	})
	return ext, err
}

// CancelExtension cancels a Hybrid QR's active extension.
func (s *Store) CancelExtension(ctx context.Context, merchantID, id string, now time.Time) (string, error) {
	var extID string
	_, err := s.updateQR(ctx, merchantID, id, now, func(t *tx, q *payd.QR) error {
		var err error
		if extID, err = q.CancelExtension(now); err != nil {
			return err
		}
		return t.setExtensionStatus(ctx, q, extID, payd.ExtCancelled, now)
	})
	return extID, err
}

// qrStatusExpr is a QR's status as of now (args: inactivity ms, now, now).
const qrStatusExpr = `CASE
	WHEN q.status IN ('Active','Expired') AND q.type <> 'Dynamic' AND q.idle_from + ? <= ? THEN 'Inactive'
	WHEN q.status = 'Active' AND q.expires_at <= ? AND (q.type = 'Dynamic' OR e.status = 'Active') THEN 'Expired'
	ELSE q.status END`

// QRFilter selects QRs for the list.
type QRFilter struct {
	MerchantID    string
	QRID          string
	ExtensionID   string
	OrderID       string
	Description   string
	Type          string
	AmountType    string
	Status        string
	TerminalID    string
	AmountFrom    *payd.Money
	AmountTo      *payd.Money
	CreatedFrom   *time.Time
	CreatedTo     *time.Time
	ExpiresFrom   *time.Time
	ExpiresTo     *time.Time
	SortBy        string
	Desc          bool
	Count, Offset int
}

var qrSortCols = map[string]string{
	"orderId": "q.order_id", "type": "q.type", "amountType": "q.amount_type", "createdAt": "q.created_at", "expiresAt": "q.expires_at",
}

// QRs lists the QRs matching f as of now and counts all matches.
func (s *Store) QRs(ctx context.Context, f QRFilter, now time.Time) ([]*payd.QR, int, error) {
	inact := s.qrInactivity().Milliseconds()
	var w where
	w.add("q.merchant_id = ?", f.MerchantID)
	w.opt("q.id = ?", f.QRID)
	if f.ExtensionID != "" {
		w.add("q.id IN (SELECT qr_id FROM qr_extensions WHERE id = ?)", f.ExtensionID)
	}
	w.opt("q.order_id = ?", f.OrderID)
	w.like(s.d, "q.description", f.Description)
	w.opt("q.type = ?", f.Type)
	w.opt("q.amount_type = ?", f.AmountType)
	w.opt("q.terminal_id = ?", f.TerminalID)
	if f.Status != "" {
		w.add("("+qrStatusExpr+") = ?", inact, ms(now), ms(now), f.Status)
	}
	if f.AmountFrom != nil {
		w.add("q.amount >= ?", int64(*f.AmountFrom))
	}
	if f.AmountTo != nil {
		w.add("q.amount <= ?", int64(*f.AmountTo))
	}
	w.timeRange("q.created_at", f.CreatedFrom, f.CreatedTo)
	w.timeRange("q.expires_at", f.ExpiresFrom, f.ExpiresTo)
	args := w.args
	if f.Description != "" { // a search: planned for its word (planned)
		args = s.d.planned(args)
	}
	total, err := s.count(ctx, "SELECT COUNT(*)"+qrFrom+w.sql(), args)
	if err != nil {
		return nil, 0, fmt.Errorf("count qrs: %w", err)
	}
	var order string
	if f.SortBy == "status" {
		order = orderBy("("+qrStatusExpr+")", false, f.Desc, "q.created_at", "q.id")
		args = append(append([]any{}, args...), inact, ms(now), ms(now))
	} else {
		col := qrSortCols[f.SortBy]
		if col == "" {
			col = "q.created_at"
		}
		order = orderBy(col, col == "q.order_id" || col == "q.expires_at", f.Desc, "q.created_at", "q.id")
	}
	rows, err := s.query(ctx, "SELECT "+qrCols+qrFrom+w.sql()+order+s.limit(f.Count, f.Offset), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list qrs: %w", err)
	}
	out, err := scanAll(rows, scanQR)
	for _, q := range out {
		q.Observe(now, s.qrInactivity())
	}
	return out, total, err
}

// ExtensionFilter selects extensions for the list.
type ExtensionFilter struct {
	MerchantID    string
	QRID          string
	ExtensionID   string
	OrderID       string
	Status        string
	CreatedFrom   *time.Time
	CreatedTo     *time.Time
	ExpiresFrom   *time.Time
	ExpiresTo     *time.Time
	SortBy        string
	Desc          bool
	Count, Offset int
}

// extStatusExpr is an extension's status as of now (args: now, inactivity ms, now).
const extStatusExpr = `CASE WHEN x.status = 'Active' AND (x.expires_at <= ? OR q.idle_from + ? <= ?) THEN 'Expired' ELSE x.status END`

var extSortCols = map[string]string{"createdAt": "x.created_at", "expiresAt": "x.expires_at", "orderId": "x.order_id", "amount": "x.amount"}

// Extensions lists extensions matching f as of now and counts all matches.
func (s *Store) Extensions(ctx context.Context, f ExtensionFilter, now time.Time) ([]*payd.Extension, int, error) {
	inact := s.qrInactivity().Milliseconds()
	from := " FROM qr_extensions x JOIN qrs q ON q.id = x.qr_id"
	var w where
	w.add("x.merchant_id = ?", f.MerchantID)
	w.opt("x.qr_id = ?", f.QRID)
	w.opt("x.id = ?", f.ExtensionID)
	w.opt("x.order_id = ?", f.OrderID)
	if f.Status != "" {
		w.add("("+extStatusExpr+") = ?", ms(now), inact, ms(now), f.Status)
	}
	w.timeRange("x.created_at", f.CreatedFrom, f.CreatedTo)
	w.timeRange("x.expires_at", f.ExpiresFrom, f.ExpiresTo)
	total, err := s.count(ctx, "SELECT COUNT(*)"+from+w.sql(), w.args)
	if err != nil {
		return nil, 0, fmt.Errorf("count extensions: %w", err)
	}
	args := w.args
	var order string
	if f.SortBy == "status" {
		order = orderBy("("+extStatusExpr+")", false, f.Desc, "x.created_at", "x.id")
		args = append(append([]any{}, args...), ms(now), inact, ms(now))
	} else {
		col := extSortCols[f.SortBy]
		if col == "" {
			col = "x.created_at"
		}
		order = orderBy(col, col == "x.order_id" || col == "x.amount", f.Desc, "x.created_at", "x.id")
	}
	rows, err := s.query(ctx, "SELECT "+extCols+", q.type, q.idle_from"+from+w.sql()+order+s.limit(f.Count, f.Offset), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list extensions: %w", err)
	}
	defer rows.Close()
	var out []*payd.Extension
	for rows.Next() {
		var typ string
		var idle int64
		x, err := scanExtension(scanFunc(func(dest ...any) error { return rows.Scan(append(dest, &typ, &idle)...) }))
		if err != nil {
			return nil, 0, err
		}
		x.Observe(now, &payd.QR{Type: payd.QRType(typ), IdleFrom: payd.UnixMilli(idle)}, s.qrInactivity())
		out = append(out, x)
	}
	return out, total, rows.Err()
}

// scanFunc adapts a function to the Scan interface the scanners take.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// dueIdleQRs selects up to a number of non-Dynamic QRs of a status idle
// since before a time.
const dueIdleQRs = `SELECT id FROM qrs WHERE status IN ('Active','Expired') AND type <> 'Dynamic' AND status = ? AND idle_from <= ? LIMIT ?`

// dueIdleExtensions selects the active extensions of Hybrid QRs idle since
// before a time (through qrs_due_idle, as dueIdleQRs) whose deadline is not
// before the QR's idle deadline, given the inactivity.
const dueIdleExtensions = `SELECT e.id FROM qrs q JOIN qr_extensions e ON e.id = q.extension_id
	WHERE q.status IN ('Active','Expired') AND q.type <> 'Dynamic' AND q.type = 'Hybrid' AND q.idle_from <= ?
	AND e.status = 'Active' AND q.idle_from + ? <= e.expires_at`

// ExpireQRs writes the expiry and inactivity transitions that are due and
// returns how many QRs and extensions it moved.
//
// The idle ones are selected by idle_from <= now - inactivity, spelling the
// statuses and types as the partial index of them does (qrs_due_idle), so
// that both engines read it (see dueRTPs); the extensions they end are
// joined from them, not looked up with a subquery per active extension.
func (s *Store) ExpireQRs(ctx context.Context, now time.Time, limit int) (int64, error) {
	inact := s.qrInactivity().Milliseconds()
	var n int64
	err := s.inTx(ctx, func(t *tx) error {
		const ret = " RETURNING id, merchant_id, updated_at"
		steps := []struct {
			object, from, to, q string
			args                []any
		}{
			// Inactivity first: it also ends the active extension, dated at the idle deadline.
			{payd.ObjectExtension, "Active", "Expired", `UPDATE qr_extensions SET status = 'Expired', updated_at = (SELECT q.idle_from + ? FROM qrs q WHERE q.id = qr_extensions.qr_id)
				WHERE status = 'Active' AND id IN (` + dueIdleExtensions + `)` + ret,
				[]any{inact, ms(now) - inact, inact}},
			{payd.ObjectQR, "Active", "Inactive", `UPDATE qrs SET status = 'Inactive', updated_at = idle_from + ? WHERE id IN (` + dueIdleQRs + `)
				AND status = 'Active'` + ret, []any{inact, "Active", ms(now) - inact, limit}},
			{payd.ObjectQR, "Expired", "Inactive", `UPDATE qrs SET status = 'Inactive', updated_at = idle_from + ? WHERE id IN (` + dueIdleQRs + `)
				AND status = 'Expired'` + ret, []any{inact, "Expired", ms(now) - inact, limit}},
			{payd.ObjectQR, "Active", "Expired", `UPDATE qrs SET status = 'Expired', updated_at = expires_at WHERE id IN (SELECT q.id FROM qrs q
				LEFT JOIN qr_extensions e ON e.id = q.extension_id WHERE q.status = 'Active' AND q.expires_at <= ?
				AND (q.type = 'Dynamic' OR e.status = 'Active') LIMIT ?)` + ret, []any{ms(now), limit}},
			{payd.ObjectExtension, "Active", "Expired", `UPDATE qr_extensions SET status = 'Expired', updated_at = expires_at WHERE id IN (SELECT id FROM qr_extensions
				WHERE status = 'Active' AND expires_at <= ? LIMIT ?)` + ret, []any{ms(now), limit}},
		}
		for _, st := range steps {
			ids, err := t.transitionsOf(ctx, st.object, st.from, st.to, st.q, st.args...)
			if err != nil {
				return fmt.Errorf("expire qrs: %w", err)
			}
			n += int64(len(ids))
			if err := t.registerMoved(ctx, ids, st.object == payd.ObjectExtension, now); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}
