package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"payd"
)

// area is the part of the API a route belongs to; it decides which error
// codes a request's problems get (spec §0.10).
type area struct {
	name         string
	notFound     func(id string) *payd.Error
	inactive     string
	missingBody  string // code for an empty body where one is required
	badJSON      string // code for malformed JSON
	invalidField func(parameter, reason string) *payd.Error
	missingField func(parameter string) *payd.Error
}

var (
	areaAuth = area{name: "auth", inactive: payd.CodeMerchantInactive,
		missingBody: payd.CodeInvalidRequest, badJSON: payd.CodeInvalidRequest,
		invalidField: payd.Invalid, missingField: func(p string) *payd.Error { return payd.Invalid(p, "is required") }}
	areaQR       = withNotFound(areaAuth, "qr", func(id string) *payd.Error { return payd.E(payd.CodeQRNotFound, "qrId", id) })
	areaPayments = withNotFound(areaAuth, "payments", func(id string) *payd.Error {
		return payd.E(payd.CodePaymentNotFound, "payId", id)
	})
	areaRefunds = withNotFound(areaAuth, "payments", func(id string) *payd.Error {
		return payd.E(payd.CodeRefundNotFound, "refundId", id)
	})
	areaCallbacks = withNotFound(areaAuth, "callbacks", func(id string) *payd.Error {
		return payd.E(payd.CodeCallbackNotFound, "callbackId", id)
	})
	areaRTP = func() area {
		a := withNotFound(areaAuth, "rtp", func(id string) *payd.Error { return payd.E(payd.CodeRTPNotFound, "rtpId", id) })
		a.inactive = payd.CodeRTPMerchantInactive
		return a
	}()
	areaCheckout = area{name: "checkout", inactive: payd.CodeCheckoutInactive,
		notFound:    func(id string) *payd.Error { return payd.E(payd.CodeCheckoutNotFound, "checkoutId", id) },
		missingBody: payd.CodeCheckoutMissing, badJSON: payd.CodeCheckoutFormat,
		invalidField: func(p, _ string) *payd.Error { return payd.E(payd.CodeCheckoutFormat, "parameter", p) },
		missingField: func(p string) *payd.Error { return payd.E(payd.CodeCheckoutMissing, "parameter", p) }}
)

func withNotFound(a area, name string, nf func(string) *payd.Error) area {
	a.name, a.notFound = name, nf
	return a
}

// errorRequest builds the "body missing or malformed" error of the area.
func (a area) errorRequest(code, detail string) *payd.Error {
	if code == payd.CodeCheckoutMissing || code == payd.CodeCheckoutFormat {
		return payd.E(code, "parameter", "body")
	}
	return payd.E(code, "error", detail)
}

// readBody applies the body limit and the media-type rule: a non-empty body
// must be JSON; an empty one (or only whitespace) passes with any type.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, payd.E(payd.CodeBodyTooLarge, "limit", strconv.FormatInt(limit, 10))
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, payd.E(payd.CodeBodyTooLarge, "limit", strconv.FormatInt(limit, 10))
		}
		return nil, payd.E(payd.CodeInvalidRequest, "error", "the body could not be read")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	ct := r.Header.Get("Content-Type")
	if !isJSON(ct) {
		return nil, payd.E(payd.CodeMediaType, "contentType", ct)
	}
	return b, nil
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// object is a decoded JSON request body. Its accessors record type errors
// instead of failing, so one response can name every bad field.
type object struct {
	a      area
	fields map[string]json.RawMessage
	errs   payd.Errors
	prefix string  // path of a nested object ("orderInfo.")
	parent *object // where a nested object's errors go
	// unknown: the body has a member its route does not take (one of errs).
	unknown bool
}

// parseObject parses a body that must be a JSON object. required says
// whether an empty body is an error or an empty object.
func parseObject(a area, body []byte, required bool) (*object, error) {
	if len(body) == 0 {
		if required {
			return nil, a.errorRequest(a.missingBody, "a JSON body is required")
		}
		return &object{a: a, fields: map[string]json.RawMessage{}}, nil
	}
	fields, dup, twice, ok := members(body)
	if !ok {
		return nil, a.errorRequest(a.badJSON, notAnObject(body))
	}
	if twice {
		return nil, a.errorRequest(a.badJSON, "the key '"+dup+"' appears twice in one object")
	}
	return &object{a: a, fields: fields}, nil
}

// notAnObject says why a body is not one JSON object.
func notAnObject(body []byte) string {
	var fields map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&fields); err != nil || fields == nil {
		return "the body must be a JSON object"
	}
	return "the body has data after the JSON object"
}

