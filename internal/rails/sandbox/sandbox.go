// Package sandbox is the rails adapter of sandbox mode: a simulated
// network whose payers are the test endpoints, the payer pages' simulator
// forms, the auto-deciding test aliases and the test cards, and whose
// refunds settle after PAYD_REFUND_DELAY with the outcome their reason asks
// for (spec §7). It calls the same Ledger use cases as the production
// adapter: only who plays the payer differs. It is wired only in sandbox
// mode; in production nothing holds a *Payer, so none of it is reachable.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"payd"
)

// Name is the sandbox network's name (PAYD_RAILS=sandbox), which its
// payments record.
const Name = "sandbox"

// Store is what the sandbox's network reads and writes besides the
// Ledger: the auto aliases' due decisions, the refunds to take and
// settle, and the merchants on the test clock.
type Store interface {
	DueRTPDecisions(ctx context.Context, now time.Time, limit int, merchantID ...string) ([]payd.DueRTPDecision, error)
	ClearRTPDecision(ctx context.Context, rtpID string) error
	TakeNewRefunds(ctx context.Context, now time.Time, limit int) error
	DueRefunds(ctx context.Context, now time.Time, limit int, merchantID ...string) ([]payd.DueRefund, error)
	ClockedMerchants(ctx context.Context) ([]*payd.Merchant, error)
}

// Payer plays the payers of the sandbox against a Ledger.
type Payer struct {
	Ledger payd.Ledger
	Cards  Cards
}

// New returns the sandbox payer over a ledger.
func New(l payd.Ledger) *Payer { return &Payer{Ledger: l} }

// NewRTP is the sandbox network receiving a new RTP (spec §7.2): an alias
// that is not enrolled is refused (nothing is stored), an unreachable one
// stays Created, and the auto aliases decide AutoDecisionDelay later. Any
// other alias is delivered as it is.
func (p *Payer) NewRTP(r *payd.RTP, now time.Time) error {
	switch r.Alias {
	case payd.AliasNotEnrolled:
		return payd.E(payd.CodeAliasNotEnrolled, "alias", r.Alias)
	case payd.AliasUnreachable:
		r.Status = payd.RTPCreated
	case payd.AliasAutoAccept:
		r.AutoAction, r.AutoAt = "accept", now.Add(payd.AutoDecisionDelay)
	case payd.AliasAutoReject:
		r.AutoAction, r.AutoAt = "reject", now.Add(payd.AutoDecisionDelay)
	}
	return nil
}

// AcceptRTP is the payer accepting an RTP (test-accept, the RTP page, the
// auto-accept alias) and paying it from the test account. amount, when
// given, must equal the RTP's.
func (p *Payer) AcceptRTP(ctx context.Context, merchantID, rtpID string, amount *payd.Money, now time.Time) (*payd.RTP, *payd.Payment, error) {
	return p.Ledger.CreditRTP(payd.WithCause(ctx, payd.CausePayer), merchantID, payd.Credit{
		Network: Name, TargetID: rtpID, Amount: amount, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN,
	}, now)
}

// RejectRTP is the payer rejecting an RTP.
func (p *Payer) RejectRTP(ctx context.Context, merchantID, rtpID string, now time.Time) (*payd.RTP, error) {
	return p.Ledger.RejectRTP(payd.WithCause(ctx, payd.CausePayer), merchantID, rtpID, now)
}

// PayQR is a payer paying a QR (test-pay and the QR page's form), with the
// payer's details as entered.
func (p *Payer) PayQR(ctx context.Context, merchantID string, in payd.PayInput, now time.Time) (*payd.QR, *payd.Payment, error) {
	return p.Ledger.CreditQR(payd.WithCause(ctx, payd.CausePayer), merchantID, payd.Credit{
		Network: Name, TargetID: in.QRID, Amount: in.Amount, Currency: in.Currency, PayerName: in.PayerName, PayerIBAN: in.IBAN,
	}, now)
}

// Cards is the sandbox's acquirer: the test card of spec §7.2 is approved,
// every other well-formed card declined.
type Cards struct{}

var _ payd.CardAcquirer = Cards{}

// Authorize answers for a well-formed card.
func (Cards) Authorize(_ context.Context, c *payd.Checkout, card payd.Card) (payd.CardResult, error) {
	res := payd.CardResult{Network: Name, Approved: card.Approved(), Mask: card.Mask(), Holder: card.Holder}
	if res.Approved {
		res.ApprovalCode = approvalCode(c.ID + card.Mask())
	}
	return res, nil
}

