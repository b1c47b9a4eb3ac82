package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd"
	"payd/internal/acquirer/maibecomm"
)

// acquirer plays a card acquirer with the e-Commerce API v1 of maib's
// public documentation: a project's tokens, payments created by the
// merchant's server (/v1/pay) and paid by the payer on this acquirer's
// own card page with a 3-D Secure step, signed final responses to the
// merchant's callbackUrl, pay-info and refunds. Its control calls make it
// fail, and delay, duplicate or drop its callbacks.
//
// Test cards (any future expiry, any CVV):
//
//	4111 1111 1111 1111  approved after the 3-D Secure code 123456
//	4000 0000 0000 0002  declined
//	4000 0000 0000 0119  never completes: the payment times out
type acquirer struct {
	base                         string // this server's URL, for payUrl
	project, secret, signatureKy string
	tokenLife                    time.Duration
	timeout                      time.Duration // a payment not completed by then is TIMEOUT
	client                       *http.Client

	mu        sync.Mutex
	tokens    map[string]time.Time // access token → expiry
	refreshes map[string]time.Time
	payments  map[string]*cardPayment
	order     []string
	down      bool
	cbMode    string // "", "drop", "duplicate"
	cbDelay   time.Duration
	callbacks []sentCallback
	calls     map[string]int // API calls by endpoint pattern, for tests that count what payd asks
}

// cardPayment is one payment at the acquirer.
type cardPayment struct {
	PayID        string          `json:"payId"`
	OrderID      string          `json:"orderId"`
	Amount       payd.Money      `json:"amount"`
	Currency     string          `json:"currency"`
	Description  string          `json:"description,omitempty"`
	ClientIP     string          `json:"clientIp"`
	Language     string          `json:"language"`
	Status       string          `json:"status"` // CREATED, PENDING (3-D Secure), OK, DECLINED, TIMEOUT
	StatusCode   string          `json:"statusCode"`
	ThreeDS      string          `json:"threeDs,omitempty"`
	RRN          string          `json:"rrn,omitempty"`
	Approval     string          `json:"approval,omitempty"`
	CardNumber   string          `json:"cardNumber,omitempty"` // masked
	RefundAmount *payd.Money     `json:"refundAmount,omitempty"`
	Items        json.RawMessage `json:"items,omitempty"`
	CallbackURL  string          `json:"callbackUrl"`
	OkURL        string          `json:"okUrl"`
	FailURL      string          `json:"failUrl"`
	CreatedAt    time.Time       `json:"createdAt"`
	Refunds      int             `json:"refunds"` // /v1/refund calls that refunded (at most one)
}

// sentCallback is a final response the acquirer posted, and the answer.
type sentCallback struct {
	PayID  string    `json:"payId"`
	Status int       `json:"status"`
	Error  string    `json:"error,omitempty"`
	Forged bool      `json:"forged,omitempty"`
	At     time.Time `json:"at"`
}

func newAcquirer(base, project, secret, signatureKey string) *acquirer {
	return &acquirer{base: base, project: project, secret: secret, signatureKy: signatureKey, tokenLife: 300 * time.Second,
		timeout: 10 * time.Minute, client: &http.Client{Timeout: 10 * time.Second},
		tokens: map[string]time.Time{}, refreshes: map[string]time.Time{}, payments: map[string]*cardPayment{},
		calls: map[string]int{}}
}

func (a *acquirer) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/generate-token", a.api(a.generateToken, false))
	mux.HandleFunc("POST /v1/pay", a.api(a.pay, true))
	mux.HandleFunc("GET /v1/pay-info/{payId}", a.api(a.payInfo, true))
	mux.HandleFunc("POST /v1/refund", a.api(a.refund, true))
	mux.HandleFunc("GET /ecomm/pay/{payId}", a.cardPage)
	mux.HandleFunc("POST /ecomm/pay/{payId}", a.cardSubmit)
	mux.HandleFunc("POST /ecomm/3ds/{payId}", a.threeDS)
	// Control.
	mux.HandleFunc("GET /acquirer/payments", a.listPayments)
	mux.HandleFunc("GET /acquirer/callbacks", a.listCallbacks)
	mux.HandleFunc("GET /acquirer/calls", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		writeJSON(w, 200, a.calls)
	})
	mux.HandleFunc("POST /acquirer/down", func(w http.ResponseWriter, r *http.Request) {
		a.set(func() { a.down = true })
		writeJSON(w, 200, map[string]any{"down": true})
	})
	mux.HandleFunc("POST /acquirer/up", func(w http.ResponseWriter, r *http.Request) {
		a.set(func() { a.down = false })
		writeJSON(w, 200, map[string]any{"down": false})
	})
	mux.HandleFunc("POST /acquirer/callbacks", a.setCallbacks)
	mux.HandleFunc("POST /acquirer/payments/{payId}/callback", a.resendCallback)
}

