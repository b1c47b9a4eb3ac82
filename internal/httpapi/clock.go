package httpapi

import (
	"errors"
	"strconv"
	"time"

	"payd"
)

// The sandbox's test clock, per merchant (403 90002 in production).

type clockResult struct {
	Now           wireTime `json:"now"`
	OffsetSeconds int64    `json:"offsetSeconds"`
}

func (s *Server) clockResult(m *payd.Merchant) clockResult {
	return clockResult{Now: wireTime(m.Now(s.clock.Now())), OffsetSeconds: int64(m.ClockOffset / time.Second)}
}

// handleClock is GET /v2/sandbox/clock.
func (s *Server) handleClock(c *call) error { return c.respond(s.clockResult(c.m)) }

// handleClockAdvance is POST /v2/sandbox/clock/advance {"seconds": N}.
func (s *Server) handleClockAdvance(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	n := o.integer("seconds")
	var errs payd.Errors
	// Compared as seconds, before any multiplication: 2^63-1 seconds must
	// not wrap into a small (or negative) duration.
	maxSeconds := int(payd.MaxClockAdvance / time.Second)
	if n == nil && !o.errs.Has("seconds") {
		errs = append(errs, payd.Invalid("seconds", "is required"))
	} else if n != nil && (*n < 1 || *n > maxSeconds) {
		errs = append(errs, payd.Invalid("seconds", "must be an integer from 1 to "+strconv.Itoa(maxSeconds)))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	m, err := s.store.AdvanceClock(c.r.Context(), c.m.ID, time.Duration(*n)*time.Second)
	if errors.Is(err, payd.ErrConflict) {
		return payd.Invalid("seconds", "would take the test clock more than "+strconv.Itoa(int(payd.MaxClockOffset/(24*time.Hour)))+
			" days ahead of real time (reset it first)")
	}
	if err != nil {
		return err
	}
	return c.respond(s.clockResult(m))
}

// handleClockReset is POST /v2/sandbox/clock/reset.
func (s *Server) handleClockReset(c *call) error {
	if err := c.noBody(); err != nil {
		return err
	}
	m, err := s.store.ResetClock(c.r.Context(), c.m.ID, s.clock.Now())
	if err != nil {
		return err
	}
	return c.respond(s.clockResult(m))
}

// clockNote says, in every 12006 item of err, that the merchant's test
// clock is ahead: an expiresAt computed from real time is refused then,
// and the bare window message would not say why.
func clockNote(err error, offset time.Duration, now time.Time) error {
	var es payd.Errors
	var e *payd.Error
	switch {
	case errors.As(err, &es):
	case errors.As(err, &e):
		es = payd.Errors{e}
	default:
		return err
	}
	out := make(payd.Errors, len(es))
	for i, e := range es {
		if e.Code == payd.CodeExpiresAtWindow {
			n := *e
			n.Message += " This merchant's sandbox test clock is " + aheadText(offset) + " ahead of real time (its now is " +
				payd.FormatTime(now) + "); POST /v2/sandbox/clock/reset returns it to real time."
			e = &n
		}
		out[i] = e
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

// aheadText renders a test-clock offset: whole days as "2 days", else Go's
// duration text.
func aheadText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + " days"
	}
	return d.String()
}
