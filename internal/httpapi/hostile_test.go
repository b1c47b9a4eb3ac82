package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"payd/internal/sqlstore/storetest"
)

// postRoutes are every POST of the API, with ids of real objects where the
// path needs one.
func (e *env) postRoutes() []string {
	rtp := e.createRTP(nil)
	pay := e.as("POST", "/v2/rtp/"+e.createRTP(nil)+"/test-accept", map[string]any{"amount": 50.5, "currency": "MDL"}).wantOK().str("result.payId")
	qr := e.as("POST", "/v2/instant/qr/hybrid", map[string]any{"amountType": "Free", "currency": "MDL"}).wantOK().str("result.qrId")
	co := e.as("POST", "/v2/checkouts", map[string]any{"amount": 10, "currency": "MDL"}).wantOK().str("result.checkoutId")
	return []string{
		"/v2/auth/token", "/v2/rtp", "/v2/rtp/" + rtp + "/cancel", "/v2/rtp/" + rtp + "/test-accept", "/v2/rtp/" + rtp + "/test-reject",
		"/v2/rtp/" + pay + "/refund", "/v2/payments/" + pay + "/refund", "/v2/instant/qr", "/v2/instant/qr/hybrid",
		"/v2/instant/qr/" + qr + "/extension", "/v2/instant/qr/" + qr + "/extension/cancel", "/v2/instant/qr/" + qr + "/cancel",
		"/v2/instant/test-pay", "/v2/mia/test-pay", "/v2/checkouts", "/v2/checkouts/" + co + "/cancel",
	}
}

// serve runs one request in-process and checks the answer is an envelope
// and not a server error.
func (e *env) serveChecked(path string, body []byte, ct string) int {
	e.t.Helper()
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	req.RemoteAddr = "192.0.2.1:1234"
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	var env struct {
		OK     *bool             `json:"ok"`
		Errors []json.RawMessage `json:"errors"`
	}
	if rec.Code >= 500 || json.Unmarshal(rec.Body.Bytes(), &env) != nil || env.OK == nil || (!*env.OK && len(env.Errors) == 0) {
		e.t.Fatalf("POST %s %q → %d %s", path, truncate(body), rec.Code, rec.Body.String())
	}
	return rec.Code
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func TestHostileInput(t *testing.T) {
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
		long := `{"alias":"` + strings.Repeat("x", 600000) + `","description":"` + strings.Repeat("é", 100000) + `","reason":"` + strings.Repeat("r", 100000) + `"}`
		payloads := []struct {
			body   string
			status int // 0: any 4xx
		}{
			{`{"alias":123,"amount":"50","currency":5,"description":[],"expiresAt":{},"reason":true,"qrId":7,"clientId":1}`, 400},
			{`{"amount":1e400,"currency":"MDL","reason":"r"}`, 0},
			{`{"amount":-0,"currency":"MDL","reason":"r"}`, 0},
			{`{"amount":1e-400,"reason":"r"}`, 0},
			{`{"amount":123456789012345678901234567890,"reason":"r"}`, 0},
			{`{"amount":50.123,"currency":"MDL","reason":"r"}`, 0},
			{`{"amount":-5,"currency":"MDL","reason":"r"}`, 0},
			{`{"amount":NaN}`, 400},
			{"{\"description\":\"\xff\xfe\xfd\",\"reason\":\"\xc3\x28\"}", 0},
			{deep, 400},
			// A key twice in one object, at any depth, is malformed: never "last wins".
			{`{"amount":1,"amount":"x","currency":"MDL","currency":null}`, 400},
			{`{"reason":"r","reason":"s"}`, 400},
			{`{"amount":10,"currency":"MDL","orderInfo":{"id":"a","items":[{"title":"t","title":"u"}]}}`, 400},
			{`null`, 400},
			{`[]`, 400},
			{`"text"`, 400},
			{`123`, 400},
			{`{`, 400},
			{`{"a":1} trailing`, 400},
			{`{"extension":"x","orderInfo":[],"payerInfo":5,"items":{}}`, 0},
			{`{"orderInfo":{"items":[1,"x",null,{"quantity":"2","displayOrder":1.5}]},"amount":1,"currency":"MDL"}`, 400},
			{long, 0},
		}
		for _, path := range e.postRoutes() {
			for _, p := range payloads {
				status := e.serveChecked(path, []byte(p.body), "application/json")
				ignoresBody := strings.HasPrefix(path, "/v2/checkouts/") // cancel takes no body; one sent is ignored
				if p.status != 0 && status != p.status && !(status == 404 || status == 409) && !ignoresBody {
					t.Errorf("POST %s %q → %d, want %d", path, truncate([]byte(p.body)), status, p.status)
				}
				if status == 200 && p.status != 0 && !ignoresBody {
					t.Errorf("POST %s %q accepted", path, truncate([]byte(p.body)))
				}
			}
			// 10 MB, and a non-JSON body.
			if s := e.serveChecked(path, bytes.Repeat([]byte("a"), 10<<20), "application/json"); s != 413 {
				t.Errorf("POST %s 10 MB → %d", path, s)
			}
			if s := e.serveChecked(path, []byte("a=1"), "text/plain"); s != 415 {
				t.Errorf("POST %s text/plain → %d", path, s)
			}
		}
		// Query strings: huge, tiny and malformed numbers, bad dates, long values.
		for _, q := range []string{"count=1e400&offset=0", "count=-0&offset=-0", "count=1&offset=99999999999999999999", "count=1&offset=0&amount=1e400",
			"count=1&offset=0&createdAtFrom=9999-99-99", "count=1&offset=0&orderId=" + strings.Repeat("o", 5000), "count=1&offset=0&amount=%ff%fe"} {
			for _, path := range []string{"/v2/rtp", "/v2/instant/qr", "/v2/instant/qr/extension", "/v2/instant/payments", "/v2/payments", "/v2/checkouts"} {
				req := httptest.NewRequest("GET", path+"?"+q, nil)
				req.Header.Set("Authorization", "Bearer "+e.token)
				rec := httptest.NewRecorder()
				e.api.ServeHTTP(rec, req)
				// amount is a filter of the RTP list only; elsewhere it is refused as unknown (TestUnknownListFiltersRefused).
				if rec.Code >= 500 || rec.Code == 200 && strings.Contains(q, "1e400") && (path == "/v2/rtp" || strings.HasPrefix(q, "count=1e400")) {
					t.Errorf("GET %s?%.60s → %d %s", path, q, rec.Code, rec.Body.String())
				}
			}
		}
	})
}

