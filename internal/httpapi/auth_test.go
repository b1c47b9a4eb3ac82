package httpapi

import "testing"

// TestBearer: the token of an Authorization header, the scheme in any case,
// spaces and tabs around the two fields tolerated, anything else no token.
func TestBearer(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER   abc  ": "abc", " Bearer\tabc": "abc", "Bearer \u00a0abc": "abc",
		"": "", "Bearer": "", "Bearer ": "", "Basic abc": "", "Bearer a b": "", "Bearerabc": "", "Token abc": "", "abc": "",
	} {
		if got := bearer(h); got != want {
			t.Errorf("bearer(%q) = %q, want %q", h, got, want)
		}
	}
}
