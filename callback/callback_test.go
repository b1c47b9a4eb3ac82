package callback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"
)

type vector struct {
	Name, Event, Key, Body, XSignature, BodySignature, SignedString string
	Timestamp                                                       int64
}

// vectors are payd's own rendering of the spec's vectors, checked by
// payd's tests too (TestCallbackVectors).
func vectors(t *testing.T) []vector {
	t.Helper()
	b, err := os.ReadFile("../testdata/callbacks.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func headers(v vector, attempt int) http.Header {
	h := http.Header{}
	h.Set("X-Signature", v.XSignature)
	h.Set("X-Signature-Timestamp", strconv.FormatInt(v.Timestamp, 10))
	h.Set("X-Callback-Id", "cb-"+v.Name)
	h.Set("X-Callback-Event", v.Event)
	h.Set("X-Callback-Attempt", strconv.Itoa(attempt))
	return h
}

func TestVectors(t *testing.T) {
	for _, v := range vectors(t) {
		if got := "sha256=" + HMAC(v.Key, []byte(v.Body), v.Timestamp); got != v.XSignature {
			t.Errorf("%s: HMAC %s, want %s", v.Name, got, v.XSignature)
		}
		if v.Event == "" {
			continue
		}
		ver := &Verifier{Key: v.Key} // no age check: the vectors are old
		e, err := ver.Verify(headers(v, 1), []byte(v.Body))
		if err != nil {
			t.Errorf("%s: %v", v.Name, err)
			continue
		}
		switch v.Name {
		case "A":
			if e.QRPayment == nil || e.QRPayment.Amount != 5000 || e.QRPayment.Commission != 10 || e.QRPayment.PayerIBAN != "MD88AG000000011621810140" || e.QRPayment.TerminalID != "" {
				t.Errorf("A decoded as %+v", e.QRPayment)
			}
		case "B":
			if e.RTP == nil || e.RTP.Amount != 10000 || e.RTP.RTPStatus != "Accepted" {
				t.Errorf("B decoded as %+v", e.RTP)
			}
		case "C":
			if e.Refund == nil || e.Refund.Amount != 2500 || e.Refund.RefundType != "Partial" {
				t.Errorf("C decoded as %+v", e.Refund)
			}
		case "H2":
			if e.Checkout == nil || e.Checkout.PaymentAmount != 123456 || e.Checkout.ThreeDSReason != nil || *e.Checkout.SenderCardNumber != "444433******1111" {
				t.Errorf("H2 decoded as %+v", e.Checkout)
			}
		}
		// Another key, a changed byte: refused.
		if _, err := (&Verifier{Key: "another-key"}).Verify(headers(v, 1), []byte(v.Body)); !errors.Is(err, ErrSignature) {
			t.Errorf("%s under another key: %v", v.Name, err)
		}
		tampered := bytes.Replace([]byte(v.Body), []byte("MDL"), []byte("EUR"), 1)
		if _, err := ver.Verify(headers(v, 1), tampered); !errors.Is(err, ErrSignature) {
			t.Errorf("%s tampered: %v", v.Name, err)
		}
	}
}

// TestBodySignatureNormalizesAmounts: the spec's vector A writes
// commission as 0.1; the signature uses 0.10.
func TestBodySignatureNormalizesAmounts(t *testing.T) {
	result := `{"qrId":"c3108b2f-6c2e-43a2-bdea-123456789012","extensionId":"3fe7f013-23a6-4d09-a4a4-123456789012","qrStatus":"Paid","payId":"eb361f48-bb39-45e2-950b-123456789012","referenceId":"MIA0001234567","orderId":"123","amount":50.00,"commission":0.1,"currency":"MDL","payerName":"TEST QR PAYMENT","payerIban":"MD88AG000000011621810140","executedAt":"2025-04-18T14:04:11.81145+00:00","terminalId":null}`
	got, err := BodySignature("8508706b-3454-4733-8295-56e617c4abcf", json.RawMessage(result))
	if err != nil || got != "fHM+l4L1ycFWZDRTh/Vr8oybq1Q1xySdjyvmFQCmZ4s=" {
		t.Errorf("vector A = %s, %v", got, err)
	}
}

// TestBodySignatureChecked: a body whose result was changed and re-signed
// with a valid X-Signature (a merchant's own key leaked to a proxy that
// does not know the algorithm) still fails the body signature.
func TestBodySignatureChecked(t *testing.T) {
	v := vectors(t)[0]
	body := bytes.Replace([]byte(v.Body), []byte(`"orderId":"123"`), []byte(`"orderId":"999"`), 1)
	h := headers(v, 1)
	h.Set("X-Signature", "sha256="+HMAC(v.Key, body, v.Timestamp))
	if _, err := (&Verifier{Key: v.Key}).Verify(h, body); !errors.Is(err, ErrBodySignature) {
		t.Errorf("re-signed body: %v", err)
	}
}

func TestTolerance(t *testing.T) {
	v := vectors(t)[1]
	created := time.UnixMilli(v.Timestamp)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return created.Add(d) } }
	cases := []struct {
		tol     time.Duration
		after   time.Duration
		attempt int
		ok      bool
	}{
		{5 * time.Minute, 4 * time.Minute, 1, true},
		{5 * time.Minute, 6 * time.Minute, 1, false},
		{5 * time.Minute, -6 * time.Minute, 1, false},
		// The 4th attempt comes after 10 s + 60 s + 300 s: still within the tolerance.
		{5 * time.Minute, 10 * time.Minute, 4, true},
		{5 * time.Minute, 20 * time.Minute, 4, false},
		{0, 1000 * time.Hour, 1, true},
	}
	for _, c := range cases {
		ver := &Verifier{Key: v.Key, Tolerance: c.tol, Now: at(c.after)}
		_, err := ver.Verify(headers(v, c.attempt), []byte(v.Body))
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrTimestamp) {
			t.Errorf("tolerance %v, %v later, attempt %d: %v", c.tol, c.after, c.attempt, err)
		}
	}
}

func TestHandler(t *testing.T) {
	v := vectors(t)[2] // refund
	ver := &Verifier{Key: v.Key}
	calls, fail := 0, true
	h := ver.Handler(NewMemoryDedup(), func(_ context.Context, e *Event) error {
		calls++
		if e.Refund == nil {
			t.Errorf("no refund in %+v", e)
		}
		if fail {
			return errors.New("database down")
		}
		return nil
	})
	send := func(hdr http.Header, body string) int {
		req := httptest.NewRequest("POST", "/cb", bytes.NewReader([]byte(body)))
		req.Header = hdr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if s := send(headers(v, 1), v.Body); s != 500 || calls != 1 {
		t.Errorf("handler error: %d after %d calls, want 500 (payd redelivers)", s, calls)
	}
	fail = false
	if s := send(headers(v, 2), v.Body); s != 200 || calls != 2 {
		t.Errorf("handled: %d after %d calls", s, calls)
	}
	if s := send(headers(v, 3), v.Body); s != 200 || calls != 2 {
		t.Errorf("a duplicate: %d after %d calls, want 200 without calling again", s, calls)
	}
	bad := headers(v, 1)
	bad.Set("X-Signature", "sha256=AAAA")
	if s := send(bad, v.Body); s != 401 || calls != 2 {
		t.Errorf("forged: %d", s)
	}
}
