// Package webhook sends callbacks to merchants: one HTTP attempt at a time,
// through a client that follows no redirects and, in production, refuses at
// dial time every address a merchant could use to reach our own network
// (SSRF). Payloads and signatures are built in package payd, inside the
// transaction that queues the callback; this package only delivers them.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"payd"
)

// Timeout is how long one attempt may take (spec §6.7).
const Timeout = 10 * time.Second

// UserAgent identifies payd's callbacks.
const UserAgent = "payd-callbacks/1.0"

// ErrForbiddenAddress is the dial error for a refused destination.
var ErrForbiddenAddress = errors.New("destination address is not allowed")

// blocked are the ranges a production callback may never reach.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96", "2001:db8::/32",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Allowed reports whether a callback may connect to ip. Loopback is
// allowed only when allowLoopback is set (the sandbox).
func Allowed(ip netip.Addr, allowLoopback bool) bool {
	ip = ip.Unmap()
	if allowLoopback && ip.IsLoopback() {
		return true
	}
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

func allowListed(ip netip.Addr, allow []netip.Prefix) bool {
	for _, p := range allow {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// NewClient returns the HTTP client callbacks go through. The address check
// runs on the resolved address of every connection (so DNS names that
// resolve to private addresses are refused too), and redirects are never
// followed: a 3xx is a failed attempt.
func NewClient(allowLoopback bool) *http.Client { return NewClientAllowing(allowLoopback, nil) }

// NewClientAllowing is NewClient with an operator's allow-list: addresses
// in allow are reachable even where Allowed refuses them (e.g. a merchant
// system on the operator's own network, or a receiver on loopback in a
// production-mode test).
func NewClientAllowing(allowLoopback bool, allow []netip.Prefix) *http.Client {
	dialer := &net.Dialer{
		Timeout: Timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err == nil && allowListed(ap.Addr(), allow) {
				return nil
			}
			if err != nil || !Allowed(ap.Addr(), allowLoopback) {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: Timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			TLSHandshakeTimeout: Timeout,
			MaxIdleConnsPerHost: MaxIdlePerHost,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// MaxIdlePerHost is how many connections to one callback host stay open
// between attempts: as many as the attempts payd makes to it at once (two
// delivery passes of 64, worker.DeliveryLoops × Delivery.Parallel). With
// 16, a burst to one merchant dialed most of its connections anew and
// closed them after: at 1,900 callbacks a second the dials were 4% of
// payd's CPU, and callbacks per second rose 5% without them.
const MaxIdlePerHost = 128

// Result is what one attempt came to.
type Result struct {
	StatusCode int    // 0 when no response arrived
	Error      string // "" when a response arrived
	Body       string // the first 4 KiB of the response body
}

// ResponseExcerpt is how much of an answer is kept.
const ResponseExcerpt = 4 << 10

// OK reports whether the attempt succeeded: HTTP 200 and nothing else.
func (r Result) OK() bool { return r.Error == "" && r.StatusCode == http.StatusOK }

// Send makes attempt number n of callback c, within the client's timeout
// (Timeout for NewClient's).
func Send(ctx context.Context, client *http.Client, c *payd.Callback, n int) Result {
	limit := client.Timeout
	if limit <= 0 {
		limit = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return Result{Error: "bad callback url: " + err.Error()}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set("X-Callback-Id", c.ID)
	h.Set("X-Callback-Event", string(c.Event))
	h.Set("X-Callback-Attempt", strconv.Itoa(n))
	h.Set("X-Signature", c.Signature)
	h.Set("X-Signature-Timestamp", strconv.FormatInt(c.Timestamp, 10))
	resp, err := client.Do(req)
	if err != nil {
		msg := err.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		return Result{Error: msg}
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, ResponseExcerpt))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	// Kept as text: valid UTF-8 without NUL (PostgreSQL text refuses NUL,
	// and a refused insert would lose the attempt's record).
	body := strings.ReplaceAll(strings.ToValidUTF8(string(excerpt), "\uFFFD"), "\x00", "\uFFFD")
	return Result{StatusCode: resp.StatusCode, Body: body}
}
