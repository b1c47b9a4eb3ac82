// Package hang is an HTTP endpoint that accepts connections and never
// answers, as a merchant's server that hangs: the callback tests and
// payd-load's rtp-flow-hung send callbacks to it.
package hang

import (
	"net"
	"sync"
)

// Endpoint holds every connection it accepts open, unanswered, until
// Close.
type Endpoint struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// Listen starts an endpoint on a free loopback port.
func Listen() (*Endpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Endpoint{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
		}
	}()
	return e, nil
}

// URL is a callback URL on the endpoint.
func (e *Endpoint) URL() string { return "http://" + e.ln.Addr().String() + "/callbacks" }

// Accepted is how many connections it has accepted.
func (e *Endpoint) Accepted() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// Close stops accepting and closes every connection held.
func (e *Endpoint) Close() {
	e.ln.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		c.Close()
	}
}
