package payd

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Event names a kind of callback (spec §6.1).
type Event string

const (
	EventQRPayment         Event = "qr.payment.executed"
	EventRTPAccepted       Event = "rtp.accepted"
	EventCheckoutCompleted Event = "checkout.completed"
	EventCheckoutFailed    Event = "checkout.failed"
	EventRefundAccepted    Event = "refund.accepted"
)

// CallbackState is where a callback's delivery stands.
type CallbackState string

const (
	// CallbackPending: waiting for its next attempt.
	CallbackPending CallbackState = "pending"
	// CallbackDelivered: an attempt got HTTP 200. Final.
	CallbackDelivered CallbackState = "delivered"
	// CallbackFailed: the schedule is exhausted. An operator may resend it,
	// which makes it pending again with a fresh schedule.
	CallbackFailed CallbackState = "failed"
)

// Callback is one notification to a merchant, written to the outbox in the
// same transaction as the change that causes it. Body, signature header and
// timestamp are fixed at creation so every attempt sends the same bytes.
type Callback struct {
	ID         string
	MerchantID string
	Event      Event
	SubjectID  string   // payId, refundId or checkoutId
	ObjectID   string   // the object it is about: the rtpId, qrId, checkoutId or refundId
	Objects    []string // every id it is about (the object's, the payment's, …), to find it by

	URL           string
	Body          []byte
	Timestamp     int64  // Unix ms at creation; X-Signature-Timestamp
	Signature     string // X-Signature header value
	State         CallbackState
	Attempts      int // attempts made so far; the next is Attempts+1
	ScheduleStart int // attempts made before the last operator resend
	NextAttemptAt time.Time
	CreatedAt     time.Time
	DeliveredAt   time.Time
	LastStatus    int
	LastError     string
}

// NewCallback builds the outbox row for body, signed with the merchant's
// key. now is the merchant's time (the body's dates); the signature's
// timestamp is the real time, so that a receiver comparing it with its own
// clock accepts a callback of a merchant on the sandbox's test clock.
func NewCallback(event Event, merchant *Merchant, subjectID, url string, body []byte, now time.Time) *Callback {
	ts := merchant.RealTime(now).UnixMilli()
	return &Callback{
		ID: NewID(now), MerchantID: merchant.ID, Event: event, SubjectID: subjectID, URL: url,
		Body: body, Timestamp: ts, Signature: "sha256=" + HMACSignature(merchant.SignatureKey, body, ts),
		State: CallbackPending, NextAttemptAt: now, CreatedAt: now,
	}
}

// About records which objects a callback is about: main (the rtpId, qrId,
// checkoutId or refundId) and the other ids of the change; empty ids are
// skipped.
func (c *Callback) About(main string, others ...string) *Callback {
	c.ObjectID = main
	seen := map[string]bool{}
	for _, id := range append([]string{main, c.SubjectID}, others...) {
		if id != "" && !seen[id] {
			seen[id] = true
			c.Objects = append(c.Objects, id)
		}
	}
	return c
}

// Resign gives a callback a fresh X-Signature-Timestamp (the real time of
// the merchant's now) and the X-Signature that goes with it; the body, and
// the signature in it, stay.
func (c *Callback) Resign(m *Merchant, now time.Time) {
	c.Timestamp = m.RealTime(now).UnixMilli()
	c.Signature = "sha256=" + HMACSignature(m.SignatureKey, c.Body, c.Timestamp)
}

// HMACSignature is Base64(HMAC-SHA256(key, body + "." + timestamp)), the
// X-Signature of every callback (spec §6.6).
func HMACSignature(key string, body []byte, timestampMS int64) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	m.Write([]byte("."))
	m.Write([]byte(strconv.FormatInt(timestampMS, 10)))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Field is one member of a signed callback result, in JSON order. Amounts
// render as two-decimal numbers; Null renders null and is left out of the
// signature, as is "".
type Field struct {
	Name   string
	Value  string
	Amount bool
	Null   bool
}

// Str is a string field that is null when empty.
func Str(name, v string) Field { return Field{Name: name, Value: v, Null: v == ""} }

// Amt is an amount field.
func Amt(name string, m Money) Field { return Field{Name: name, Value: m.String(), Amount: true} }

