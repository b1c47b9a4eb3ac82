// Package i18n is how payd's pages speak: the payer pages (internal/web)
// and the merchant console (internal/console) each keep a Catalog of their
// texts in Romanian, Russian and English, and pick a request's language
// and look a text up the same way.
package i18n

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Languages are the pages' languages, in the order a switcher shows them.
var Languages = []string{"ro", "ru", "en"}

// Catalog is one set of pages' texts, by language and key.
type Catalog struct {
	texts    map[string]map[string]string
	fallback string // the language a missing text and an unchosen page fall back to
}

// New is a catalog of texts (one map per language of Languages) whose
// texts and pages fall back to fallback.
func New(fallback string, texts map[string]map[string]string) *Catalog {
	return &Catalog{texts: texts, fallback: fallback}
}

// Speaks reports whether lang is one of the catalog's languages.
func (c *Catalog) Speaks(lang string) bool { return c.texts[lang] != nil }

// T is key's text in lang, else in the fallback language, else the key.
func (c *Catalog) T(lang, key string) string {
	if s, ok := c.texts[lang][key]; ok {
		return s
	}
	if s, ok := c.texts[c.fallback][key]; ok {
		return s
	}
	return key
}

// Lookup is key's own text in lang, if lang has one.
func (c *Catalog) Lookup(lang, key string) (string, bool) {
	s, ok := c.texts[lang][key]
	return s, ok
}

// Texts are lang's texts, for templates that index them.
func (c *Catalog) Texts(lang string) map[string]string { return c.texts[lang] }

// Has reports whether the fallback language has key.
func (c *Catalog) Has(key string) bool {
	_, ok := c.texts[c.fallback][key]
	return ok
}

// Pick is a request's language: the first of choices the catalog speaks
// (?lang, a cookie, an object's own language; case does not matter), else
// the first language Accept-Language names that it speaks ("ro-MD" is
// ro), else the fallback.
func (c *Catalog) Pick(r *http.Request, choices ...string) string {
	for _, l := range choices {
		if l = strings.ToLower(l); c.Speaks(l) {
			return l
		}
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if base, _, _ := strings.Cut(strings.ToLower(tag), "-"); c.Speaks(base) {
			return base
		}
	}
	return c.fallback
}

// Gaps are what makes the catalog incomplete: a language of Languages it
// lacks, a key the fallback language has and another lacks (or has
// empty), and a key another has that the fallback lacks.
func (c *Catalog) Gaps() []string {
	var gaps []string
	for _, lang := range Languages {
		if !c.Speaks(lang) {
			gaps = append(gaps, "no "+lang)
			continue
		}
		for key := range c.texts[c.fallback] {
			if c.texts[lang][key] == "" {
				gaps = append(gaps, fmt.Sprintf("%s lacks %q", lang, key))
			}
		}
		for key := range c.texts[lang] {
			if _, ok := c.texts[c.fallback][key]; !ok {
				gaps = append(gaps, fmt.Sprintf("%s has %q, which %s does not", lang, key, c.fallback))
			}
		}
	}
	sort.Strings(gaps)
	return gaps
}
