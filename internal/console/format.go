package console

import (
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the merchant's zone, also in a container without zoneinfo

	"payd"
)

// Zone is where the console shows times: the merchants' (Moldova's).
var Zone = func() *time.Location {
	if loc, err := time.LoadLocation("Europe/Chisinau"); err == nil {
		return loc
	}
	return time.UTC
}()

const langCookie = "payd_console_lang"

// language is the console's language for a request: ?lang= (kept in a
// cookie), else the cookie, else the browser's Accept-Language, else en.
func language(w http.ResponseWriter, r *http.Request, cookie func(name, value string, maxAge int) *http.Cookie) string {
	saved := ""
	if ck, err := r.Cookie(langCookie); err == nil {
		saved = ck.Value
	}
	asked := r.URL.Query().Get("lang")
	l := catalog.Pick(r, asked, saved)
	if w != nil && asked != "" && l == strings.ToLower(asked) {
		http.SetCookie(w, cookie(langCookie, l, 365*24*3600))
	}
	return l
}

// tr is a text in lang, falling back to English, then to the key.
func tr(lang, key string) string { return catalog.T(lang, key) }

// money writes an amount as its language does: 1 249,90 MDL (ro, ru) or
// MDL 1,249.90 (en).
func money(lang string, m payd.Money, ccy string) string {
	neg := m < 0
	if neg {
		m = -m
	}
	units := strconv.FormatInt(int64(m)/100, 10)
	cents := strconv.FormatInt(100+int64(m)%100, 10)[1:]
	sep, dec := "\u00a0", ","
	if lang == "en" {
		sep, dec = ",", "."
	}
	var b strings.Builder
	for i, d := range units {
		if i > 0 && (len(units)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(d)
	}
	n := b.String() + dec + cents
	if neg {
		n = "−" + n
	}
	if ccy == "" {
		return n
	}
	if lang == "en" {
		return ccy + "\u00a0" + n
	}
	return n + "\u00a0" + ccy
}

// moneyOf reads a decoded JSON amount (a float64 or json.Number) as money.
func moneyOf(v any) (payd.Money, bool) {
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return 0, false
	}
	m, err := payd.ParseMoney(s)
	return m, err == nil
}

var months = map[string][]string{
	"en": {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"},
	"ro": {"ian.", "feb.", "mar.", "apr.", "mai", "iun.", "iul.", "aug.", "sept.", "oct.", "nov.", "dec."},
	"ru": {"янв.", "февр.", "мар.", "апр.", "мая", "июн.", "июл.", "авг.", "сент.", "окт.", "нояб.", "дек."},
}

// when writes a time in the merchant's zone as people read it, with the
// exact ISO time on hover: <time datetime=… title=…>26 Nov 2026, 14:05</time>.
func when(lang string, t time.Time) template.HTML {
	if t.IsZero() {
		return ""
	}
	l := t.In(Zone)
	human := strconv.Itoa(l.Day()) + "\u00a0" + months[lang][l.Month()-1] + "\u00a0" + strconv.Itoa(l.Year()) + ", " + l.Format("15:04:05")
	iso := payd.FormatTime(t)
	return template.HTML(`<time datetime="` + iso + `" title="` + iso + `">` + template.HTMLEscapeString(human) + `</time>`)
}

// dayLabel is a date as a chart's axis shows it (26.11).
func dayLabel(date string) string {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return date
	}
	return t.Format("02.01")
}

// shortID shows the start of an id, the whole on hover.
// shortID shows a long id by its end: payd's ids are UUIDv7, whose first
// characters are the time they were made (the same for everything made
// in one moment) and whose last are random, so the end tells them apart.
// The whole id is the title.
func shortID(id string) template.HTML {
	if len(id) <= 13 {
		return template.HTML(template.HTMLEscapeString(id))
	}
	return template.HTML(`<span class="id" title="` + template.HTMLEscapeString(id) + `">…` + template.HTMLEscapeString(id[len(id)-8:]) + `</span>`)
}

// statusLabel is a status's words for an object of kind ("" for any):
// the kind's own ("st.qr.Active") when it has them.
func statusLabel(lang, kind, st string) string {
	if kind != "" {
		if l, ok := catalog.Lookup(lang, "st."+kind+"."+st); ok {
			return l
		}
	}
	return tr(lang, "st."+st)
}

func badgeHTML(lang, kind, st string) template.HTML {
	if st == "" {
		return ""
	}
	cls := badges[st]
	if cls == "" {
		cls = "wait"
	}
	if kind == "qr" && st == "Active" {
		cls = "ok" // a QR that takes payments, paid or not
	}
	return template.HTML(`<span class="badge b-` + cls + `" data-status="` + template.HTMLEscapeString(st) + `">` +
		template.HTMLEscapeString(statusLabel(lang, kind, st)) + `</span>`)
}

// funcs are the templates' functions in lang.
func funcs(lang string) template.FuncMap {
	return template.FuncMap{
		"t":      func(k string) string { return tr(lang, k) },
		"pretty": prettyJSON,
		"str":    str,
		"field":  func(v any, k string) string { return str(field(v, k)) },
		// money shows a decoded JSON amount in its currency.
		"money": func(v, ccy any) string {
			m, ok := moneyOf(v)
			if !ok {
				return str(v)
			}
			return money(lang, m, str(ccy))
		},
		"amt": func(m payd.Money, ccy string) string { return money(lang, m, ccy) },
		// when shows a time (a time.Time or an ISO string).
		"when": func(v any) template.HTML {
			switch x := v.(type) {
			case time.Time:
				return when(lang, x)
			case *time.Time:
				if x == nil {
					return ""
				}
				return when(lang, *x)
			}
			t, err := payd.ParseTime(str(v))
			if err != nil {
				return template.HTML(template.HTMLEscapeString(str(v)))
			}
			return when(lang, t)
		},
		// badge shows a status in words and colour; data-status keeps the
		// API's name. kbadge is badge for a status of one kind of object,
		// whose words may be its own (a QR's Active is payable, an RTP's
		// is waiting for its payer).
		"badge":  func(v any) template.HTML { return badgeHTML(lang, "", str(v)) },
		"kbadge": func(kind string, v any) template.HTML { return badgeHTML(lang, kind, str(v)) },
		"stl":    func(kind, st string) string { return statusLabel(lang, kind, st) },
		"short":  shortID,
		"day":    dayLabel,
		"obj":    func(o string) string { return tr(lang, "obj."+o) },
		"list":   func(xs ...string) []string { return xs },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		// lineTotal is an order line's price × quantity, in ccy.
		"lineTotal": func(it, ccy any) string {
			price, ok := moneyOf(field(it, "amount"))
			if !ok {
				return ""
			}
			if q := field(it, "quantity"); q != nil {
				if qty, err := payd.ParseQuantity(str(q)); err == nil {
					price = qty.Times(price)
				}
			}
			return money(lang, price, str(ccy))
		},
	}
}

// tr is a text in the request's language.
func (c *Console) tr(r *http.Request, key string) string { return tr(language(nil, r, nil), key) }
