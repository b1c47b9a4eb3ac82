package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"payd"
)

// The Ledger: the use cases a rail calls (payd.Ledger). Each is one
// transaction that loads the objects under their row locks, lets the
// domain decide (payd.Apply…), and persists what it decided: the
// transition, the payment and the callbacks, together.

var _ payd.Ledger = (*Store)(nil)

// ledger runs the Ledger's use cases. msg, when set, is the inbound message
// the use case records first in its own transaction (Inbox.Once, rails.go):
// an argument of the transaction, so that every path the transaction takes,
// on either engine, writes it.
type ledger struct {
	s   *Store
	msg *payd.Message
}

// inTx is Store.inTx with the ledger's message recorded first.
func (l ledger) inTx(ctx context.Context, f func(*tx) error) error {
	if l.msg == nil {
		return l.s.inTx(ctx, f)
	}
	msg := *l.msg
	return l.s.inTx(ctx, func(t *tx) error {
		if err := t.recordInbound(ctx, msg); err != nil {
			return err
		}
		return f(t)
	})
}

// The Store's own Ledger records no message.

func (s *Store) CreditRTP(ctx context.Context, merchantID string, c payd.Credit, now time.Time) (*payd.RTP, *payd.Payment, error) {
	return ledger{s: s}.CreditRTP(ctx, merchantID, c, now)
}
func (s *Store) Credit(ctx context.Context, c payd.Credit, now time.Time) (*payd.Payment, error) {
	return ledger{s: s}.Credit(ctx, c, now)
}
func (s *Store) RejectRTP(ctx context.Context, merchantID, id string, now time.Time) (*payd.RTP, error) {
	return ledger{s: s}.RejectRTP(ctx, merchantID, id, now)
}
func (s *Store) CreditQR(ctx context.Context, merchantID string, c payd.Credit, now time.Time) (*payd.QR, *payd.Payment, error) {
	return ledger{s: s}.CreditQR(ctx, merchantID, c, now)
}
func (s *Store) CardPaid(ctx context.Context, id string, res payd.CardResult, now time.Time) (*payd.Checkout, *payd.Payment, error) {
	return ledger{s: s}.CardPaid(ctx, id, res, now)
}
func (s *Store) CloseCardSession(ctx context.Context, acquirerID string, outcome payd.CardSessionOutcome, now time.Time) error {
	return ledger{s: s}.CloseCardSession(ctx, acquirerID, outcome, now)
}
func (s *Store) RefundTaken(ctx context.Context, id string, now time.Time) error {
	return ledger{s: s}.RefundTaken(ctx, id, now)
}
func (s *Store) SettleRefund(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time) (*payd.Refund, error) {
	return ledger{s: s}.SettleRefund(ctx, id, outcome, now)
}
func (s *Store) SettleReturn(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time) (*payd.Refund, error) {
	return ledger{s: s}.SettleReturn(ctx, id, outcome, now)
}

func (t *tx) merchant(ctx context.Context, id string) (*payd.Merchant, error) {
	return t.s.scanMerchant(t.queryRow(ctx, "SELECT "+merchantCols+" FROM merchants m WHERE m.id = ?", id))
}

// lockRTPOf loads an RTP under its row lock (as lockRTP) and its merchant,
// in one statement.
func (t *tx) lockRTPOf(ctx context.Context, merchantID, id string) (*payd.RTP, *payd.Merchant, error) {
	q := "SELECT " + rtpColsR + ", " + merchantCols + " FROM rtps r JOIN merchants m ON m.id = r.merchant_id WHERE r.id = ?"
	args := []any{id}
	if merchantID != "" {
		q += " AND r.merchant_id = ?"
		args = append(args, merchantID)
	}
	q += t.s.d.forUpdateOf("r")
	var m *payd.Merchant
	r, err := scanRTP(scanFunc(func(rtp ...any) error {
		var err error
		m, err = t.s.scanMerchant(scanFunc(func(merchant ...any) error {
			return t.queryRow(ctx, q, args...).Scan(append(rtp, merchant...)...)
		}))
		return err
	}))
	if err != nil {
		return nil, nil, notFound(err)
	}
	return r, m, nil
}

