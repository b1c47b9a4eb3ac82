package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"payd"
)

// The client's address. Behind a reverse proxy every request arrives from
// the proxy's address, and a limit per address would be one limit for
// everybody; behind an operator's proxies (PAYD_TRUSTED_PROXIES) the
// client's address is taken from X-Forwarded-For instead. Only a request
// whose peer is trusted is read so, and only the part of the header that
// trusted proxies wrote: the entries are read from the right (each proxy
// appends the address it saw), skipping trusted ones, and the first
// untrusted entry is the client. Anything to its left was written by the
// client itself and is ignored.

// clientAddr finds the address of r's client.
func (s *Server) clientAddr(r *http.Request) string {
	peer := peerHost(r)
	if len(s.cfg.TrustedProxies) == 0 || !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		a, err := netip.ParseAddr(hop)
		if err != nil {
			// Not an address (a proxy that writes "unknown", or a port):
			// nothing further left can be trusted either.
			if ap, perr := netip.ParseAddrPort(hop); perr == nil {
				a = ap.Addr()
			} else {
				return peer
			}
		}
		if !s.trusted(a.Unmap().String()) {
			return a.Unmap().String()
		}
		peer = a.Unmap().String()
	}
	return peer // every hop is a trusted proxy: the left-most one
}

func (s *Server) trusted(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerHost is the host of the TCP peer.
func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientOf is the client's address the outermost middleware found.
func clientOf(r *http.Request) string {
	if a := payd.ClientAddrOf(r.Context()); a != "" {
		return a
	}
	return peerHost(r)
}

func withClient(ctx context.Context, addr string) context.Context {
	return payd.WithClientAddr(ctx, addr)
}