// FuzzRequestBodies sends arbitrary bodies to every POST route: whatever
// comes in, the answer is an envelope and never a 5xx.
func FuzzRequestBodies(f *testing.F) {
	s, _ := storetest.SQLite(f)
	cfg := testConfig()
	cfg.TokenTTL = 100 * 365 * 24 * time.Hour
	e := newEnv(f, s, cfg)
	routes := e.postRoutes()
	for _, seed := range []string{
		`{"alias":"37369112221","amount":50,"currency":"MDL","description":"d","expiresAt":"2026-03-01T11:00:00Z"}`,
		`{"type":"Dynamic","amountType":"Controlled","amount":5,"amountMin":1,"amountMax":9,"currency":"MDL","description":"d","expiresAt":"2026-03-01T11:00:00Z"}`,
		`{"amountType":"Fixed","currency":"MDL","extension":{"amount":5,"description":"d","expiresAt":"2026-03-01T11:00:00Z"}}`,
		`{"amount":10,"currency":"MDL","orderInfo":{"items":[{"quantity":2.5,"amount":1}]},"payerInfo":{"email":"a@b.md"}}`,
		`{"qrId":"019ca8d7-2d00-7a6b-ae13-c315c9e98f0a","amount":5,"currency":"MDL","iban":"MD88AG000000011621810140","payerName":"P"}`,
		`{"reason":"r","amount":1}`, `{"clientId":"a","clientSecret":"b"}`, ``, `{}`, `null`,
	} {
		for i := range routes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		e.t = t
		e.serveChecked(routes[int(route)%len(routes)], body, "application/json")
	})
}

