package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"payd"
)

// Card sessions: a checkout's payment at an acquirer's own page
// (payd.CardGateway), from the claim that lets one request create it to
// the outcome that closes it (CardPaid).

// CardClaim is a checkout's live card session as ClaimCardSession found
// or made it.
type CardClaim struct {
	ID   string // payd's id of the session
	Mine bool   // the caller creates the acquirer's payment, then OpenCardSession or DropCardSession
	URL  string // the acquirer's page, once the session is open
	// RetryAt: the acquirer failed to create the payment a moment ago, and
	// is not asked again before then (DropCardSession).
	RetryAt time.Time
}

// ClaimCardSession returns the checkout's live card session: open (go to
// its page), being created by another request (wait), or claimed for the
// caller until now+lease (Mine). One acquirer payment per checkout at a
// time, whatever the reloads and double clicks: a claim whose holder died
// is taken over when its lease has passed.
func (s *Store) ClaimCardSession(ctx context.Context, checkoutID, merchantID string, now time.Time, lease time.Duration) (CardClaim, error) {
	var out CardClaim
	err := s.inTx(ctx, func(t *tx) error {
		for range 2 {
			var id, state string
			var url sql.NullString
			var until, retry sql.NullInt64
			err := t.queryRow(ctx, "SELECT id, state, pay_url, lease_until, retry_at FROM card_sessions WHERE checkout_id = ? AND state IN ('creating','open')"+
				s.d.forUpdate(), checkoutID).Scan(&id, &state, &url, &until, &retry)
			switch {
			case err == nil && state == "open":
				out = CardClaim{ID: id, URL: url.String}
				return nil
			case err == nil && retry.Valid && retry.Int64 > ms(now):
				out = CardClaim{ID: id, RetryAt: payd.UnixMilli(retry.Int64)}
				return nil
			case err == nil && until.Int64 > ms(now):
				out = CardClaim{ID: id}
				return nil
			case err == nil: // the claim's holder went away, or its retry is due
				if _, err := t.exec(ctx, "UPDATE card_sessions SET lease_until = ?, retry_at = NULL WHERE id = ? AND state = 'creating'",
					ms(now.Add(lease)), id); err != nil {
					return fmt.Errorf("take over card session: %w", err)
				}
				out = CardClaim{ID: id, Mine: true}
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("card session: %w", err)
			}
			id = payd.NewID(now)
			res, err := t.exec(ctx, `INSERT INTO card_sessions (id, checkout_id, merchant_id, state, lease_until, created_at)
				VALUES (?, ?, ?, 'creating', ?, ?) ON CONFLICT DO NOTHING`, id, checkoutID, merchantID, ms(now.Add(lease)), ms(now))
			if err != nil {
				return fmt.Errorf("claim card session: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				out = CardClaim{ID: id, Mine: true}
				return nil
			}
			// Another request claimed it between the read and the insert: read it.
		}
		return payd.ErrConflict
	})
	return out, err
}

// OpenCardSession records the acquirer's payment of a claimed session, and
// when to first ask the acquirer about it.
func (s *Store) OpenCardSession(ctx context.Context, id string, sess payd.CardSession, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		next, _ := payd.NextCardPoll(now, 0)
		res, err := t.exec(ctx, `UPDATE card_sessions SET state = 'open', network = ?, acquirer_id = ?, pay_url = ?, opened_at = ?,
			lease_until = NULL, next_poll_at = ? WHERE id = ? AND state = 'creating'`, sess.Network, sess.ID, sess.URL, ms(now), ms(next), id)
		if err != nil {
			return fmt.Errorf("open card session: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		return nil
	})
}

// DropCardSession gives up a claim whose acquirer payment could not be
// created: the payer may try again from retryAt, and until then every
// request is answered without asking the acquirer (ClaimCardSession's
// RetryAt), however many a page sends.
func (s *Store) DropCardSession(ctx context.Context, id string, retryAt time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "UPDATE card_sessions SET retry_at = ?, lease_until = ? WHERE id = ? AND state = 'creating'",
			ms(retryAt), ms(retryAt), id)
		return err
	})
}