// members splits a body that is one JSON object (and nothing else but
// white space) into its members, keyed as encoding/json decodes keys, and
// names the first key that appears twice in one object at any depth
// (twice): such a body is ambiguous (parsers disagree on which value wins),
// so it is refused rather than read as "last wins". ok is false for any
// other body.
//
// jsontext reads the body in one pass, checking every object's names as it
// goes; the values are slices of body. Invalid UTF-8 is read as
// encoding/json reads it (replaced), as the string fields are (unquote).
func members(body []byte) (fields map[string]json.RawMessage, dup string, twice, ok bool) {
	r := readers.Get().(*reader)
	defer r.done()
	r.b = *bytes.NewBuffer(body)
	d := &r.d
	d.Reset(&r.b, jsontext.AllowInvalidUTF8(true))
	if d.PeekKind() != '{' {
		return nil, "", false, false
	}
	fields = map[string]json.RawMessage{}
	_, err := d.ReadToken()
	for err == nil && d.PeekKind() == '"' {
		var tok jsontext.Token
		if tok, err = d.ReadToken(); err != nil {
			break
		}
		name := tok.String() // a token lasts until the next read
		var v jsontext.Value
		if v, err = d.ReadValue(); err != nil {
			break
		}
		end := int(d.InputOffset())
		fields[name] = body[end-len(v) : end]
	}
	if err == nil {
		if _, err = d.ReadToken(); err == nil { // '}'
			if _, err = d.ReadToken(); err == io.EOF {
				return fields, "", false, true
			}
			return nil, "", false, false // data after the object
		}
	}
	// A name twice counts only in a body that is otherwise one JSON object.
	var serr *jsontext.SyntacticError
	if errors.As(err, &serr) && serr.Err == jsontext.ErrDuplicateName &&
		jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
		return fields, serr.JSONPointer.LastToken(), true, true
	}
	return nil, "", false, false
}

// reader is a jsontext decoder with the buffer it reads, kept between
// requests: a fresh decoder's state was 13 of a create's 34 allocations
// (BenchmarkDecodeRTPCreate).
type reader struct {
	d jsontext.Decoder
	b bytes.Buffer
}

var readers = sync.Pool{New: func() any { return new(reader) }}

// done lets go of the body read and returns r to the pool.
func (r *reader) done() {
	r.b = bytes.Buffer{}
	r.d.Reset(&r.b)
	readers.Put(r)
}

// unquote is the text of a string (a key or a value, raw between its
// quotes, from text json.Valid has checked) as encoding/json decodes it:
// escapes resolved, invalid UTF-8 replaced. Most strings have neither and
// are their bytes; decoding each string field through json.Unmarshal was
// 7% of payd's CPU on rtp-create.
func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	var k string
	json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k)
	return k
}

func (o *object) raw(name string) (json.RawMessage, bool) {
	v, ok := o.fields[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func (o *object) typeError(name, want string) {
	o.fail(o.a.invalidField(o.prefix+name, "must be "+want))
}

// fail records a field error, in the outermost object.
func (o *object) fail(e *payd.Error) {
	for o.parent != nil {
		o = o.parent
	}
	if p := e.Args["parameter"]; p == "" || !o.errs.Has(p) {
		o.errs = append(o.errs, e)
	}
}

// str reads a string field; null, "" and whitespace-only read as "".
func (o *object) str(name string) string {
	v, ok := o.raw(name)
	if !ok {
		return ""
	}
	if v[0] != '"' {
		o.typeError(name, "a string")
		return ""
	}
	s := unquote(v[1 : len(v)-1])
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// money reads an amount: a JSON number with at most two decimals.
func (o *object) money(name string) *payd.Money {
	v, ok := o.raw(name)
	if !ok {
		return nil
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		o.typeError(name, "a number")
		return nil
	}
	m, err := payd.ParseMoney(string(v))
	if err != nil {
		o.fail(o.a.invalidField(o.prefix+name, err.Error()))
		return nil
	}
	return &m
}

// time reads a datetime; it returns the text as sent too.
func (o *object) time(name string) (*time.Time, string) {
	s := o.str(name)
	if s == "" {
		return nil, ""
	}
	t, err := payd.ParseTime(s)
	if err != nil {
		o.fail(o.a.invalidField(o.prefix+name, "must be an ISO 8601 datetime"))
		return nil, s
	}
	return &t, s
}

// err merges the decoding errors with the validation error v.
func (o *object) err(v error) error {
	if len(o.errs) == 0 {
		return v
	}
	errs := append(payd.Errors{}, o.errs...)
	var ves payd.Errors
	var ve *payd.Error
	switch {
	case errors.As(v, &ves):
	case errors.As(v, &ve):
		ves = payd.Errors{ve}
	}
	for _, e := range ves {
		if p := paramOf(e); p == "" || !errs.Has(p) {
			errs = append(errs, e)
		}
	}
	return errs
}

// paramOf is the field an error is about, also for the codes whose message
// names no parameter.
func paramOf(e *payd.Error) string {
	switch e.Code {
	case payd.CodeExpiresAtWindow:
		return "expiresAt"
	case payd.CodeRTPCurrency, payd.CodeQRCurrency, payd.CodeCheckoutCurrency:
		return "currency"
	}
	return e.Args["parameter"]
}

// sub parses a nested object field; a non-object is a type error. Its
// errors name fields by their path and are collected into o.
func (o *object) sub(name string, raw json.RawMessage) *object {
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		o.typeError(name, "an object")
		return nil
	}
	return &object{a: o.a, fields: fields, prefix: o.prefix + name + ".", parent: o}
}

// integer reads a whole number.
func (o *object) integer(name string) *int {
	v, ok := o.raw(name)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		o.typeError(name, "an integer")
		return nil
	}
	return &n
}

// quantity reads a positive-or-not number with at most 3 decimals.
func (o *object) quantity(name string) *payd.Quantity {
	v, ok := o.raw(name)
	if !ok {
		return nil
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		o.typeError(name, "a number")
		return nil
	}
	q, err := payd.ParseQuantity(string(v))
	if err != nil {
		o.typeError(name, "a number with at most 3 decimals")
		return nil
	}
	return &q
}