// CreditRTP records the payer's acceptance of an RTP and its payment.
func (l ledger) CreditRTP(ctx context.Context, merchantID string, c payd.Credit, now time.Time) (*payd.RTP, *payd.Payment, error) {
	var r *payd.RTP
	var p *payd.Payment
	var cb *payd.Callback
	err := l.inTx(ctx, func(t *tx) error {
		var m *payd.Merchant
		var err error
		if r, m, err = t.lockRTPOf(ctx, merchantID, c.TargetID); err != nil {
			return err
		}
		p, cb, err = t.creditRTP(ctx, m, r, c, now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	l.s.handCallbacksOf(ctx, cb)
	return r, p, nil
}

// creditRTP applies a credit to r, locked, and stores what it decided.
func (t *tx) creditRTP(ctx context.Context, m *payd.Merchant, r *payd.RTP, c payd.Credit, now time.Time) (*payd.Payment, *payd.Callback, error) {
	from := r.Status
	p, cb, err := payd.ApplyRTPCredit(m, r, c, now)
	if err != nil {
		return nil, nil, err
	}
	if err := t.saveRTP(ctx, r, from); err != nil {
		return nil, nil, err
	}
	if err := t.insertPayment(ctx, p, r.CallbackURL, now); err != nil {
		return nil, nil, err
	}
	return p, cb, t.insertCallbacks(ctx, cb)
}

// Credit records a network's credit for its target, whatever it is: a QR,
// an extension (for its QR) or an RTP, in one transaction. The target is
// first looked for as a QR or extension, and its QR locked with its
// merchant, in one statement; on PostgreSQL that statement carries BEGIN
// and the inbound message's record (a queued write, rails.go), so that a
// payer's credit of a QR is two round trips: that one, and the writes with
// COMMIT. An RTP costs one more, its lock.
func (l ledger) Credit(ctx context.Context, c payd.Credit, now time.Time) (*payd.Payment, error) {
	var p *payd.Payment
	var cbs []*payd.Callback
	err := l.inTx(ctx, func(t *tx) error {
		q, m, err := t.lockQRForCredit(ctx, c.TargetID)
		if errors.Is(err, payd.ErrNotFound) {
			r, m, err := t.lockRTPOf(ctx, "", c.TargetID)
			if err != nil {
				return err
			}
			var cb *payd.Callback
			p, cb, err = t.creditRTP(ctx, m, r, c, now)
			cbs = []*payd.Callback{cb}
			return err
		}
		if err != nil {
			return err
		}
		extID := ""
		if q.ID != c.TargetID {
			extID = c.TargetID // the target is the extension
		}
		return t.transitionQR(ctx, q, now, func(t *tx, q *payd.QR) error {
			p, cbs, err = t.creditQR(ctx, m, q, extID, c, now)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	l.s.handCallbacksOf(ctx, cbs...)
	return p, nil
}

// RejectRTP records the payer's rejection. No callback is sent.
func (l ledger) RejectRTP(ctx context.Context, merchantID, id string, now time.Time) (*payd.RTP, error) {
	var r *payd.RTP
	err := l.inTx(ctx, func(t *tx) error {
		var m *payd.Merchant
		var err error
		if r, m, err = t.lockRTPOf(ctx, merchantID, id); err != nil {
			return err
		}
		from := r.Status
		if err := payd.ApplyRTPRejection(m, r, now); err != nil {
			return err
		}
		return t.saveRTP(ctx, r, from)
	})
	return r, err
}

// CreditQR records a payer's payment of one of the merchant's QRs (the
// sandbox's payer; a bank's credits go through Credit, which also takes
// an extension's id): the payment, the QR's transition and the
// qr.payment.executed callback in one transaction; a checkout's QR also
// completes its checkout there, with its callback.
func (l ledger) CreditQR(ctx context.Context, merchantID string, c payd.Credit, now time.Time) (*payd.QR, *payd.Payment, error) {
	var p *payd.Payment
	var cbs []*payd.Callback
	var q *payd.QR
	err := l.inTx(ctx, func(t *tx) error {
		var err error
		if q, err = t.lockQR(ctx, merchantID, c.TargetID); err != nil {
			return err
		}
		return t.transitionQR(ctx, q, now, func(t *tx, q *payd.QR) error {
			m, err := t.merchant(ctx, q.MerchantID)
			if err != nil {
				return err
			}
			p, cbs, err = t.creditQR(ctx, m, q, "", c, now)
			return err
		})
	})
	if err != nil {
		return nil, nil, err
	}
	l.s.handCallbacksOf(ctx, cbs...)
	return q, p, nil
}

// creditQR applies a credit to q, locked and observed (transitionQR), paid
// through its extension extID when not "": the payment, its callback, and
// a checkout's completion with its own.
func (t *tx) creditQR(ctx context.Context, m *payd.Merchant, q *payd.QR, extID string, c payd.Credit, now time.Time) (*payd.Payment, []*payd.Callback, error) {
	if extID != "" && q.ExtensionID != extID {
		return nil, nil, &payd.Refused{Reason: payd.RefusedCancelled, Err: payd.E(payd.CodeQRState)} // a replaced or cancelled extension
	}
	p, err := payd.ApplyQRCredit(m, q, c, now)
	if err != nil {
		return nil, nil, err
	}
	if err := t.insertPayment(ctx, p, q.CallbackURL, now); err != nil {
		return nil, nil, err
	}
	cbs := []*payd.Callback{payd.QRCreditCallback(m, q, p, now)}
	if q.CheckoutID != "" {
		co, err := t.lockCheckout(ctx, q.CheckoutID)
		if err != nil {
			return nil, nil, err
		}
		from := co.Status
		if err := payd.CompleteCheckoutByQR(co, p, now); err != nil {
			return nil, nil, err
		}
		if err := t.saveCheckout(ctx, co, from); err != nil {
			return nil, nil, err
		}
		// The payment's later callbacks (its refunds') go where the checkout's go.
		if _, err := t.exec(ctx, "UPDATE payments SET callback_url = ? WHERE id = ?", nullStr(co.CallbackURL), p.ID); err != nil {
			return nil, nil, err
		}
		cbs = append(cbs, payd.CheckoutCallback(m, co, p, now))
	}
	return p, cbs, t.insertCallbacks(ctx, cbs...)
}

// CardPaid records an acquirer's answer for a checkout that selected Card:
// the payment, the checkout's transition and its callback commit together.
// Only the card's mask is stored.
func (l ledger) CardPaid(ctx context.Context, id string, res payd.CardResult, now time.Time) (*payd.Checkout, *payd.Payment, error) {
	var p *payd.Payment
	var cb *payd.Callback
	reversed := false
	var c *payd.Checkout
	err := l.inTx(ctx, func(t *tx) error {
		var err error
		c, err = t.transitionCheckoutAndQR(ctx, "", id, func(t *tx, c *payd.Checkout) error {
			cb, reversed = nil, false
			if res.Hosted() {
				// An acquirer's payment applies once: the outcome closes its session.
				if err := t.lockCardSession(ctx, res.Reference, c.ID, res); err != nil {
					return err
				}
			}
			m, err := t.merchant(ctx, c.MerchantID)
			if err != nil {
				return err
			}
			var reversal *payd.RailsOrder
			if p, reversal, err = payd.ApplyCardResult(m, c, res, now); err != nil {
				return err
			}
			if res.Hosted() {
				outcome := payd.SessionDeclined
				switch {
				case reversal != nil:
					outcome = payd.SessionReversed
				case p != nil && !p.Failed:
					outcome = payd.SessionApproved
				}
				if err := t.settleCardSession(ctx, res.Reference, outcome, now); err != nil {
					return err
				}
			}
			if reversal != nil {
				reversed = true
				return t.insertOrder(ctx, reversal)
			}
			if p == nil {
				return nil
			}
			// The checkout's QR can no longer be paid: declined, or paid by card.
			if err := t.cancelCheckoutQR(ctx, c, now); err != nil {
				return err
			}
			if p.ReferenceNumber != "" {
				// The acquirer's RRN is the payment's reference unless another
				// payment has it already (references are unique): then payd
				// draws one, and the RRN stays findable through the acquirer.
				var one int
				switch err := t.queryRow(ctx, "SELECT 1 FROM payments WHERE reference_number = ?", p.ReferenceNumber).Scan(&one); {
				case err == nil:
					p.ReferenceNumber = ""
				case !errors.Is(err, sql.ErrNoRows):
					return err
				}
			}
			if err := t.insertPayment(ctx, p, c.CallbackURL, now); err != nil {
				return err
			}
			cb = payd.CheckoutCallback(m, c, p, now)
			return t.insertCallbacks(ctx, cb)
		})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if reversed {
		l.s.queuedOrders()
	}
	l.s.handCallbacksOf(ctx, cb) // to this instance's delivery, or to the claims (handover.go)
	return c, p, nil
}

// insertCallbacks queues the callbacks that are not nil, leased to this
// instance when it takes them in memory: the caller hands them over once
// committed (Store.handCallbacksOf).
func (t *tx) insertCallbacks(ctx context.Context, cbs ...*payd.Callback) error {
	for _, cb := range cbs {
		if cb == nil {
			continue
		}
		if err := t.insertCallback(ctx, cb); err != nil {
			return err
		}
	}
	return nil
}

// RefundTaken records that the network took a refund's return of funds:
// Created → Requested (payd.Refund.Taken). A refund already past Created
// is left as it is.
func (l ledger) RefundTaken(ctx context.Context, id string, now time.Time) error {
	return l.inTx(ctx, func(t *tx) error { return t.refundTaken(ctx, id, now) })
}

func (t *tx) refundTaken(ctx context.Context, id string, now time.Time) error {
	rf, err := scanRefund(t.queryRow(ctx, "SELECT "+refundCols+" FROM refunds WHERE id = ?"+t.s.d.forUpdate(), id))
	if errors.Is(err, payd.ErrNotFound) {
		return nil // not ours to take (the network names a refund payd does not know)
	}
	if err != nil {
		return err
	}
	if !rf.Taken(now) {
		return nil
	}
	return t.saveRefundStatus(ctx, rf, payd.RefundCreated)
}

// saveRefundStatus writes a refund's new status (guarded by the one it had)
// and its event.
func (t *tx) saveRefundStatus(ctx context.Context, rf *payd.Refund, from payd.RefundStatus) error {
	res, err := t.exec(ctx, "UPDATE refunds SET status = ?, updated_at = ?, executed_at = ? WHERE id = ? AND status = ?",
		string(rf.Status), ms(rf.UpdatedAt), nullMS(rf.ExecutedAt), rf.ID, string(from))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return payd.ErrConflict
	}
	return t.event(ctx, rf.MerchantID, payd.ObjectRefund, rf.ID, string(from), string(rf.Status), rf.UpdatedAt)
}

// SettleRefund gives a refund its final status (payd.ApplyRefundOutcome)
// and stores what it decided: the refund, the payment's refund sums, an
// RTP Refunded, the refund callback. A refund already settled answers
// payd.ErrConflict.
func (l ledger) SettleRefund(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time) (*payd.Refund, error) {
	return l.settleRefund(ctx, id, outcome, now, payd.ApplyRefundOutcome)
}

// SettleReturn is the network's news of a refund's return
// (payd.ApplyReturnOutcome): applied only once the network took the
// return; before, payd.ErrReturnNotTaken and nothing changes.
func (l ledger) SettleReturn(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time) (*payd.Refund, error) {
	return l.settleRefund(ctx, id, outcome, now, payd.ApplyReturnOutcome)
}

type refundRule func(*payd.Merchant, *payd.Refund, *payd.Payment, string, payd.RefundStatus, time.Time) (*payd.RefundSettlement, error)

func (l ledger) settleRefund(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time, apply refundRule) (*payd.Refund, error) {
	var rf *payd.Refund
	var cb *payd.Callback
	err := l.inTx(ctx, func(t *tx) error {
		var err error
		rf, cb, err = t.settleRefund(ctx, id, outcome, now, apply)
		return err
	})
	if err != nil {
		return nil, err
	}
	l.s.handCallbacksOf(ctx, cb) // to this instance's delivery, or to the claims (handover.go)
	return rf, nil
}

// settleRefund is SettleRefund in the transaction t; cb is the callback it
// wrote, if any, leased to this instance when callbacks are handed (the
// caller hands it once committed: Store.handCallbacksOf).
func (t *tx) settleRefund(ctx context.Context, id string, outcome payd.RefundStatus, now time.Time, apply refundRule) (rf *payd.Refund, cb *payd.Callback, err error) {
	s := t.s
	err = func() error {
		if rf, err = scanRefund(t.queryRow(ctx, "SELECT "+refundCols+" FROM refunds WHERE id = ?"+s.d.forUpdate(), id)); err != nil {
			return err
		}
		var paymentCallback sql.NullString
		p, err := scanPayment(scanFunc(func(dest ...any) error {
			return t.queryRow(ctx, "SELECT "+paymentCols+", p.callback_url"+paymentFrom+" WHERE p.id = ?"+s.d.forUpdateOf("p"), rf.PaymentID).
				Scan(append(dest, &paymentCallback)...)
		}))
		if err != nil {
			return err
		}
		m, err := t.merchant(ctx, rf.MerchantID)
		if err != nil {
			return err
		}
		from := rf.Status
		st, err := apply(m, rf, p, paymentCallback.String, outcome, now)
		if err != nil {
			return err
		}
		if err := t.saveRefundStatus(ctx, rf, from); err != nil {
			return err
		}
		after := st.Payment
		if after.RequestedRefund != p.RequestedRefund || after.Refunded != p.Refunded {
			res, err := t.exec(ctx, `UPDATE payments SET requested_refund = ?, refunded = ?, first_refunded_at = ?, last_refunded_at = ?
				WHERE id = ? AND requested_refund = ? AND refunded = ?`,
				int64(after.RequestedRefund), int64(after.Refunded), nullMS(after.FirstRefundedAt), nullMS(after.LastRefundedAt),
				p.ID, int64(p.RequestedRefund), int64(p.Refunded))
			if err != nil {
				return fmt.Errorf("apply refund: %w", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return payd.ErrConflict
			}
			if after.Status() != p.Status() {
				if err := t.event(ctx, p.MerchantID, payd.ObjectPayment, p.ID, p.Status(), after.Status(), now); err != nil {
					return err
				}
			}
		}
		if st.RefundsRTP {
			res, err := t.exec(ctx, "UPDATE rtps SET status = 'Refunded', updated_at = ? WHERE id = ? AND status = 'Accepted'", ms(now), p.RTPID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				if err := t.event(ctx, p.MerchantID, payd.ObjectRTP, p.RTPID, string(payd.RTPAccepted), string(payd.RTPRefunded), now); err != nil {
					return err
				}
			}
		}
		cb = st.Callback
		return t.insertCallbacks(ctx, cb)
	}()
	return rf, cb, err
}

// DueRefunds lists up to limit unsettled refunds whose processing time
// (process_at) has come, oldest first.
// merchantID, when given, limits them to one merchant (the test clock's pass).
func (s *Store) DueRefunds(ctx context.Context, now time.Time, limit int, merchantID ...string) ([]payd.DueRefund, error) {
	scope, args := merchantScope(merchantID, ms(now))
	rows, err := s.query(ctx, `SELECT id, merchant_id, reason FROM refunds WHERE status IN ('Created','Requested') AND process_at <= ?`+scope+`
		ORDER BY process_at`+rowLimit(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("due refunds: %w", err)
	}
	defer rows.Close()
	var out []payd.DueRefund
	for rows.Next() {
		var d payd.DueRefund
		if err := rows.Scan(&d.ID, &d.MerchantID, &d.Reason); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// TakeNewRefunds has the network take every Created refund
// (payd.Refund.Taken: the sandbox's network takes every refund at once),
// up to limit of them.
func (s *Store) TakeNewRefunds(ctx context.Context, now time.Time, limit int) error {
	return s.inTx(ctx, func(t *tx) error {
		rows, err := t.query(ctx, "SELECT "+refundCols+" FROM refunds WHERE status = 'Created'"+rowLimit(limit)+s.d.forUpdate())
		if err != nil {
			return err
		}
		rfs, err := scanAll(rows, scanRefund)
		if err != nil {
			return err
		}
		for _, rf := range rfs {
			if rf.Taken(now) {
				if err := t.saveRefundStatus(ctx, rf, payd.RefundCreated); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