// CardSessionToAsk is the acquirer's id of the checkout's open session
// when the payer's pages may ask the acquirer about it: at most once
// every `every`, whatever the number of requests and instances (the ask
// is recorded in the statement that grants it). "" when none is open or
// it was asked within every.
func (s *Store) CardSessionToAsk(ctx context.Context, checkoutID string, now time.Time, every time.Duration) (string, error) {
	var id string
	err := s.inTx(ctx, func(t *tx) error {
		err := t.queryRow(ctx, `UPDATE card_sessions SET asked_at = ? WHERE checkout_id = ? AND state = 'open'
			AND (asked_at IS NULL OR asked_at <= ?) RETURNING acquirer_id`, ms(now), checkoutID, ms(now.Add(-every))).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return id, err
}

// CardSessionCheckout is the checkout of the acquirer's payment id.
func (s *Store) CardSessionCheckout(ctx context.Context, acquirerID string) (string, error) {
	var id string
	err := s.queryRow(ctx, "SELECT checkout_id FROM card_sessions WHERE acquirer_id = ?", acquirerID).Scan(&id)
	return id, notFound(err)
}

// DueCard is an open card session payd should ask the acquirer about.
type DueCard struct {
	AcquirerID, CheckoutID string
	OpenedAt               time.Time
	Polls                  int
}

// DueCardSessions are up to limit open sessions at the acquirer network
// whose next ask is due. Sessions opened before sessions recorded their
// acquirer (”) are any acquirer's: a deployment had one.
func (s *Store) DueCardSessions(ctx context.Context, network string, now time.Time, limit int) ([]DueCard, error) {
	rows, err := s.query(ctx, `SELECT acquirer_id, checkout_id, opened_at, polls FROM card_sessions
		WHERE state = 'open' AND next_poll_at <= ? AND network IN (?, '') ORDER BY next_poll_at`+rowLimit(limit), ms(now), network)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DueCard
	for rows.Next() {
		var d DueCard
		var opened int64
		if err := rows.Scan(&d.AcquirerID, &d.CheckoutID, &opened, &d.Polls); err != nil {
			return nil, err
		}
		d.OpenedAt = payd.UnixMilli(opened)
		out = append(out, d)
	}
	return out, rows.Err()
}

// CardSessionAsked records that the acquirer said a session is still
// pending, and when to ask next.
func (s *Store) CardSessionAsked(ctx context.Context, acquirerID string, polls int, next time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "UPDATE card_sessions SET polls = ?, next_poll_at = ? WHERE acquirer_id = ? AND state = 'open'",
			polls, ms(next), acquirerID)
		return err
	})
}

// CloseCardSession closes an open session with no charge to record: the
// acquirer closed it unpaid (timedout) or had already given the charge
// back (returned), or payd stopped asking (abandoned). A session closed
// before keeps its outcome, but an abandoned one takes the acquirer's
// later word.
func (l ledger) CloseCardSession(ctx context.Context, acquirerID string, outcome payd.CardSessionOutcome, now time.Time) error {
	return l.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, `UPDATE card_sessions SET state = 'closed', outcome = ?, closed_at = ?, next_poll_at = NULL
			WHERE acquirer_id = ? AND (state = 'open' OR outcome = 'abandoned')`, string(outcome), ms(now), acquirerID)
		return err
	})
}

// lockCardSession locks the session of the acquirer's payment id for res:
// ErrDuplicate when the session takes it no more (payd.SessionTakes: its
// outcome applied already), ErrNotFound when payd never opened it for
// checkoutID.
func (t *tx) lockCardSession(ctx context.Context, acquirerID, checkoutID string, res payd.CardResult) error {
	var state, co string
	var outcome sql.NullString
	err := t.queryRow(ctx, "SELECT state, checkout_id, outcome FROM card_sessions WHERE acquirer_id = ?"+t.s.d.forUpdate(), acquirerID).
		Scan(&state, &co, &outcome)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && co != checkoutID):
		return payd.ErrNotFound
	case err != nil:
		return err
	case !payd.SessionTakes(payd.CardSessionOutcome(outcome.String), state == "open", res):
		return payd.ErrDuplicate
	}
	return nil
}

// settleCardSession closes the session locked by lockCardSession with the
// outcome of the result it took.
func (t *tx) settleCardSession(ctx context.Context, acquirerID string, outcome payd.CardSessionOutcome, now time.Time) error {
	_, err := t.exec(ctx, `UPDATE card_sessions SET state = 'closed', outcome = ?, closed_at = ?, next_poll_at = NULL WHERE acquirer_id = ?`,
		string(outcome), ms(now), acquirerID)
	return err
}