// Fields is a callback result whose JSON and SHA-256 signature (spec §6.5)
// are built from the same values, so the two cannot disagree.
type Fields []Field

// SignedString is the text whose hash is the signature: the non-empty values
// sorted by case-insensitive name, joined by ':', then ':' and the key.
func (fs Fields) SignedString(key string) string {
	kept := make(Fields, 0, len(fs))
	for _, f := range fs {
		if !f.Null && strings.TrimSpace(f.Value) != "" {
			kept = append(kept, f)
		}
	}
	slices.SortStableFunc(kept, func(a, b Field) int { return compareFold(a.Name, b.Name) })
	var b strings.Builder
	for _, f := range kept {
		b.WriteString(f.Value)
		b.WriteByte(':')
	}
	b.WriteString(key)
	return b.String()
}

// compareFold orders names as their lower-case forms compare, without
// making them: the fields are sorted inside the acceptance's transaction,
// and lowering each name at each comparison was most of the sort's cost.
func compareFold(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x >= utf8.RuneSelf || y >= utf8.RuneSelf {
			return strings.Compare(strings.ToLower(a), strings.ToLower(b))
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return int(x) - int(y)
		}
	}
	return len(a) - len(b)
}

// Sign returns Base64(SHA-256(SignedString(key))).
func (fs Fields) Sign(key string) string {
	h := sha256.Sum256([]byte(fs.SignedString(key)))
	return base64.StdEncoding.EncodeToString(h[:])
}

// AppendJSON appends the fields as a JSON object; omitNull leaves out null
// fields instead of writing null.
func (fs Fields) AppendJSON(b []byte, omitNull bool) []byte {
	b = append(b, '{')
	first := true
	for _, f := range fs {
		if f.Null && omitNull {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, f.Name) // names are ASCII identifiers
		b = append(b, ':')
		switch {
		case f.Null:
			b = append(b, "null"...)
		case f.Amount:
			b = append(b, f.Value...)
		default:
			b = AppendJSONString(b, f.Value)
		}
	}
	return append(b, '}')
}

// AppendJSONString appends s as a JSON string, exactly as encoding/json
// writes it: printable ASCII other than the quote, the backslash and the
// HTML-sensitive <, > and & as is, without reflection; any other string
// through encoding/json itself (its escapes, U+2028 and U+2029, invalid
// UTF-8 replaced).
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Body is the callback body {"result":{…},"signature":"…"}, with nulls kept.
func (fs Fields) Body(key string) []byte {
	b := append([]byte(`{"result":`), fs.AppendJSON(nil, false)...)
	b = append(b, `,"signature":`...)
	b = strconv.AppendQuote(b, fs.Sign(key))
	return append(b, '}')
}

// RTPAcceptedFields is the result of the rtp.accepted callback and of
// test-accept (spec §6.3).
func RTPAcceptedFields(r *RTP, p *Payment) Fields {
	return Fields{
		Str("rtpId", r.ID), Str("rtpStatus", string(RTPAccepted)), Str("orderId", r.OrderID),
		Str("payId", p.ID), Amt("amount", p.Amount), Amt("commission", p.Commission),
		Str("currency", p.Currency), Str("payerName", p.SenderName), Str("payerIban", p.SenderIBAN),
		Str("executedAt", FormatTime(p.ExecutedAt)),
	}
}

// RTPRejectedFields is the signed part of a test-reject result: no
// payment fields, and no callback is sent for it.
func RTPRejectedFields(r *RTP) Fields {
	return Fields{
		Str("rtpId", r.ID), Str("rtpStatus", string(RTPRejected)), Str("orderId", r.OrderID),
		Amt("amount", r.Amount), Str("currency", r.Currency),
	}
}

// RefundAcceptedFields is the result of the refund.accepted callback (§6.4).
func RefundAcceptedFields(rf *Refund, p *Payment) Fields {
	return Fields{
		Str("refundId", rf.ID), Str("payId", p.ID), Amt("amount", rf.Amount), Str("currency", rf.Currency),
		Str("status", string(RefundAccepted)), Str("refundType", rf.Type()),
		Str("executedAt", FormatTime(rf.ExecutedAt)), Str("orderId", p.OrderID),
	}
}
