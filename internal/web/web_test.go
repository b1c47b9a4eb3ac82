package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCSRFCookieSecureBehindTLSProxy: pages whose public URL is https set
// their form cookie Secure even when the request reaches payd over plain
// HTTP from the TLS proxy in front of it; an http sandbox does not.
func TestCSRFCookieSecureBehindTLSProxy(t *testing.T) {
	for url, secure := range map[string]bool{"https://pay.example": true, "http://127.0.0.1:8080": false} {
		p := &Pages{cfg: Config{PublicURL: url}}
		rec := httptest.NewRecorder()
		p.csrfToken(rec, httptest.NewRequest("GET", "http://10.0.0.5:8080/checkout/x", nil))
		c := rec.Header().Get("Set-Cookie")
		if !strings.HasPrefix(c, csrfCookie+"=") || strings.Contains(c, "; Secure") != secure {
			t.Errorf("public URL %s: Set-Cookie %q, want Secure %v", url, c, secure)
		}
	}
}

// TestLangQueryKeepsAnyCase: a page read as ?lang=EN keeps English
// through its form's redirect, as ?lang=en; a language the pages do not
// speak is dropped.
func TestLangQueryKeepsAnyCase(t *testing.T) {
	for q, want := range map[string]string{"?lang=EN": "?lang=en", "?lang=ru": "?lang=ru", "?lang=de": "", "": ""} {
		if got := langQuery(httptest.NewRequest("POST", "http://pay.example/checkout/x"+q, nil)); got != want {
			t.Errorf("langQuery(%q) = %q, want %q", q, got, want)
		}
	}
}
