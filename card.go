package payd

import (
	"context"
	"errors"
	"time"
)

// Cards in production: payd never sees a card number. A CardGateway is an
// acquirer that takes the card on its own page: payd creates the
// acquirer's payment for a checkout (a card session), sends the payer to
// the acquirer's page (3-D Secure happens there), and learns the outcome
// server to server, from the acquirer's signed callback confirmed by
// asking the acquirer, or by asking on a schedule when no callback comes.
// The outcome goes through the one card use case (Ledger.CardPaid with a
// hosted CardResult). The sandbox's test cards (CardAcquirer) keep their
// own form.

// CardGateway is the outbound side of a hosted-page acquirer.
type CardGateway interface {
	// StartCard creates the acquirer's payment for a checkout's amount and
	// returns the session: its id at the acquirer and the page to send
	// the payer to.
	StartCard(ctx context.Context, c *Checkout, in CardStart) (CardSession, error)
	// CardStatus asks the acquirer what became of one of its payments.
	CardStatus(ctx context.Context, sessionID string) (CardOutcome, error)
	// Takes reports whether the acquirer accepts a payment of amount in
	// currency: a checkout it cannot take is not offered cards.
	Takes(amount Money, currency string) bool
}

// CardStart is what the acquirer needs of the payer and of payd's pages.
type CardStart struct {
	ClientIP string // the payer's address
	Language string // ro, ru, en
	// Where the acquirer's page sends the payer back, and where it posts
	// the outcome.
	OkURL, FailURL, CallbackURL string
}

// CardSession is an acquirer's payment for a checkout.
type CardSession struct {
	Network string // the acquirer's registered name, which is asked about the session
	ID      string // the acquirer's payment id
	URL     string // its card page
}

// CardState is where an acquirer's payment stands.
type CardState string

const (
	CardPending  CardState = "pending"  // the payer has not finished on the acquirer's page
	CardApproved CardState = "approved" // charged
	CardDeclined CardState = "declined" // refused: the checkout fails
	CardTimedOut CardState = "timedout" // the payer never finished; the acquirer closed it (no charge)
	// CardReturned: charged and already given back at the acquirer before
	// payd recorded the charge. No payment: the money is the payer's again.
	CardReturned CardState = "returned"
)

// CardSessionOutcome is how a card session was closed (its outcome
// column): with a charge recorded (a payment, or a reversal of a charge no
// checkout could take), or without one.
type CardSessionOutcome string

const (
	SessionApproved  CardSessionOutcome = "approved"  // the payment was recorded
	SessionReversed  CardSessionOutcome = "reversed"  // the charge is being given back (a reversal order)
	SessionDeclined  CardSessionOutcome = "declined"  // refused; a failed payment was recorded
	SessionTimedOut  CardSessionOutcome = "timedout"  // the acquirer closed it unpaid
	SessionReturned  CardSessionOutcome = "returned"  // charged and given back at the acquirer before payd knew
	SessionAbandoned CardSessionOutcome = "abandoned" // payd stopped asking
)

// Charged reports whether the session's outcome accounted for a charge.
func (o CardSessionOutcome) Charged() bool { return o == SessionApproved || o == SessionReversed }

// SessionTakes reports whether a card session closed with outcome (""
// while it is open) still takes an acquirer's result: an open session
// takes any; a closed one takes only an approval, and only when it was
// closed without a charge (declined, timed out, returned, abandoned): money
// the acquirer took is never left unrecorded, and a charge is recorded
// once. A session that takes nothing more answers ErrDuplicate.
func SessionTakes(outcome CardSessionOutcome, open bool, res CardResult) bool {
	return open || res.Approved && !outcome.Charged()
}

// AlreadyRefunded settles a card refund (or reversal) that the acquirer
// answers "already refunded": accepted when what the acquirer says it
// refunded is the order's amount, otherwise (another amount, or none said)
// a refund for a person to review, its amount kept reserved.
func AlreadyRefunded(asked Money, refunded *Money) RefundStatus {
	if refunded != nil && *refunded == asked {
		return RefundAccepted
	}
	return RefundManual
}

// CardOutcome is what an acquirer says of one of its payments.
type CardOutcome struct {
	State  CardState
	Result CardResult // Approved, Mask, RRN, ApprovalCode, Reference, Amount, Currency
}

// Final reports whether the acquirer's payment will not change any more.
func (o CardOutcome) Final() bool { return o.State != CardPending }

// CardPollSchedule is when payd asks the acquirer about a session no
// callback has settled: after each delay from the session's start, then
// every last delay until CardSessionLife has passed.
var CardPollSchedule = []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}

// CardSessionLife is how long a session may stay pending at the acquirer
// before payd stops asking and closes it: the acquirer's own limit for
// the payer (10 minutes) with room for its late answers.
const CardSessionLife = 30 * time.Minute

// NextCardPoll is when to ask the acquirer again about a session started
// at start and asked polls times; ok false when payd should stop asking.
func NextCardPoll(start time.Time, polls int) (time.Time, bool) {
	var at time.Duration
	for i := 0; i <= polls; i++ {
		at += CardPollSchedule[min(i, len(CardPollSchedule)-1)]
	}
	return start.Add(at), at <= CardSessionLife
}

// ApplyCardOutcome hands an acquirer's final word on a checkout's card
// session to the ledger: approved or declined through CardPaid, timed out
// or returned by closing the session. A pending outcome changes nothing;
// an outcome applied before is not an error.
func ApplyCardOutcome(ctx context.Context, l Ledger, checkoutID string, o CardOutcome, now time.Time) error {
	var err error
	switch o.State {
	case CardApproved, CardDeclined:
		_, _, err = l.CardPaid(ctx, checkoutID, o.Result, now)
	case CardTimedOut:
		err = l.CloseCardSession(ctx, o.Result.Reference, SessionTimedOut, now)
	case CardReturned:
		err = l.CloseCardSession(ctx, o.Result.Reference, SessionReturned, now)
	}
	if errors.Is(err, ErrDuplicate) {
		return nil
	}
	return err
}
