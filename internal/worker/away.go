package worker

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"payd"
)

// A network whose connector is unavailable is asked with one order at a
// time.
//
// When every order was attempted on its own, each RTP created with the
// connector away cost a failed POST (a connection refused, or a wait of up
// to 10 s) and a transaction recording the failure: with the connector's
// port closed, production rtp-create fell to 974-1,685/s, 1.1-2.0 ms of CPU
// an RTP (BENCHMARKS.md). Now once awayAfter deliveries in a row find the
// network unavailable (payd.ErrRailsUnavailable; one 503 of a connector
// that takes the next order holds nothing), it is away until the
// schedule's next delay (OrderSchedule: 1 s, 2 s, 4 s, 8 s, then 15 s).
// Until then none of its orders is attempted: those a pass took are
// released together, due when the network is, with no attempt counted,
// and a new RTP's order is written due then instead of being handed
// (Holding). Then one delivery probes it while the others of that network
// wait for the outcome: taken, and they all go; unavailable again, and
// they are held for the next delay. Each network (Route) is away on its
// own.

// away is the state of each network an Orders delivers to.
type away struct {
	mu  sync.Mutex
	log *slog.Logger
	net map[string]*network
}

// awayAfter is how many deliveries in a row must find a network
// unavailable before it is away.
const awayAfter = 3

type network struct {
	away   bool
	streak int           // deliveries found it unavailable since one found it there
	until  time.Time     // while away: when the next probe may go
	fails  int           // times it went away or stayed away after a probe, in a row
	probe  chan struct{} // closed when the probe in flight ends; nil when none
}

// admission is away's answer for one order: attempt it (probe: its outcome
// decides for its network), wait for the probe in flight and ask again, or
// hold it until until.
type admission struct {
	attempt, probe bool
	wait           <-chan struct{}
	until          time.Time
}

func (a *away) of(route string) *network {
	if a.net == nil {
		a.net = map[string]*network{}
	}
	n := a.net[route]
	if n == nil {
		n = &network{}
		a.net[route] = n
	}
	return n
}

// admit says whether an order of route may be attempted at now.
func (a *away) admit(route string, now time.Time) admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.of(route)
	switch {
	case !n.away:
		return admission{attempt: true}
	case n.probe != nil:
		return admission{wait: n.probe}
	case !now.Before(n.until):
		n.probe = make(chan struct{})
		return admission{attempt: true, probe: true}
	}
	return admission{until: n.until}
}

// outcome records an attempt's result for route, at now; stopped: the
// pass was being stopped, so a failure says nothing of the network.
func (a *away) outcome(route string, probe, stopped bool, err error, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.of(route)
	if probe {
		close(n.probe)
		n.probe = nil
	}
	if stopped && err != nil {
		return
	}
	if !errors.Is(err, payd.ErrRailsUnavailable) {
		// Taken, or answered about this order alone: the connector is there.
		if n.away {
			a.log.Info("rails connector answering again", "route", route)
		}
		n.away, n.fails, n.streak = false, 0, 0
		return
	}
	n.streak++
	if probe || (!n.away && n.streak >= awayAfter) {
		if !n.away {
			a.log.Warn("rails connector unavailable: its orders wait, one order probes it", "route", route, "err", err)
		}
		n.away, n.fails = true, n.fails+1
		n.until = now.Add(orderDelay(n.fails))
	}
}

// resting reports whether every network seen is away with no probe due
// at now: a claim would only hold what it took.
func (a *away) resting(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.net) == 0 {
		return false
	}
	for _, n := range a.net {
		if !n.waiting(now) {
			return false
		}
	}
	return true
}

// waiting: away, with no probe due at now (one is in flight, or its time
// has not come).
func (n *network) waiting(now time.Time) bool {
	return n.away && (n.probe != nil || now.Before(n.until))
}

// holding reports whether route is away with no probe due at now, and
// until when (or now, while a probe is in flight).
func (a *away) holding(route string, now time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.net[route]
	if n == nil || !n.waiting(now) {
		return time.Time{}, false
	}
	if n.until.Before(now) {
		return now, true
	}
	return n.until, true
}

// isAway reports whether route is away (its orders held, a probe due or
// in flight).
func (a *away) isAway(route string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.net[route]
	return n != nil && n.away
}
