package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"payd"
)

// checkAppendJSON fails unless a's direct encoding equals encoding/json's
// of the same value, alone and in the envelope.
func checkAppendJSON(t *testing.T, a jsonAppender) {
	t.Helper()
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.appendJSON(nil); !bytes.Equal(got, want) {
		t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
	}
	env, err := json.Marshal(okEnvelope{OK: true, Result: a})
	if err != nil {
		t.Fatal(err)
	}
	if got := appendEnvelope(nil, a); !bytes.Equal(got, env) {
		t.Errorf("appendEnvelope:\n got %s\nwant %s", got, env)
	}
}

// TestAppendJSON: RTP records, lists and creation answers written directly
// are byte for byte what encoding/json writes: every optional key present
// and absent, strings that need escaping (quotes, HTML, control
// characters, non-ASCII, U+2028, invalid UTF-8), negative and zero
// amounts, times in other zones and the zero time, empty and nil lists.
func TestAppendJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 123_000_000, time.FixedZone("EET", 2*3600))
	full := rtpRecord{RTPID: "01a1fd38-56fa-7f9d-ba9b-1038a64df444", OrderID: "o-1", URL: "http://127.0.0.1:8080/rtp/x", Amount: 123456,
		Currency: "MDL", Description: "Order 42", CallbackURL: "https://m.example/cb?a=1&b=<2>", RedirectURL: "https://m.example/back",
		Status: "Active", CreatedAt: wireTime(at), UpdatedAt: wireTime(at.Add(time.Second)), ExpiresAt: wireTime(at.Add(time.Hour)), TerminalID: "T7"}
	records := []rtpRecord{full, {}, {RTPID: "x", Amount: -5, Description: `quote " backslash \ tab 	 nl
 bell ` + "\a" + ` ăîșț Ѣ 😀 ` + "\u2028\u2029 \xff\xfe <script>&"}}
	for _, r := range records {
		checkAppendJSON(t, r)
	}
	for _, l := range []rtpList{{TotalCount: 3, Items: records}, {TotalCount: 0, Items: []rtpRecord{}}, {TotalCount: 7}} {
		checkAppendJSON(t, l)
	}
	for _, r := range []rtpCreated{{RTPID: full.RTPID, OrderID: "o-1", ExpiresAt: full.ExpiresAt}, {},
		{RTPID: "x", OrderID: records[2].Description, ExpiresAt: wireTime(time.UnixMilli(-62135596800000))}} {
		checkAppendJSON(t, r)
	}
}

// FuzzAppendJSON: for any strings, amount and times, the direct encoding
// of an RTP record and of a creation's answer equals encoding/json's.
func FuzzAppendJSON(f *testing.F) {
	f.Add("id", "order", "desc \"<&>\" \u2028", "https://x/cb", "", "T1", int64(1234), int64(1772359200123), int64(0))
	f.Add("", "", "\xff\x00", "", "https://x/r", "", int64(-1), int64(0), int64(-62135596800000))
	f.Fuzz(func(t *testing.T, id, order, desc, cb, redirect, terminal string, amount, created, expires int64) {
		checkAppendJSON(t, rtpRecord{RTPID: id, OrderID: order, URL: "u/" + id, Amount: payd.Money(amount), Currency: "MDL",
			Description: desc, CallbackURL: cb, RedirectURL: redirect, Status: "Expired", CreatedAt: wireTime(time.UnixMilli(created)),
			UpdatedAt: wireTime(time.UnixMilli(created).In(time.FixedZone("X", -3600))), ExpiresAt: wireTime(time.UnixMilli(expires)), TerminalID: terminal})
		checkAppendJSON(t, rtpCreated{RTPID: id, OrderID: order, ExpiresAt: wireTime(time.UnixMilli(expires))})
	})
}
