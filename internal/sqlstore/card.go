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
			var until sql.NullInt64
			err := t.queryRow(ctx, "SELECT id, state, pay_url, lease_until FROM card_sessions WHERE checkout_id = ? AND state IN ('creating','open')"+
				s.forUpdate(), checkoutID).Scan(&id, &state, &url, &until)
			switch {
			case err == nil && state == "open":
				out = CardClaim{ID: id, URL: url.String}
				return nil
			case err == nil && until.Int64 > ms(now):
				out = CardClaim{ID: id}
				return nil
			case err == nil: // the claim's holder went away
				if _, err := t.exec(ctx, "UPDATE card_sessions SET lease_until = ? WHERE id = ? AND state = 'creating'", ms(now.Add(lease)), id); err != nil {
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
		res, err := t.exec(ctx, `UPDATE card_sessions SET state = 'open', acquirer_id = ?, pay_url = ?, opened_at = ?, lease_until = NULL,
			next_poll_at = ? WHERE id = ? AND state = 'creating'`, sess.ID, sess.URL, ms(now), ms(next), id)
		if err != nil {
			return fmt.Errorf("open card session: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return payd.ErrConflict
		}
		return nil
	})
}

// DropCardSession forgets a claim whose acquirer payment could not be
// created, so that the payer may try again.
func (s *Store) DropCardSession(ctx context.Context, id string) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "DELETE FROM card_sessions WHERE id = ? AND state = 'creating'", id)
		return err
	})
}

// OpenCardSessionOf is the acquirer's id of the checkout's open card
// session, "" when none is open.
func (s *Store) OpenCardSessionOf(ctx context.Context, checkoutID string) (string, error) {
	var id string
	err := s.queryRow(ctx, "SELECT acquirer_id FROM card_sessions WHERE checkout_id = ? AND state = 'open'", checkoutID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
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

// DueCardSessions are up to limit open sessions whose next ask is due.
func (s *Store) DueCardSessions(ctx context.Context, now time.Time, limit int) ([]DueCard, error) {
	rows, err := s.query(ctx, `SELECT acquirer_id, checkout_id, opened_at, polls FROM card_sessions
		WHERE state = 'open' AND next_poll_at <= ? ORDER BY next_poll_at`+rowLimit(limit), ms(now))
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

// CloseCardSession closes an open session without a payment: the
// acquirer closed it unpaid (timedout), or payd stopped asking (abandoned).
func (s *Store) CloseCardSession(ctx context.Context, acquirerID, outcome string, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error { return t.closeCardSession(ctx, acquirerID, outcome, now) })
}

func (t *tx) closeCardSession(ctx context.Context, acquirerID, outcome string, now time.Time) error {
	_, err := t.exec(ctx, `UPDATE card_sessions SET state = 'closed', outcome = ?, closed_at = ?, next_poll_at = NULL
		WHERE acquirer_id = ? AND (state = 'open' OR outcome = 'abandoned')`, outcome, ms(now), acquirerID)
	return err
}

// lockOpenCardSession locks the open session of the acquirer's payment id
// for its outcome: ErrDuplicate when it was closed already (its outcome
// applied), ErrNotFound when payd never opened it for checkoutID.
func (t *tx) lockOpenCardSession(ctx context.Context, acquirerID, checkoutID string) error {
	var state, co string
	var outcome sql.NullString
	err := t.queryRow(ctx, "SELECT state, checkout_id, outcome FROM card_sessions WHERE acquirer_id = ?"+t.s.forUpdate(), acquirerID).
		Scan(&state, &co, &outcome)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && co != checkoutID):
		return payd.ErrNotFound
	case err != nil:
		return err
	case state != "open" && outcome.String != "abandoned":
		// An abandoned session's late outcome still applies: money the
		// acquirer took is never left unrecorded.
		return payd.ErrDuplicate
	}
	return nil
}
