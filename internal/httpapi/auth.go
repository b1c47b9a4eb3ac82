package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/time/rate"

	"payd"
	"payd/internal/console"
)

func contextWithMerchant(ctx context.Context, m *payd.Merchant) context.Context {
	return context.WithValue(ctx, merchantKey, m)
}

// bearer extracts the token of "Authorization: Bearer <token>"; the scheme
// is case-insensitive and extra spaces are tolerated.
func bearer(h string) string {
	h = strings.TrimSpace(h)
	i := strings.IndexFunc(h, unicode.IsSpace)
	if i < 0 || !strings.EqualFold(h[:i], "Bearer") {
		return ""
	}
	tok := strings.TrimLeftFunc(h[i:], unicode.IsSpace)
	if strings.IndexFunc(tok, unicode.IsSpace) >= 0 { // a third field
		return ""
	}
	return tok
}

func (s *Server) authenticate(r *http.Request, now time.Time) (*payd.Merchant, error) {
	tok := bearer(r.Header.Get("Authorization"))
	if tok == "" || len(tok) > 256 {
		return nil, payd.E(payd.CodeUnauthorized)
	}
	// A console session's token acts only through the console: sent as a
	// bearer token from outside it is refused like an unknown one.
	if strings.HasPrefix(tok, console.TokenPrefix) && !console.InProcess(r.Context()) {
		return nil, payd.E(payd.CodeUnauthorized)
	}
	m, err := s.store.Authenticate(r.Context(), tok, now)
	if errors.Is(err, payd.ErrNotFound) {
		return nil, payd.E(payd.CodeUnauthorized)
	}
	return m, err
}

type tokenResult struct {
	AccessToken string `json:"accessToken"`
	ExpiresIn   int    `json:"expiresIn"`
	TokenType   string `json:"tokenType"`
}

// handleToken is POST /v2/auth/token.
func (s *Server) handleToken(c *call) error {
	o, err := c.object(true)
	if err != nil {
		return err
	}
	if o.unknown {
		return o.err(nil)
	}
	clientID, secret := o.str("clientId"), o.str("clientSecret")
	if len(o.errs) > 0 || clientID == "" || secret == "" {
		return payd.E(payd.CodeMissingCredentials)
	}
	// Every clientId payd issues is a GUID. Anything else is unknown
	// (401, as the contract says of an unknown value) and is refused here,
	// before it can become a limiter's key or a query: a body-sized
	// clientId kept as a key would let anyone fill payd's memory.
	if _, ok := payd.ParseID(clientID); !ok || len(secret) > maxSecretLen {
		return payd.E(payd.CodeBadCredentials)
	}
	if err := s.limits.client.allow(limitKeyOf(clientID, addrKey(clientOf(c.r))), c.now); err != nil {
		return err
	}
	m, err := s.store.MerchantByClientID(c.r.Context(), clientID)
	if errors.Is(err, payd.ErrNotFound) || err == nil && !payd.SecretMatches(secret, m.SecretHash) {
		// Failures are counted per clientId across all addresses; past the
		// budget a wrong secret is refused with 429, but a right one still
		// gets its token, so nobody can lock a merchant out.
		if err := s.limits.failed.allow(limitKeyOf(clientID), c.now); err != nil {
			return err
		}
		return payd.E(payd.CodeBadCredentials)
	}
	if err != nil {
		return err
	}
	if !m.Active {
		return payd.E(payd.CodeMerchantInactive)
	}
	tok, err := s.store.IssueToken(c.r.Context(), m, s.cfg.TokenTTL, c.now)
	if err != nil {
		return err
	}
	return c.respond(tokenResult{AccessToken: tok, ExpiresIn: int(s.cfg.TokenTTL / time.Second), TokenType: "Bearer"})
}