func (a *acquirer) set(f func()) { a.mu.Lock(); f(); a.mu.Unlock() }

type apiError struct {
	status int
	code   string
	msg    string
}

// api wraps an endpoint in the API's envelope and its failures: the
// control's "down" answers 503, a missing or expired token 401.
func (a *acquirer) api(h func(r *http.Request) (any, *apiError), authed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		down := a.down
		a.calls[r.Pattern]++
		a.mu.Unlock()
		if down {
			envelope(w, nil, &apiError{503, "10000", "Internal error encountered. Please try again or report if error persists"})
			return
		}
		if authed {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			a.mu.Lock()
			exp, ok := a.tokens[tok]
			a.mu.Unlock()
			if !ok || time.Now().After(exp) {
				envelope(w, nil, &apiError{401, "11001", "Invalid or expired access token"})
				return
			}
		}
		res, e := h(r)
		envelope(w, res, e)
	}
}

func envelope(w http.ResponseWriter, res any, e *apiError) {
	if e != nil {
		writeJSON(w, e.status, map[string]any{"ok": false, "errors": []map[string]any{{"errorCode": e.code, "errorMessage": e.msg}}})
		return
	}
	writeJSON(w, 200, map[string]any{"ok": true, "result": res})
}

func newToken() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (a *acquirer) generateToken(r *http.Request) (any, *apiError) {
	var in struct{ ProjectID, ProjectSecret, RefreshToken string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return nil, &apiError{400, "12002", "Provided request is invalid: " + err.Error()}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case in.RefreshToken != "":
		if exp, ok := a.refreshes[in.RefreshToken]; !ok || time.Now().After(exp) {
			return nil, &apiError{401, "11001", "Invalid credentials. Please check projectId and projectSecret"}
		}
	case in.ProjectID == "" || in.ProjectSecret == "":
		return nil, &apiError{401, "11002", "Please provide projectId and projectSecret or refreshToken"}
	case in.ProjectID != a.project || in.ProjectSecret != a.secret:
		return nil, &apiError{401, "11001", "Invalid credentials. Please check projectId and projectSecret"}
	}
	access, refresh := newToken(), newToken()
	a.tokens[access] = time.Now().Add(a.tokenLife)
	a.refreshes[refresh] = time.Now().Add(6 * a.tokenLife)
	return map[string]any{"accessToken": access, "expiresIn": int(a.tokenLife.Seconds()), "refreshToken": refresh,
		"refreshExpiresIn": int(6 * a.tokenLife.Seconds()), "tokenType": "Bearer"}, nil
}

func (a *acquirer) pay(r *http.Request) (any, *apiError) {
	var in struct {
		Amount      json.Number     `json:"amount"`
		Currency    string          `json:"currency"`
		ClientIP    string          `json:"clientIp"`
		Language    string          `json:"language"`
		Description string          `json:"description"`
		OrderID     string          `json:"orderId"`
		Items       json.RawMessage `json:"items"`
		CallbackURL string          `json:"callbackUrl"`
		OkURL       string          `json:"okUrl"`
		FailURL     string          `json:"failUrl"`
	}
	d := json.NewDecoder(r.Body)
	d.UseNumber()
	if err := d.Decode(&in); err != nil {
		return nil, &apiError{400, "12002", "Provided request is invalid: " + err.Error()}
	}
	amount, err := payd.ParseMoney(in.Amount.String())
	switch {
	case err != nil || amount < 100:
		return nil, &apiError{400, "12014", "Parameter amount must be in range 1…"}
	case in.Currency != "MDL" && in.Currency != "EUR" && in.Currency != "USD":
		return nil, &apiError{400, "12005", "Parameter currency is invalid. Possible values: MDL, EUR, USD"}
	case in.ClientIP == "":
		return nil, &apiError{400, "12018", "Parameter clientIp is required"}
	case net.ParseIP(in.ClientIP) == nil || net.ParseIP(in.ClientIP).To4() == nil:
		return nil, &apiError{400, "12019", "Parameter clientIp has invalid format. Only IPv4 is allowed"}
	case len(in.Language) != 2:
		return nil, &apiError{400, "12004", "Parameter language must have 2 characters"}
	case len([]rune(in.Description)) > 124:
		return nil, &apiError{400, "12020", "Parameter description must not exceed 124 characters"}
	case len([]rune(in.OrderID)) > 36:
		return nil, &apiError{400, "12025", "Parameter orderId must not exceed 36 characters"}
	case !httpURL(in.OkURL):
		return nil, &apiError{400, "12022", "Parameter okUrl has invalid format"}
	case !httpURL(in.FailURL):
		return nil, &apiError{400, "13023", "Parameter failUrl has invalid format"}
	case !httpURL(in.CallbackURL):
		return nil, &apiError{400, "12024", "Parameter callbackUrl has invalid format"}
	}
	p := &cardPayment{PayID: uuid(), OrderID: in.OrderID, Amount: amount, Currency: in.Currency, Description: in.Description,
		ClientIP: in.ClientIP, Language: in.Language, Status: "CREATED", Items: in.Items, CallbackURL: in.CallbackURL,
		OkURL: in.OkURL, FailURL: in.FailURL, CreatedAt: time.Now()}
	a.mu.Lock()
	a.payments[p.PayID] = p
	a.order = append(a.order, p.PayID)
	a.mu.Unlock()
	return map[string]any{"payId": p.PayID, "orderId": p.OrderID, "payUrl": a.base + "/ecomm/pay/" + p.PayID}, nil
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && len(s) <= 2048
}

