package httpapi

import (
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
	if n == nil && !o.errs.Has("seconds") {
		errs = append(errs, payd.Invalid("seconds", "is required"))
	} else if n != nil && (*n < 1 || time.Duration(*n)*time.Second > payd.MaxClockAdvance) {
		errs = append(errs, payd.Invalid("seconds", "must be an integer from 1 to 31536000"))
	}
	if err := o.err(errs.Err()); err != nil {
		return err
	}
	m, err := s.store.AdvanceClock(c.r.Context(), c.m.ID, time.Duration(*n)*time.Second)
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
