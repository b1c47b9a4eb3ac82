package payd

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the contract (seed and spec §0.5).
const (
	MaxAlias       = 100
	MaxDescription = 500
	MaxOrderID     = 100
	MaxTerminalID  = 100
	MaxURL         = 1000
	MaxReason      = 500
	MaxPayerName   = 200
	MaxIBAN        = 100
	MaxReferenceID = 15

	// MinExpiry and MaxExpiry bound an expiresAt relative to now; the
	// window allows ExpiryTolerance in the client's favour (spec §2.4).
	MinExpiry       = time.Minute
	MaxExpiry       = 60 * 24 * time.Hour
	ExpiryTolerance = 5 * time.Second
)

// ExpiryInWindow reports whether t lies between now+1 min and now+60 days,
// with the tolerance applied to both ends.
func ExpiryInWindow(now, t time.Time) bool {
	return !t.Before(now.Add(MinExpiry-ExpiryTolerance)) && !t.After(now.Add(MaxExpiry+ExpiryTolerance))
}

// TextLen is the length of s in Unicode characters.
func TextLen(s string) int { return utf8.RuneCountInString(s) }

// URLRules are the rules merchant URLs follow (spec §0.5).
type URLRules struct {
	AllowHTTP bool
}

// Check returns a reason when u is not an acceptable merchant URL.
func (r URLRules) Check(u string) string {
	if TextLen(u) > MaxURL {
		return "must be at most 1000 characters"
	}
	p, err := url.Parse(u)
	if err != nil || !p.IsAbs() || p.Host == "" || p.Hostname() == "" {
		return "must be an absolute URL"
	}
	if p.User != nil {
		return "must not contain user information"
	}
	switch strings.ToLower(p.Scheme) {
	case "https":
	case "http":
		if !r.AllowHTTP {
			return "must use https"
		}
	default:
		return "must use https"
	}
	return ""
}

// checkText checks a string field against a maximum length and, when
// required, presence, appending a 12000 error to errs.
func checkText(errs *Errors, name, s string, max int, required bool) {
	switch {
	case required && strings.TrimSpace(s) == "":
		*errs = append(*errs, Invalid(name, "is required"))
	case TextLen(s) > max:
		*errs = append(*errs, Invalid(name, "must be at most "+strconv.Itoa(max)+" characters"))
	}
}