func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// payment returns the payment, its timeout applied.
func (a *acquirer) payment(id string) *cardPayment {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.payments[id]
	if p != nil && (p.Status == "CREATED" || p.Status == "PENDING") && time.Since(p.CreatedAt) > a.timeout {
		p.Status, p.StatusCode = "TIMEOUT", "402"
	}
	return p
}

// result is the payment as pay-info and the final response show it.
func (p *cardPayment) result() map[string]any {
	res := map[string]any{"payId": p.PayID, "orderId": p.OrderID, "status": p.Status, "statusCode": p.StatusCode,
		"statusMessage": statusMessage(p.Status), "amount": json.Number(p.Amount.String()), "currency": p.Currency}
	if p.ThreeDS != "" {
		res["threeDs"] = p.ThreeDS
	}
	if p.RRN != "" {
		res["rrn"], res["approval"] = p.RRN, p.Approval
	}
	if p.CardNumber != "" {
		res["cardNumber"] = p.CardNumber
	}
	return res
}

func statusMessage(st string) string {
	switch st {
	case "OK":
		return "Approved"
	case "DECLINED":
		return "Declined by the issuer"
	case "TIMEOUT":
		return "The customer did not complete the payment"
	}
	return "Waiting for the customer"
}

func (a *acquirer) payInfo(r *http.Request) (any, *apiError) {
	p := a.payment(r.PathValue("payId"))
	if p == nil {
		return nil, &apiError{404, "13002", "Payment ID " + r.PathValue("payId") + " not found"}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	res := p.result()
	res["clientIp"], res["description"] = p.ClientIP, p.Description
	if p.RefundAmount != nil {
		res["refundAmount"] = json.Number(p.RefundAmount.String())
	}
	if len(p.Items) > 0 {
		res["items"] = p.Items
	}
	return res, nil
}

func (a *acquirer) refund(r *http.Request) (any, *apiError) {
	var in struct {
		PayID        string      `json:"payId"`
		RefundAmount json.Number `json:"refundAmount"`
	}
	d := json.NewDecoder(r.Body)
	d.UseNumber()
	if err := d.Decode(&in); err != nil {
		return nil, &apiError{400, "12002", "Provided request is invalid: " + err.Error()}
	}
	if in.PayID == "" {
		return nil, &apiError{400, "12011", "Parameter payId is required"}
	}
	p := a.payment(in.PayID)
	if p == nil {
		return nil, &apiError{404, "13002", "Payment ID " + in.PayID + " not found"}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	amount := p.Amount
	if in.RefundAmount != "" {
		m, err := payd.ParseMoney(in.RefundAmount.String())
		if err != nil || m <= 0 {
			return nil, &apiError{400, "12028", "Parameter refundAmount must be in range 0.01…" + p.Amount.String()}
		}
		amount = m
	}
	switch {
	case p.Status == "REVERSED" || p.RefundAmount != nil:
		// A payment is refunded once; a repeat says so.
		return map[string]any{"payId": p.PayID, "orderId": p.OrderID, "status": "REVERSED", "statusCode": "400",
			"statusMessage": "The payment was already refunded", "refundAmount": json.Number(p.RefundAmount.String())}, nil
	case p.Status != "OK":
		return nil, &apiError{409, "13117", "Refund is not allowed for payment in " + p.Status + " status"}
	case amount > p.Amount:
		return nil, &apiError{409, "13102", "Refund amount cannot be greater than " + p.Amount.String()}
	}
	p.RefundAmount, p.Refunds = &amount, p.Refunds+1
	return map[string]any{"payId": p.PayID, "orderId": p.OrderID, "status": "OK", "statusCode": "000",
		"statusMessage": "Refunded", "refundAmount": json.Number(amount.String())}, nil
}

var cardTmpl = template.Must(template.New("card").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>payd-bank acquirer — card payment</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem}label{display:block;margin-top:.8rem}
input{font:inherit;padding:.4rem;width:100%;box-sizing:border-box}button{font:inherit;margin-top:1rem;padding:.6rem 1.2rem}
.notice{background:#fff4d6;padding:.5rem}.error{color:#a00}</style></head><body>
<p class="notice">payd-bank: a test acquirer. No money moves.</p>
<h1>{{.Amount}} {{.Currency}}</h1>
{{if .Error}}<p class="error" id="error">{{.Error}}</p>{{end}}
{{if .Challenge}}
<form method="post" action="/ecomm/3ds/{{.PayID}}"><p>3-D Secure: enter the code your bank sent (test code 123456).</p>
<label for="otp">Code</label><input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code">
<button id="otp-submit">Confirm</button></form>
{{else if .Done}}<p id="done">{{.Done}}</p>
{{else}}
<form method="post" action="/ecomm/pay/{{.PayID}}" autocomplete="off">
<label for="pan">Card number</label><input id="pan" name="pan" inputmode="numeric">
<label for="exp">Expiry (MM/YY)</label><input id="exp" name="exp">
<label for="cvv">CVV</label><input id="cvv" name="cvv" inputmode="numeric">
<label for="holder">Card holder</label><input id="holder" name="holder">
<button id="pay">Pay</button></form>
<p>Test cards: 4111 1111 1111 1111 (approved, 3-D Secure code 123456), 4000 0000 0000 0002 (declined),
4000 0000 0000 0119 (never completes).</p>
{{end}}
</body></html>`))

type cardView struct {
	PayID, Currency, Error, Done string
	Amount                       string
	Challenge                    bool
}

func (a *acquirer) view(w http.ResponseWriter, status int, p *cardPayment, v cardView) {
	v.PayID, v.Amount, v.Currency = p.PayID, p.Amount.String(), p.Currency
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	cardTmpl.Execute(w, v)
}

func (a *acquirer) cardPage(w http.ResponseWriter, r *http.Request) {
	p := a.payment(r.PathValue("payId"))
	if p == nil {
		http.Error(w, "unknown payment", http.StatusNotFound)
		return
	}
	a.mu.Lock()
	st := p.Status
	a.mu.Unlock()
	switch st {
	case "CREATED":
		a.view(w, 200, p, cardView{})
	case "PENDING":
		a.view(w, 200, p, cardView{Challenge: true})
	default:
		a.view(w, 200, p, cardView{Done: "This payment is " + st + "."})
	}
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

func (a *acquirer) cardSubmit(w http.ResponseWriter, r *http.Request) {
	p := a.payment(r.PathValue("payId"))
	if p == nil {
		http.Error(w, "unknown payment", http.StatusNotFound)
		return
	}
	pan := digits(r.FormValue("pan"))
	a.mu.Lock()
	if p.Status != "CREATED" {
		a.mu.Unlock()
		a.view(w, 409, p, cardView{Done: "This payment is " + p.Status + "."})
		return
	}
	if len(pan) < 13 {
		a.mu.Unlock()
		a.view(w, 400, p, cardView{Error: "The card number is not valid."})
		return
	}
	p.CardNumber = pan[:6] + strings.Repeat("*", len(pan)-10) + pan[len(pan)-4:]
	switch pan {
	case "4111111111111111":
		p.Status = "PENDING" // the 3-D Secure challenge
		a.mu.Unlock()
		a.view(w, 200, p, cardView{Challenge: true})
		return
	case "4000000000000119":
		a.mu.Unlock() // the payer is left waiting; the payment times out
		a.view(w, 200, p, cardView{Done: "Processing… (this test card never completes)"})
		return
	}
	p.Status, p.StatusCode, p.ThreeDS = "DECLINED", "116", "AUTHENTICATED"
	a.mu.Unlock()
	a.finish(w, r, p)
}

func (a *acquirer) threeDS(w http.ResponseWriter, r *http.Request) {
	p := a.payment(r.PathValue("payId"))
	if p == nil {
		http.Error(w, "unknown payment", http.StatusNotFound)
		return
	}
	a.mu.Lock()
	if p.Status != "PENDING" {
		a.mu.Unlock()
		a.view(w, 409, p, cardView{Done: "This payment is " + p.Status + "."})
		return
	}
	if r.FormValue("otp") != "123456" {
		p.Status, p.StatusCode, p.ThreeDS = "DECLINED", "116", "NOT_AUTHENTICATED"
	} else {
		p.Status, p.StatusCode, p.ThreeDS = "OK", "000", "AUTHENTICATED"
		p.RRN, p.Approval = rrn(), fmt.Sprintf("%06d", randN(1000000))
	}
	a.mu.Unlock()
	a.finish(w, r, p)
}

// finish sends the payer back to the merchant and the final response to
// its callbackUrl (as the control says: at once, late, twice or never).
func (a *acquirer) finish(w http.ResponseWriter, r *http.Request, p *cardPayment) {
	a.mu.Lock()
	back, mode, delay := p.FailURL, a.cbMode, a.cbDelay
	if p.Status == "OK" {
		back = p.OkURL
	}
	a.mu.Unlock()
	if mode != "drop" {
		go func() {
			time.Sleep(delay)
			a.sendCallback(p, false)
			if mode == "duplicate" {
				a.sendCallback(p, false)
			}
		}()
	}
	u, err := url.Parse(back)
	if err != nil {
		http.Error(w, "bad return URL", http.StatusInternalServerError)
		return
	}
	q := u.Query()
	q.Set("payId", p.PayID)
	q.Set("orderId", p.OrderID)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// sendCallback posts the payment's final response, signed (or, forged,
// with a signature of another key).
func (a *acquirer) sendCallback(p *cardPayment, forged bool) {
	a.mu.Lock()
	res := p.result()
	key := a.signatureKy
	a.mu.Unlock()
	if forged {
		key = "not-the-signature-key"
	}
	body, _ := json.Marshal(map[string]any{"result": res, "signature": maibecomm.Sign(res, key)})
	sc := sentCallback{PayID: p.PayID, Forged: forged, At: time.Now()}
	resp, err := a.client.Post(p.CallbackURL, "application/json", bytes.NewReader(body))
	if err != nil {
		sc.Error = err.Error()
	} else {
		resp.Body.Close()
		sc.Status = resp.StatusCode
	}
	a.mu.Lock()
	a.callbacks = append(a.callbacks, sc)
	a.mu.Unlock()
}

func (a *acquirer) listPayments(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	ids := append([]string{}, a.order...)
	a.mu.Unlock()
	out := []cardPayment{}
	for _, id := range ids {
		p := a.payment(id)
		a.mu.Lock()
		out = append(out, *p)
		a.mu.Unlock()
	}
	writeJSON(w, 200, out)
}

func (a *acquirer) listCallbacks(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	out := append([]sentCallback{}, a.callbacks...)
	a.mu.Unlock()
	writeJSON(w, 200, out)
}

// setCallbacks is POST /acquirer/callbacks?mode=normal|drop|duplicate&delay=2s.
func (a *acquirer) setCallbacks(w http.ResponseWriter, r *http.Request) {
	mode := r.URL.Query().Get("mode")
	if mode == "normal" {
		mode = ""
	}
	if mode != "" && mode != "drop" && mode != "duplicate" {
		writeJSON(w, 400, map[string]any{"error": "mode must be normal, drop or duplicate"})
		return
	}
	var delay time.Duration
	if d := r.URL.Query().Get("delay"); d != "" {
		var err error
		if delay, err = time.ParseDuration(d); err != nil || delay < 0 {
			writeJSON(w, 400, map[string]any{"error": "delay must be a duration such as 2s"})
			return
		}
	}
	a.set(func() { a.cbMode, a.cbDelay = mode, delay })
	writeJSON(w, 200, map[string]any{"mode": mode, "delay": delay.String()})
}

// resendCallback is POST /acquirer/payments/{payId}/callback[?forged=true]:
// the final response sent (again) now, or forged.
func (a *acquirer) resendCallback(w http.ResponseWriter, r *http.Request) {
	p := a.payment(r.PathValue("payId"))
	if p == nil {
		writeJSON(w, 404, map[string]any{"error": "unknown payment"})
		return
	}
	a.sendCallback(p, r.URL.Query().Get("forged") == "true")
	a.mu.Lock()
	last := a.callbacks[len(a.callbacks)-1]
	a.mu.Unlock()
	writeJSON(w, 200, last)
}

func rrn() string { return fmt.Sprintf("%012d", randN(1_000_000_000_000)) }

func randN(n int64) int64 {
	var b [8]byte
	rand.Read(b[:])
	v, _ := strconv.ParseUint(hex.EncodeToString(b[:]), 16, 64)
	return int64(v % uint64(n))
}
