package storetest

import (
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"payd/internal/sqlstore"
)

// Proxy is a TCP proxy in front of the test PostgreSQL that a test can
// cut, as a database outage does (Cut closes every connection through it
// and refuses new ones until Restore), or hang, as a network that drops
// packets does (Hang stops forwarding without closing anything).
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	hung   bool
	conns  map[net.Conn]bool
}

// PostgresBehindProxy opens a migrated store in a new schema of the test
// PostgreSQL (as Postgres does) whose connections go through a Proxy.
func PostgresBehindProxy(t testing.TB) (*sqlstore.Store, *Proxy) {
	t.Helper()
	_, direct := Postgres(t)
	u, p := NewProxy(t, direct)
	return open(t, u, sqlstore.Options{}), p
}

// NewProxy starts a Proxy in front of the database of the PostgreSQL URL
// direct and returns the URL that goes through it.
func NewProxy(t testing.TB, direct string) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.Cut() })
	u.Host = ln.Addr().String()
	return u.String(), p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.isHung() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut drops every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Hang stops forwarding on every connection, keeping them open.
func (p *Proxy) Hang() {
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
}

func (p *Proxy) isHung() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hung
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut, p.hung = false, false
	p.mu.Unlock()
}

// HasPostgres reports whether the test PostgreSQL is configured.
func HasPostgres() bool { return os.Getenv("PAYD_TEST_POSTGRES_URL") != "" }
