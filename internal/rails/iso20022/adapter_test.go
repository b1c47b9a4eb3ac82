package iso20022

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
)

// connector is a connector on loopback that keeps what it was sent and
// answers each POST with the status answer gives for its path.
type connector struct {
	mu     sync.Mutex
	posts  []*http.Request
	bodies [][]byte
	answer func(path string) int
}

func (c *connector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.posts, c.bodies = append(c.posts, r), append(c.bodies, body)
	c.mu.Unlock()
	switch code := c.answer(r.URL.Path); {
	case code == http.StatusTemporaryRedirect:
		http.Redirect(w, r, "/taken", code)
	case strings.HasPrefix(r.URL.Path, "/long"):
		w.WriteHeader(code)
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
	default:
		w.WriteHeader(code)
	}
}

// TestDeliver posts orders to a connector over real HTTP: a 2xx is taken
// (with a body of any length), anything else (a redirect too, which is
// not followed) is a failure, an
// answer that does not come within the deadline is a failure, and every
// message is the order's rendering, signed, over TLS for an https URL.
func TestDeliver(t *testing.T) {
	const key = "adapter-test-key-0123"
	clock := payd.NewFakeClock(epoch)
	orders := testOrders()
	c := &connector{answer: func(path string) int {
		switch path {
		case "/ok", "/taken", "/long-ok":
			return http.StatusOK
		case "/accepted":
			return http.StatusAccepted
		case "/down", "/long-down":
			return http.StatusServiceUnavailable
		case "/busy":
			return http.StatusTooManyRequests
		case "/refused":
			return http.StatusBadRequest
		case "/moved":
			return http.StatusTemporaryRedirect
		}
		return http.StatusNotFound
	}}
	plain := httptest.NewServer(c)
	defer plain.Close()

	// What each answer is: taken, or a failure of this order alone, or
	// the connector unavailable (payd.ErrRailsUnavailable: the outbox then
	// holds the other orders while one probes it).
	const taken, failed, unavailable = "taken", "failed", "unavailable"
	for path, want := range map[string]string{"/ok": taken, "/accepted": taken, "/long-ok": taken,
		"/down": unavailable, "/long-down": unavailable, "/busy": unavailable,
		"/refused": failed, "/moved": failed, "/missing": failed} {
		r := &Rails{URL: plain.URL + path, Key: key, BIC: testBIC, Clock: clock, Client: NewClient(4)}
		_, err := r.Deliver(context.Background(), orders["pain013.xml"])
		got := taken
		if errors.Is(err, payd.ErrRailsUnavailable) {
			got = unavailable
		} else if err != nil {
			got = failed
		}
		if got != want {
			t.Errorf("%s: %s (%v), want %s", path, got, err, want)
		}
	}
	closed := httptest.NewServer(c)
	closed.Close()
	r := &Rails{URL: closed.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(4)}
	if _, err := r.Deliver(context.Background(), orders["pain013.xml"]); !errors.Is(err, payd.ErrRailsUnavailable) {
		t.Errorf("a connector not listening: %v, want the connector unavailable", err)
	}
	c.mu.Lock()
	if len(c.posts) != 9 {
		t.Errorf("the connector got %d POSTs, want 9 (no redirect followed)", len(c.posts))
	}
	want, err := Render(orders["pain013.xml"], testBIC)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range c.posts {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/xml; charset=utf-8" {
			t.Errorf("POST %d: %s with Content-Type %q", i, r.Method, r.Header.Get("Content-Type"))
		}
		if string(c.bodies[i]) != string(want) {
			t.Errorf("POST %d: the body is not the order's rendering", i)
		}
		if err := Verify(r.Header, key, c.bodies[i], clock.Now()); err != nil {
			t.Errorf("POST %d: %v", i, err)
		}
		if got, want := r.Header.Get(HeaderTimestamp), strconv.FormatInt(epoch.UnixMilli(), 10); got != want {
			t.Errorf("POST %d: timestamp %s, want the clock's %s", i, got, want)
		}
	}
	c.mu.Unlock()

	t.Run("https", func(t *testing.T) {
		s := httptest.NewUnstartedServer(c)
		s.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshake below
		s.StartTLS()
		defer s.Close()
		pool := x509.NewCertPool()
		pool.AddCert(s.Certificate())
		client := NewClient(4)
		client.TLSConfig = &tls.Config{RootCAs: pool}
		r := &Rails{URL: s.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: client}
		if _, err := r.Deliver(context.Background(), orders["camt055.xml"]); err != nil {
			t.Fatal(err)
		}
		// A certificate the client does not trust is a failure.
		r = &Rails{URL: s.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(4)}
		if _, err := r.Deliver(context.Background(), orders["camt055.xml"]); err == nil {
			t.Fatal("delivered to an untrusted certificate")
		}
	})

	t.Run("a connection the connector closed while idle", func(t *testing.T) {
		// A kept-alive connection the connector closed: the message goes
		// again at once on a fresh one, not a second later by the schedule.
		s := httptest.NewUnstartedServer(c)
		s.Config.IdleTimeout = 50 * time.Millisecond
		s.Start()
		defer s.Close()
		r := &Rails{URL: s.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(1)}
		for i := range 3 {
			if _, err := r.Deliver(context.Background(), orders["pain013.xml"]); err != nil {
				t.Fatalf("delivery %d: %v", i, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("every connection closed while idle", func(t *testing.T) {
		// A connector that restarted has closed every connection payd
		// kept: a message goes again at once on a fresh connection, not
		// on the next of the dead ones (and then a second later by the
		// schedule).
		const conns = 4
		var arrived sync.WaitGroup
		arrived.Add(conns)
		first := make(chan struct{})
		var once sync.Once
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select {
			case <-first:
			default:
				// The first messages wait for one another, so that each
				// goes on a connection of its own.
				arrived.Done()
				arrived.Wait()
				once.Do(func() { close(first) })
			}
		}))
		defer s.Close()
		r := &Rails{URL: s.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(conns)}
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() {
				if _, err := r.Deliver(context.Background(), orders["pain013.xml"]); err != nil {
					t.Errorf("first delivery %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if n := r.Client.ConnsCount(); n != conns {
			t.Fatalf("%d connections kept, want %d", n, conns)
		}
		s.CloseClientConnections()
		time.Sleep(50 * time.Millisecond) // the closes reach the client
		for i := range 3 {
			if _, err := r.Deliver(context.Background(), orders["pain013.xml"]); err != nil {
				t.Fatalf("delivery %d after the connector closed every connection: %v", i, err)
			}
		}
	})

	t.Run("no answer", func(t *testing.T) {
		release := make(chan struct{})
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		defer s.Close()
		defer close(release)
		r := &Rails{URL: s.URL, Key: key, BIC: testBIC, Clock: clock, Client: NewClient(4)}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := r.Deliver(ctx, orders["pacs004.xml"])
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err %v, want a timeout", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("gave up after %s, want the context's 300 ms", d)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := &Rails{URL: plain.URL + "/ok", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(4)}
		c.mu.Lock()
		n := len(c.posts)
		c.mu.Unlock()
		if _, err := r.Deliver(ctx, orders["pain013.xml"]); err == nil {
			t.Fatal("delivered with a cancelled context")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.posts) != n {
			t.Fatal("posted with a cancelled context")
		}
	})
}

// TestDeliverRegistration: a registry order goes as the registry's JSON
// with its media type, signed; it is taken when the registry's signed
// answer keeps payd's link; an answer keeping another link is a refusal
// (never sent again); an unsigned answer, or one of an older revision, is
// a failure to try again.
func TestDeliverRegistration(t *testing.T) {
	const key = "adapter-test-key-0123"
	clock := payd.NewFakeClock(epoch)
	m := &payd.Merchant{ID: "01a1fd38-56fa-7f9d-ba9b-1038a64df0aa", Name: "Cafe", IBAN: "MD24AG000225100013104168"}
	amount := payd.Money(1500)
	q, _ := payd.NewQR(payd.QRInput{Type: "Dynamic", AmountType: "Fixed", Currency: "MDL", Ext: payd.ExtensionInput{Amounts: payd.Amounts{Amount: &amount}}}, m.ID, epoch)
	reg := payd.RegistrationOf("AGR", m, q)
	reg.Revision = 3
	o := payd.RegistryOrder(m, reg, epoch)
	var answer func(msg RegistryMessage) (RegistryAnswer, bool)
	var got []RegistryMessage
	var kinds []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := Verify(r.Header, key, body, clock.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var msg RegistryMessage
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got, kinds = append(got, msg), append(kinds, r.Header.Get("Content-Type"))
		a, sign := answer(msg)
		out, _ := json.Marshal(a)
		if sign {
			Sign(w.Header(), key, out, clock.Now())
		}
		w.Write(out)
	}))
	defer s.Close()
	r := &Rails{URL: s.URL + "/iso20022", Key: key, BIC: testBIC, Clock: clock, Client: NewClient(1)}
	keep := func(msg RegistryMessage) (RegistryAnswer, bool) {
		return RegistryAnswer{MsgID: msg.MsgID, Link: msg.QR.Link, Revision: msg.QR.Revision, Status: RegistryRegistered}, true
	}
	answer = keep
	if _, err := r.Deliver(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != RegistryType || got[0].MsgID != ID(o.ID) || got[0].QR.Link != reg.Link || got[0].QR.Revision != 3 ||
		kinds[0] != RegistryMediaType || *got[0].QR.Extension.Amount != amount {
		t.Fatalf("sent %+v as %q", got, kinds)
	}
	for _, c := range []struct {
		what    string
		answer  func(RegistryMessage) (RegistryAnswer, bool)
		refused bool
	}{
		{"another link", func(msg RegistryMessage) (RegistryAnswer, bool) {
			a, _ := keep(msg)
			a.Link = strings.Replace(a.Link, "/m/", "/e/", 1)
			return a, true
		}, true},
		{"unsigned", func(msg RegistryMessage) (RegistryAnswer, bool) { a, _ := keep(msg); return a, false }, false},
		{"an older revision", func(msg RegistryMessage) (RegistryAnswer, bool) { a, _ := keep(msg); a.Revision = 2; return a, true }, false},
	} {
		answer = c.answer
		_, err := r.Deliver(context.Background(), o)
		if err == nil || errors.Is(err, payd.ErrOrderRefused) != c.refused || errors.Is(err, payd.ErrRailsUnavailable) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
}