// tokenLimits are the token endpoint's rate limits (spec §1): per source
// address (before the body is read), per clientId and source address, and
// the failed attempts per clientId across all addresses. Counting only
// failures per clientId keeps a victim's own requests working however many
// wrong secrets others send for it. They are kept per instance (spec §9
// leaves that open): several instances multiply the allowance, which still
// bounds brute force.
type tokenLimits struct {
	client, addr, failed *keyedLimiter
	pages                *keyedLimiter // the payer's pages, per source address (routes.go payerPages)
	operator             *keyedLimiter // wrong operator tokens, per source address (reports.go)
}

// FailedTokenAttempts is how many wrong secrets a clientId may receive a
// minute, from all addresses together, before they answer 429.
const FailedTokenAttempts = 100

func newTokenLimits(perClient, perAddr, pagesPerAddr int) *tokenLimits {
	return &tokenLimits{client: newKeyedLimiter(perClient), addr: newKeyedLimiter(perAddr), failed: newKeyedLimiter(FailedTokenAttempts),
		pages: newKeyedLimiter(pagesPerAddr), operator: newKeyedLimiter(FailedOperatorAttempts)}
}

// limitAddr is the per-address check, made before the body is read.
func (s *Server) limitAddr(c *call) error {
	return s.limits.addr.allow(limitKeyOf(addrKey(clientOf(c.r))), c.now)
}

// maxSecretLen bounds a presented clientSecret: payd's are GUIDs (36
// characters); a longer one cannot match and is not hashed.
const maxSecretLen = 256

// limitKey is a limiter's key: a hash of what it counts, so that a bucket
// costs the same few bytes whatever the request carried.
type limitKey [16]byte

// limitKeyOf hashes parts (each length-prefixed, so no two lists collide).
func limitKeyOf(parts ...string) limitKey {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k limitKey
	copy(k[:], h.Sum(nil))
	return k
}

// addrKey is the unit an address is limited by: an IPv4 address, or an
// IPv6 address's /64 (one customer's network; a single host may hold the
// 2^64 addresses of its prefix).
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// maxBuckets bounds a limiter's buckets. Past it, the buckets that have
// refilled are dropped and, if none has, an arbitrary one: the limiter then
// forgets one key's count early rather than grow without bound.
const maxBuckets = 1 << 16

// sweepEvery is how often refilled buckets are dropped. A bucket refills
// within a minute (its burst is a minute's allowance).
const sweepEvery = time.Minute

// keyedLimiter is a token bucket per key: perMinute requests a minute,
// with a burst of the same size.
type keyedLimiter struct {
	mu      sync.Mutex
	per     rate.Limit
	burst   int
	max     int
	buckets map[limitKey]*rate.Limiter
	swept   time.Time
}

func newKeyedLimiter(perMinute int) *keyedLimiter {
	return &keyedLimiter{per: rate.Limit(float64(perMinute) / 60), burst: perMinute, max: maxBuckets, buckets: map[limitKey]*rate.Limiter{}}
}

// sweep drops the buckets that have refilled: a full bucket is
// indistinguishable from a fresh one.
func (k *keyedLimiter) sweep(now time.Time) {
	for key, l := range k.buckets {
		if l.TokensAt(now) >= float64(k.burst) {
			delete(k.buckets, key)
		}
	}
	k.swept = now
}

func (k *keyedLimiter) allow(key limitKey, now time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.swept) >= sweepEvery {
		k.sweep(now)
	}
	l := k.buckets[key]
	if l == nil {
		if len(k.buckets) >= k.max {
			k.sweep(now)
			for victim := range k.buckets {
				if len(k.buckets) < k.max {
					break
				}
				delete(k.buckets, victim)
			}
		}
		l = rate.NewLimiter(k.per, k.burst)
		k.buckets[key] = l
	}
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		secs := int(math.Ceil(d.Seconds()))
		if secs < 1 {
			secs = 1
		}
		return payd.E(payd.CodeRateLimited, "retryAfter", strconv.Itoa(secs))
	}
	return nil
}

// size is how many buckets the limiter holds.
func (k *keyedLimiter) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.buckets)
}
