// Package network is the registry of the networks a production payd
// talks to: the rails that deliver RTPs and carry credits, and the card
// acquirers. Each network's package registers itself from its init
// (Register) with its settings, how to check them and how to start it;
// cmd/payd imports each network's package once, offers every registered
// network's settings, and starts the ones PAYD_RAILS and
// PAYD_CARD_ACQUIRER name. Payments, orders and card sessions record the
// name of their network, so an order goes to the network it belongs to
// (payd.Networks) whichever others run beside it.
//
// The sandbox's simulated network is not one of them: it is sandbox
// mode's, wired with the test endpoints and the payer pages.
package network

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"payd"
)

// Role is what a network does for payd.
type Role string

const (
	Rails Role = "rails" // delivers RTPs and refunds, carries credits (PAYD_RAILS)
	Cards Role = "cards" // takes card payments on its own page (PAYD_CARD_ACQUIRER)
)

// Setting is one of a network's settings: a flag of payd serve and its
// PAYD_ variable, offered whichever network is chosen.
type Setting struct {
	Flag, Env, Default, Help string
	// Secret: it can also be read from a file (flag FLAG-file, variable
	// ENV_FILE), and is never printed.
	Secret bool
	// Parse, when set, checks a value as it is read; its error is given
	// with the variable's name.
	Parse func(v string) error
}

// Values are a network's settings as read, by flag name.
type Values map[string]string

// Network is one registered network.
type Network struct {
	Name     string // in PAYD_RAILS or PAYD_CARD_ACQUIRER, and in the data
	Role     Role
	Settings []Setting
	// Needs says what choosing it takes, for the error of a production
	// with no rails: "with PAYD_RAILS_URL and …".
	Needs string
	// Check checks the settings together when a deployment uses the
	// network (each error names its variable), and may fill in defaults.
	Check func(v Values) error
	// QRRegistry is the PSP code of the QR registry whose links the
	// network's QRs carry ("": none); nil for a network without one.
	QRRegistry func(v Values) string
	// Start makes the network's side of a serving instance.
	Start func(h *Host) (Started, error)
}

// Host is what a serving instance gives the networks it starts.
type Host struct {
	Values    Values
	PublicURL string
	Location  *time.Location // the bank's time zone, of statements' dates
	Clock     payd.Clock
	Log       *slog.Logger
	Ledger    payd.Ledger
	Inbox     payd.Inbox
	// Statements takes the bank's statements; StatementRefused is told of
	// each one refused, and why.
	Statements       payd.StatementBook
	StatementRefused func(reason string)
	// Conns is how many deliveries of orders run at once.
	Conns int
	// Mount serves a handler of the network's (the messages or callbacks
	// it posts to payd) at a pattern of payd's public listener.
	Mount func(pattern string, h http.Handler)
}

// Started is a network's side of a serving instance.
type Started struct {
	Orders payd.Rails // delivers the orders that name it; nil: it takes none
	// Gateway is an acquirer's: the checkout pages open card sessions with
	// it, the card poller asks it about them. CallbackURL is where it
	// posts their outcomes.
	Gateway     payd.CardGateway
	CallbackURL string
}

var (
	mu         sync.RWMutex
	registered = map[string]Network{}
)

// Register adds a network; a second one of the same name panics.
func Register(n Network) {
	mu.Lock()
	defer mu.Unlock()
	if n.Name == "" || (n.Role != Rails && n.Role != Cards) || n.Start == nil {
		panic(fmt.Sprintf("network: %q: a network needs a name, a role and Start", n.Name))
	}
	if _, dup := registered[n.Name]; dup {
		panic("network: " + n.Name + " registered twice")
	}
	registered[n.Name] = n
}

// Lookup finds a registered network of a role by name.
func Lookup(role Role, name string) (Network, bool) {
	mu.RLock()
	defer mu.RUnlock()
	n, ok := registered[name]
	return n, ok && n.Role == role
}

// All are the registered networks, by role (rails first), then name.
func All() []Network {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Network, 0, len(registered))
	for _, n := range registered {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role == Rails
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names are the registered networks' names of a role, sorted.
func Names(role Role) []string {
	var out []string
	for _, n := range All() {
		if n.Role == role {
			out = append(out, n.Name)
		}
	}
	return out
}