// approvalCode derives a 6-digit approval code.
func approvalCode(s string) string {
	var n uint32
	for i := 0; i < len(s); i++ {
		n = n*31 + uint32(s[i])
	}
	return fmt.Sprintf("%06d", n%1000000)
}

// Decisions plays the payer of the auto-accept and auto-reject test aliases.
type Decisions struct {
	Store Store
	Payer *Payer
	Clock payd.Clock
	Log   *slog.Logger
}

// RunOnce takes every decision that is due.
func (d *Decisions) RunOnce(ctx context.Context) (int, error) {
	now := d.Clock.Now()
	due, err := d.Store.DueRTPDecisions(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	times, clocked, err := merchantTimes(ctx, d.Store, now)
	if err != nil {
		return 0, err
	}
	for _, m := range clocked { // due as of the merchant's test clock
		more, err := d.Store.DueRTPDecisions(ctx, m.Now(now), 100, m.ID)
		if err != nil {
			return 0, err
		}
		due = append(due, more...)
	}
	done := 0
	for _, x := range due {
		if x.Action == "accept" {
			_, _, err = d.Payer.AcceptRTP(ctx, x.MerchantID, x.RTPID, nil, times(x.MerchantID))
		} else {
			_, err = d.Payer.RejectRTP(ctx, x.MerchantID, x.RTPID, times(x.MerchantID))
		}
		var pe *payd.Error
		switch {
		case errors.As(err, &pe) || errors.Is(err, payd.ErrConflict):
			// Cancelled, expired or decided meanwhile: nothing left to decide.
			if err := d.Store.ClearRTPDecision(ctx, x.RTPID); err != nil {
				return done, err
			}
		case err != nil:
			return done, err
		}
		done++
	}
	return done, nil
}

// Refunds is the sandbox network's refund processing: every new refund is
// taken at once (Created → Requested), and settles when its time comes
// with the outcome its reason asks for (spec §5.3, §7.2).
type Refunds struct {
	Store  Store
	Ledger payd.Ledger
	Clock  payd.Clock
	Batch  int // default 100
}

// RunOnce settles the refunds that are due and returns how many.
func (r *Refunds) RunOnce(ctx context.Context) (int, error) {
	if r.Batch == 0 {
		r.Batch = 100
	}
	now := r.Clock.Now()
	ctx = payd.WithCause(ctx, payd.CauseBank) // the sandbox plays the payer's bank
	if err := r.Store.TakeNewRefunds(ctx, now, 1000); err != nil {
		return 0, err
	}
	due, err := r.Store.DueRefunds(ctx, now, r.Batch)
	if err != nil {
		return 0, err
	}
	times, clocked, err := merchantTimes(ctx, r.Store, now)
	if err != nil {
		return 0, err
	}
	for _, m := range clocked { // due as of the merchant's test clock
		more, err := r.Store.DueRefunds(ctx, m.Now(now), r.Batch, m.ID)
		if err != nil {
			return 0, err
		}
		due = append(due, more...)
	}
	settled := 0
	for _, d := range due {
		_, err := r.Ledger.SettleRefund(ctx, d.ID, Outcome(d.Reason), times(d.MerchantID))
		if errors.Is(err, payd.ErrConflict) {
			continue // another instance settled it
		}
		if err != nil {
			return settled, err
		}
		settled++
	}
	return settled, nil
}

// merchantTimes returns each merchant's time at real time now: the test
// clock's, for the merchants that moved theirs.
func merchantTimes(ctx context.Context, s Store, now time.Time) (func(merchantID string) time.Time, []*payd.Merchant, error) {
	clocked, err := s.ClockedMerchants(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]*payd.Merchant, len(clocked))
	for _, m := range clocked {
		byID[m.ID] = m
	}
	return func(id string) time.Time {
		if m := byID[id]; m != nil {
			return m.Now(now)
		}
		return now
	}, clocked, nil
}

// Outcome is the final status the sandbox gives a refund with this reason.
func Outcome(reason string) payd.RefundStatus {
	switch reason {
	case payd.ReasonTestReject:
		return payd.RefundRejected
	case payd.ReasonTestManual:
		return payd.RefundManual
	}
	return payd.RefundAccepted
}
