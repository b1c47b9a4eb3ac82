package payd

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// Merchant is a tenant: it holds credentials, a signature key that signs its
// callbacks, and the settings that shape its payments (spec §0.2).
type Merchant struct {
	ID            string
	Name          string
	ClientID      string
	SecretHash    string // SHA-256 of the client secret, hex
	SecretVersion int    // bumped on rotation; tokens of older versions are dead
	SignatureKey  string
	Active        bool
	CommissionBP  int    // 0–10000 basis points
	IBAN          string // "" when unset
	MCC           string
	CreatedAt     time.Time
	// The sandbox's test clock: the merchant's time is real time plus
	// ClockOffset (zero in production, and after a reset).
	ClockOffset time.Duration
}

// Bounds of the sandbox's test clock: one advance moves at most 365 days,
// and the clock is at most ten years ahead of real time in all.
const (
	MaxClockAdvance = 365 * 24 * time.Hour
	MaxClockOffset  = 10 * MaxClockAdvance
)

// Now is the merchant's time when the real time is real: the sandbox's
// test clock moves it forward (production merchants have no offset).
func (m *Merchant) Now(real time.Time) time.Time { return real.Add(m.ClockOffset) }

// RealTime is the real time at which the merchant's time was t: what a
// receiver's own clock reads then (a callback's X-Signature-Timestamp).
func (m *Merchant) RealTime(t time.Time) time.Time { return t.Add(-m.ClockOffset) }

// HasClock reports whether the merchant's time differs from real time.
func (m *Merchant) HasClock() bool { return m.ClockOffset != 0 }

// Credentials are what an operator hands a new merchant once. The secret is
// never stored or shown again.
type Credentials struct {
	MerchantID   string `json:"merchantId"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	SignatureKey string `json:"signatureKey"`
}

// HashSecret hashes a client secret or an access token for storage. Both are
// random values with at least 122 bits of entropy, so a plain SHA-256 is as
// strong as a slow password hash would be, and fast enough to run on every
// request.
func HashSecret(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// SecretMatches compares a presented secret with a stored hash in constant time.
func SecretMatches(presented, storedHash string) bool {
	h := HashSecret(presented)
	return subtle.ConstantTimeCompare([]byte(h), []byte(storedHash)) == 1
}

// NewToken returns a fresh opaque access token: 32 random bytes, base64url.
func NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Token is an issued access token as stored: only its hash is kept.
type Token struct {
	Hash          string
	MerchantID    string
	SecretVersion int
	IssuedAt      time.Time
	ExpiresAt     time.Time
}
