package sqlstore_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestRoundTrips: on PostgreSQL a transaction sends BEGIN with its first
// statement and its queued writes with COMMIT (postgres/tx.go), so an RTP's
// acceptance is two round trips (it was four) and a transaction whose
// writes are all queued is one. A proxy between the store and the server
// counts the round trips: the times the store speaks after the server did.
// A connection the pool reuses after a second idle is pinged first (one
// more), so each count is the least of five.
func TestRoundTrips(t *testing.T) {
	_, u := storetest.Postgres(t)
	p := startTurnProxy(t, u)
	s, err := sqlstore.Open(p.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.SetSecretKey(storetest.SecretKey); err != nil {
		t.Fatal(err)
	}
	m, _ := newMerchant(t, s, 0)
	now := storetest.Epoch
	least := func(what string, want int64, f func()) {
		t.Helper()
		for range 5 { // each pooled connection prepares the statements once
			f()
		}
		got := int64(-1)
		for range 5 {
			before := p.turns.Load()
			f()
			if n := p.turns.Load() - before; got < 0 || n < got {
				got = n
			}
		}
		if got != want {
			t.Errorf("%s: %d round trips, want %d", what, got, want)
		}
	}
	var waiting []*payd.RTP
	for range 10 {
		waiting = append(waiting, newRTP(t, s, m, "37369112221", now))
	}
	least("an RTP's acceptance", 2, func() {
		r := waiting[0]
		waiting = waiting[1:]
		if _, _, err := s.CreditRTP(ctx, m.ID, payd.Credit{TargetID: r.ID, PayerName: payd.TestRTPPayer, PayerIBAN: payd.TestIBAN}, now); err != nil {
			t.Fatal(err)
		}
	})
	// A bank's credit (Store.Credit, recorded once): a QR's is BEGIN, the
	// inbound record and the QR's lock with its merchant in one round trip,
	// the writes with COMMIT in the other; an RTP's looks for a QR first.
	q, _ := payd.NewQR(payd.QRInput{Type: string(payd.QRStatic), AmountType: string(payd.AmountFree), Currency: "MDL"}, m.ID, now)
	if err := s.CreateQR(ctx, q, nil); err != nil {
		t.Fatal(err)
	}
	credits := 0
	credit := func(target string, amount *payd.Money) {
		credits++
		msg := payd.Message{ID: fmt.Sprint("RT-", credits), Kind: "pacs.008", Outcome: "ACCC", At: now}
		if _, err := s.Once(msg).Credit(ctx, payd.Credit{TargetID: target, Amount: amount, PayerName: "PAYER", PayerIBAN: payd.TestIBAN}, now); err != nil {
			t.Fatal(err)
		}
	}
	amount := payd.Money(100)
	least("a bank's credit of a QR", 2, func() { credit(q.ID, &amount) })
	for range 10 {
		waiting = append(waiting, newRTP(t, s, m, "37369112221", now))
	}
	least("a bank's credit of an RTP", 3, func() {
		r := waiting[0]
		waiting = waiting[1:]
		credit(r.ID, nil)
	})
	if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
		return w.Write(ctx, -1, "INSERT INTO leases (name, owner, until) VALUES ('rt', 'me', 0)")
	}); err != nil {
		t.Fatal(err)
	}
	// An RTP created alone, with its pain.013 (the rails take orders):
	// both rows in one statement, in autocommit.
	s.SetRails("iso20022")
	least("an RTP with its pain.013", 1, func() { newRTP(t, s, m, "37369112221", now) })
	n := 0
	least("a transaction of queued writes", 1, func() {
		n++
		if err := s.InWriteTx(ctx, func(w sqlstore.WriteTx) error {
			if err := w.Write(ctx, -1, "INSERT INTO leases (name, owner, until) VALUES (?, 'me', 1)", fmt.Sprint("rt-", n)); err != nil {
				return err
			}
			return w.Write(ctx, 1, "UPDATE leases SET until = ? WHERE name = 'rt'", n)
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// turnProxy forwards TCP connections to a PostgreSQL server and counts the
// client's turns to speak.
type turnProxy struct {
	url   string
	turns atomic.Int64
}

func startTurnProxy(t *testing.T, dbURL string) *turnProxy {
	t.Helper()
	pu, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := pu.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pu.Host = ln.Addr().String()
	p := &turnProxy{url: pu.String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

func (p *turnProxy) serve(c net.Conn, target string) {
	defer c.Close()
	srv, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer srv.Close()
	var serverSpoke atomic.Bool
	serverSpoke.Store(true)
	go func() {
		io.Copy(c, readerFunc(func(b []byte) (int, error) {
			n, err := srv.Read(b)
			if n > 0 {
				serverSpoke.Store(true)
			}
			return n, err
		}))
		c.Close()
	}()
	io.Copy(srv, readerFunc(func(b []byte) (int, error) {
		n, err := c.Read(b)
		if n > 0 && serverSpoke.Swap(false) {
			p.turns.Add(1)
		}
		return n, err
	}))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }
