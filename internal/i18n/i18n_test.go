package i18n

import (
	"net/http/httptest"
	"slices"
	"testing"
)

var catalog = New("en", map[string]map[string]string{
	"en": {"pay": "Pay", "total": "Total"},
	"ro": {"pay": "Plătește", "total": "Total"},
	"ru": {"pay": "Оплатить"},
})

func TestPick(t *testing.T) {
	for _, c := range []struct {
		accept  string
		choices []string
		want    string
	}{
		{"", nil, "en"},
		{"", []string{"RU"}, "ru"},
		{"ru", []string{"", "de", "ro"}, "ro"}, // the first choice it speaks wins over the browser
		{"de-DE, ro-MD;q=0.8, en;q=0.5", nil, "ro"},
		{"rus", nil, "en"}, // a language tag, not a prefix
		{"de", []string{"fr"}, "en"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Language", c.accept)
		if got := catalog.Pick(r, c.choices...); got != c.want {
			t.Errorf("Pick(Accept-Language %q, %q) = %s, want %s", c.accept, c.choices, got, c.want)
		}
	}
}

func TestT(t *testing.T) {
	if catalog.T("ru", "pay") != "Оплатить" || catalog.T("ru", "total") != "Total" || catalog.T("de", "pay") != "Pay" || catalog.T("ro", "nope") != "nope" {
		t.Errorf("T: %q %q %q %q", catalog.T("ru", "pay"), catalog.T("ru", "total"), catalog.T("de", "pay"), catalog.T("ro", "nope"))
	}
	if _, ok := catalog.Lookup("ru", "total"); ok {
		t.Error("Lookup found ru's total, which ru lacks")
	}
}

func TestGaps(t *testing.T) {
	want := []string{`ru lacks "total"`}
	if got := catalog.Gaps(); !slices.Equal(got, want) {
		t.Errorf("Gaps = %q, want %q", got, want)
	}
	odd := New("en", map[string]map[string]string{"en": {"a": "A"}, "ro": {"a": "A", "b": "B"}})
	if got := odd.Gaps(); !slices.Equal(got, []string{"no ru", `ro has "b", which en does not`}) {
		t.Errorf("Gaps = %q", got)
	}
}
