package worker

import (
	"context"
	"log/slog"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// CardInterval is how often the card poller looks for due sessions.
const CardInterval = 5 * time.Second

// Cards asks the acquirer about the open card sessions that no callback
// has settled, on payd.CardPollSchedule: a payer who closes the tab after
// paying still completes the checkout. A session still pending after
// payd.CardSessionLife is closed ("abandoned"): the acquirer gives up on
// its payer long before, and the checkout ends by its own expiry.
type Cards struct {
	Store   *sqlstore.Store
	Network string // the acquirer's registered name: the sessions it is asked about
	Gateway payd.CardGateway
	Clock   payd.Clock
	Log     *slog.Logger
	Batch   int // default 32
}

// RunOnce asks about every due session once.
func (c *Cards) RunOnce(ctx context.Context) (int, error) {
	if c.Batch == 0 {
		c.Batch = 32
	}
	due, err := c.Store.DueCardSessions(ctx, c.Network, c.Clock.Now(), c.Batch)
	if err != nil {
		return 0, err
	}
	for _, d := range due {
		o, err := c.Gateway.CardStatus(ctx, d.AcquirerID)
		now := c.Clock.Now()
		next, keep := payd.NextCardPoll(d.OpenedAt, d.Polls+1)
		switch {
		case err != nil:
			c.Log.Info("card session: the acquirer could not be asked", "pay_id", d.AcquirerID, "err", err)
			if !keep { // asked for the session's whole life: try once a schedule step later
				next = now.Add(payd.CardPollSchedule[len(payd.CardPollSchedule)-1])
			}
			err = c.Store.CardSessionAsked(ctx, d.AcquirerID, d.Polls+1, next)
		case o.Final():
			err = payd.ApplyCardOutcome(ctx, c.Store, d.CheckoutID, o, now)
			if err == nil {
				c.Log.Info("card payment outcome applied by asking the acquirer", "pay_id", d.AcquirerID, "checkout_id", d.CheckoutID, "state", o.State)
			}
		case !keep:
			c.Log.Warn("card session still pending at the end of its life: closed", "pay_id", d.AcquirerID, "checkout_id", d.CheckoutID)
			err = c.Store.CloseCardSession(ctx, d.AcquirerID, payd.SessionAbandoned, now)
		default:
			err = c.Store.CardSessionAsked(ctx, d.AcquirerID, d.Polls+1, next)
		}
		if err != nil {
			return len(due), err
		}
	}
	return len(due), nil
}