// FuzzObjectMembers: members, one pass over the text, reads every body as
// decoding it and walking its tokens does (what parseObject did before):
// the same verdict, members, values and first duplicate key.
func FuzzObjectMembers(f *testing.F) {
	for _, seed := range []string{`{"a":1,"a":2}`, `{"x":{"y":[1,{"z":1,"z":2}]}}`, ` {"a" : [ ] , "b":{}} `,
		`{"\u0061":1,"a":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"a":"\"}"}`, `{"n":-1.5e3,"t":true,"f":null}`, `{} x`, `[1]`, `null`,
		`{"a":1}{}`, `"s"`, `{"a":[{"b":1},{"b":2}],"c":{"b":1,"b":1}}`, `{"":1,"":2}`, `{"":[],"":{"b":0,"b":0}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, dup, twice, ok := members(body)
		want, wantDup, wantTwice, wantOK := decodedMembers(body)
		if ok != wantOK || twice != wantTwice || dup != wantDup {
			t.Fatalf("members(%q): ok %v, duplicate %v %q; decoding says ok %v, duplicate %v %q",
				body, ok, twice, dup, wantOK, wantTwice, wantDup)
		}
		if ok && !twice && !reflect.DeepEqual(fields, want) {
			t.Fatalf("members(%q) = %q; decoding says %q", body, fields, want)
		}
	})
}

// FuzzObjectStr: a string field reads as encoding/json decodes it (escapes,
// surrogates, invalid UTF-8), and any other value is a type error, as
// when every field went through json.Unmarshal.
func FuzzObjectStr(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"caf\u00e9"`, `"\ud83d\ude00"`, `"\ud83d"`, "\"\xff\xfe\"", `"a\"b\\c\/d\n"`,
		`""`, `"  "`, `"\t"`, `12`, `true`, `null`, `{"a":1}`, `["x"]`, `"\u0000"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		body := append(append([]byte(`{"s":`), value...), '}')
		o, err := parseObject(areaRTP, body, true)
		if err != nil {
			return // not one JSON object: refused before any field is read
		}
		got := o.str("s")
		raw := o.fields["s"]
		var want string
		wantErr := false
		if string(raw) != "null" {
			if raw[0] != '"' || json.Unmarshal(raw, &want) != nil {
				want, wantErr = "", true
			}
		}
		if strings.TrimSpace(want) == "" {
			want = ""
		}
		if got != want || (len(o.errs) > 0) != wantErr {
			t.Fatalf("str of %s = %q (errors %v); encoding/json decodes %q (error %v)", raw, got, o.errs, want, wantErr)
		}
	})
}

// decodedMembers is what parseObject did before members: decode into a map,
// insist on nothing after it, then walk the tokens for a key twice.
func decodedMembers(body []byte) (map[string]json.RawMessage, string, bool, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, "", false, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", false, false
	}
	type frame struct {
		keys      map[string]bool // nil for an array
		expectKey bool
	}
	dec = json.NewDecoder(bytes.NewReader(body))
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return fields, "", false, true
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, expectKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].keys != nil {
					stack[len(stack)-1].expectKey = true
				}
			}
			continue
		}
		if len(stack) == 0 || stack[len(stack)-1].keys == nil {
			continue
		}
		top := stack[len(stack)-1]
		if top.expectKey {
			k, _ := tok.(string)
			if top.keys[k] {
				return fields, k, true, true
			}
			top.keys[k], top.expectKey = true, false
		} else {
			top.expectKey = true
		}
	}
}

func TestDuplicateKey(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"a":2}`:                            "a",
		`{"x":{"y":[1,{"z":1,"z":2}]}}`:            "z",
		`{"x":{"y":1},"x":{"y":1}}`:                "x",
		`{"x":[{"k":1}],"y":{"k":1,"l":[],"k":3}}`: "k",
		`{"":1,"":2}`:                              "", // the empty key is a key
		`{"":[],"":{"b":0,"b":0}}`:                 "", // the first found, not the last
	} {
		if _, got, twice, ok := members([]byte(body)); got != want || !twice || !ok {
			t.Errorf("members(%s) names %q twice (%v, ok %v); want %q", body, got, twice, ok, want)
		}
	}
	if _, got, twice, ok := members([]byte(`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`)); twice || !ok {
		t.Errorf("keys repeated only in other objects: %q named twice (ok %v)", got, ok)
	}
	forEachEngine(t, testConfig(), func(t *testing.T, e *env) {
		if s := e.serveChecked("/v2/rtp", []byte(`{"alias":"37369112221","alias":"37369112222"}`), "application/json"); s != 400 {
			t.Errorf("RTP create with a duplicate key: %d", s)
		}
		// Refused as ambiguous, before any field is read.
		if r := e.as("POST", "/v2/rtp", `{"":1,"":2}`); r.status != 400 || r.str("errors.0.errorArgs.error") != "the key '' appears twice in one object" {
			t.Errorf("RTP create with the empty key twice: %d %s", r.status, r.body)
		}
	})
}
