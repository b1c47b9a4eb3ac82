// Package maibecomm is the card acquirer adapter for maib's e-Commerce API
// v1 (docs.maibmerchants.md/e-commerce): payd creates a payment there for
// a checkout (POST /v1/pay), sends the payer to the acquirer's card page,
// learns the outcome from the signed callback confirmed with
// GET /v1/pay-info (or from pay-info alone, on a schedule), and refunds
// through POST /v1/refund. payd never sees a card number.
//
// The adapter implements payd.CardGateway (the checkout's card session),
// payd.Rails for the card orders of the outbox (refunds and reversals),
// and the callback endpoint. It imports only the domain.
package maibecomm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"payd"
)

// Name is the adapter's name in PAYD_CARD_ACQUIRER.
const Name = "maib-ecomm"

// Client talks to the acquirer's API with the project's credentials. Its
// access token is kept and renewed (with the refresh token while that is
// valid) before it expires.
type Client struct {
	URL           string // the API's base, e.g. https://api.maibmerchants.md
	ProjectID     string
	ProjectSecret string
	SignatureKey  string // verifies the callbacks
	HTTP          *http.Client
	Clock         payd.Clock

	mu           sync.Mutex
	access       string
	accessUntil  time.Time
	refresh      string
	refreshUntil time.Time
}

// APIError is an answer of the acquirer that is not ok.
type APIError struct {
	Status  int
	Code    string // the acquirer's errorCode, e.g. 13116
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("acquirer answered %d %s %s", e.Status, e.Code, e.Message)
}

// Permanent reports whether asking again cannot change the answer: the
// acquirer refused the request itself (4xx other than 401, 408 and 429).
func (e *APIError) Permanent() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != 401 && e.Status != 408 && e.Status != 429
}

type envelope struct {
	Result json.RawMessage `json:"result"`
	OK     bool            `json:"ok"`
	Errors []struct {
		Code    string `json:"errorCode"`
		Message string `json:"errorMessage"`
	} `json:"errors"`
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// call sends one request and decodes the envelope's result into out.
// A request without body is sent without Content-Type, as the API asks.
func (c *Client) call(ctx context.Context, method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || (!env.OK && len(env.Errors) == 0) {
		return &APIError{Status: res.StatusCode, Message: "unreadable answer"}
	}
	if !env.OK || res.StatusCode != http.StatusOK {
		e := &APIError{Status: res.StatusCode}
		if len(env.Errors) > 0 {
			e.Code, e.Message = env.Errors[0].Code, env.Errors[0].Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(env.Result))
	d.UseNumber()
	return d.Decode(out)
}

// authed calls with the access token, renewing it once when the acquirer
// says it has expired.
func (c *Client) authed(ctx context.Context, method, path string, body, out any) error {
	for attempt := 0; ; attempt++ {
		token, err := c.token(ctx)
		if err != nil {
			return err
		}
		err = c.call(ctx, method, path, token, body, out)
		var ae *APIError
		if attempt == 0 && errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			c.mu.Lock()
			if c.access == token {
				c.access = ""
			}
			c.mu.Unlock()
			continue
		}
		return err
	}
}

type tokenResult struct {
	AccessToken      string `json:"accessToken"`
	ExpiresIn        int64  `json:"expiresIn"`
	RefreshToken     string `json:"refreshToken"`
	RefreshExpiresIn int64  `json:"refreshExpiresIn"`
}

// token is a valid access token: the kept one while more than a tenth of
// its life (at least 10 s) is left, else a new one, from the refresh
// token while that is valid, else from the project's credentials.
func (c *Client) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Clock.Now()
	if c.access != "" && now.Before(c.accessUntil) {
		return c.access, nil
	}
	var t tokenResult
	err := errors.New("no refresh token")
	if c.refresh != "" && now.Before(c.refreshUntil) {
		err = c.call(ctx, http.MethodPost, "/v1/generate-token", "", map[string]string{"refreshToken": c.refresh}, &t)
	}
	if err != nil {
		err = c.call(ctx, http.MethodPost, "/v1/generate-token", "",
			map[string]string{"projectId": c.ProjectID, "projectSecret": c.ProjectSecret}, &t)
	}
	if err != nil {
		// Not the refused request's own answer: a refund must not read a
		// 4xx of the token's as its own (Deliver), and no request can go
		// until a token is had.
		return "", fmt.Errorf("acquirer token: %v (%w)", err, payd.ErrRailsUnavailable)
	}
	if t.AccessToken == "" || t.ExpiresIn <= 0 {
		return "", errors.New("acquirer token: no access token in the answer")
	}
	life := time.Duration(t.ExpiresIn) * time.Second
	c.access, c.accessUntil = t.AccessToken, now.Add(life-max(life/10, 10*time.Second))
	if t.RefreshToken != "" {
		rlife := time.Duration(t.RefreshExpiresIn) * time.Second
		c.refresh, c.refreshUntil = t.RefreshToken, now.Add(rlife-max(rlife/10, 10*time.Second))
	}
	return c.access, nil
}

// payItem is one ordered product, as /v1/pay takes it.
type payItem struct {
	ID       string      `json:"id,omitempty"`
	Name     string      `json:"name,omitempty"`
	Price    json.Number `json:"price,omitempty"`
	Quantity int64       `json:"quantity,omitempty"`
}

type payRequest struct {
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
	ClientIP    string      `json:"clientIp"`
	Language    string      `json:"language"`
	Description string      `json:"description,omitempty"`
	ClientName  string      `json:"clientName,omitempty"`
	Email       string      `json:"email,omitempty"`
	Phone       string      `json:"phone,omitempty"`
	OrderID     string      `json:"orderId"`
	Delivery    json.Number `json:"delivery,omitempty"`
	Items       []payItem   `json:"items,omitempty"`
	CallbackURL string      `json:"callbackUrl"`
	OkURL       string      `json:"okUrl"`
	FailURL     string      `json:"failUrl"`
}

var _ payd.CardGateway = (*Client)(nil)

// StartCard creates the acquirer's payment for the checkout: its amount,
// the payer's address and language, the order, and payd's return and
// callback URLs. The acquirer's orderId is the checkoutId.
func (c *Client) StartCard(ctx context.Context, co *payd.Checkout, in payd.CardStart) (payd.CardSession, error) {
	req := payRequest{
		Amount: json.Number(co.Amount.String()), Currency: co.Currency, ClientIP: ipv4(in.ClientIP), Language: in.Language,
		Description: cut("Checkout "+co.ID, 124), OrderID: co.ID,
		CallbackURL: in.CallbackURL, OkURL: in.OkURL, FailURL: in.FailURL,
	}
	if o := co.Order; o != nil {
		if o.Description != "" {
			req.Description = cut(o.Description, 124)
		}
		if o.DeliveryAmount != nil {
			req.Delivery = json.Number(o.DeliveryAmount.String())
		}
		for i, it := range o.Items {
			if i == 50 {
				break
			}
			item := payItem{ID: cut(it.ExternalID, 36), Name: cut(it.Title, 128)}
			if it.Amount != nil {
				item.Price, item.Quantity = json.Number(it.Amount.String()), 1
				if q := it.Quantity; q != nil {
					if int64(*q)%1000 == 0 {
						item.Quantity = int64(*q) / 1000
					} else { // a fractional quantity: the line as one
						item.Price = json.Number(q.Times(*it.Amount).String())
					}
				}
			}
			req.Items = append(req.Items, item)
		}
	}
	if p := co.Payer; p != nil {
		req.ClientName, req.Email, req.Phone = cut(p.Name, 128), cut(p.Email, 40), cut(p.Phone, 40)
	}
	var res struct {
		PayID  string `json:"payId"`
		PayURL string `json:"payUrl"`
	}
	if err := c.authed(ctx, http.MethodPost, "/v1/pay", req, &res); err != nil {
		return payd.CardSession{}, err
	}
	if res.PayID == "" || res.PayURL == "" {
		return payd.CardSession{}, errors.New("acquirer: /v1/pay answered without payId or payUrl")
	}
	return payd.CardSession{Network: Name, ID: res.PayID, URL: res.PayURL}, nil
}

// MinAmount is the smallest payment the acquirer takes (its /v1/pay
// refuses less: "Parameter amount must be in range 1…").
const MinAmount payd.Money = 100

// Takes reports whether the acquirer takes a payment of amount in
// currency: at least MinAmount, in MDL, EUR or USD.
func (c *Client) Takes(amount payd.Money, currency string) bool {
	return amount >= MinAmount && (currency == "MDL" || currency == "EUR" || currency == "USD")
}

// payInfo is GET /v1/pay-info's result, the fields payd reads.
type payInfo struct {
	PayID      string      `json:"payId"`
	OrderID    string      `json:"orderId"`
	Status     string      `json:"status"`
	StatusCode string      `json:"statusCode"`
	RRN        string      `json:"rrn"`
	Approval   string      `json:"approval"`
	CardNumber string      `json:"cardNumber"`
	Amount     json.Number `json:"amount"`
	Currency   string      `json:"currency"`
	ClientName string      `json:"clientName"`
	// RefundAmount is what the acquirer has refunded of the payment.
	RefundAmount json.Number `json:"refundAmount"`
}

// CardStatus asks the acquirer about one of its payments (pay-info).
func (c *Client) CardStatus(ctx context.Context, id string) (payd.CardOutcome, error) {
	var pi payInfo
	if err := c.authed(ctx, http.MethodGet, "/v1/pay-info/"+id, nil, &pi); err != nil {
		return payd.CardOutcome{}, err
	}
	if pi.PayID != "" && pi.PayID != id {
		return payd.CardOutcome{}, fmt.Errorf("acquirer: pay-info for %s answered about %s", id, pi.PayID)
	}
	return outcome(id, pi)
}

// CheckoutOf is the checkout a payment of the acquirer was created for
// (its orderId), asked of the acquirer.
func (c *Client) checkoutOf(ctx context.Context, id string) (string, payd.CardOutcome, error) {
	var pi payInfo
	if err := c.authed(ctx, http.MethodGet, "/v1/pay-info/"+id, nil, &pi); err != nil {
		return "", payd.CardOutcome{}, err
	}
	o, err := outcome(id, pi)
	return pi.OrderID, o, err
}

// outcome reads pay-info as payd's view of the payment. An amount that
// is missing or unreadable is left unknown (nil): the domain does not
// take an approval of an unknown amount as the checkout's.
func outcome(id string, pi payInfo) (payd.CardOutcome, error) {
	res := payd.CardResult{Network: Name, Reference: id, RRN: pi.RRN, Mask: mask(pi.CardNumber), Holder: cut(pi.ClientName, payd.MaxPayerName),
		Currency: pi.Currency, Amount: money(pi.Amount)}
	switch pi.Status {
	case "OK":
		res.Approved, res.ApprovalCode = true, pi.Approval
		return payd.CardOutcome{State: payd.CardApproved, Result: res}, nil
	case "REVERSED":
		// Paid and refunded since. Seen first now, the charge is already
		// back with the payer: nothing to record as paid. Seen after the
		// approval, the session is closed and this changes nothing.
		return payd.CardOutcome{State: payd.CardReturned, Result: res}, nil
	case "FAILED", "DECLINED":
		return payd.CardOutcome{State: payd.CardDeclined, Result: res}, nil
	case "TIMEOUT":
		return payd.CardOutcome{State: payd.CardTimedOut, Result: res}, nil
	case "CREATED", "PENDING", "":
		return payd.CardOutcome{State: payd.CardPending, Result: res}, nil
	}
	return payd.CardOutcome{}, fmt.Errorf("acquirer: unknown status %q", pi.Status)
}

var _ payd.Rails = (*Client)(nil)

// Deliver hands a card order of the outbox to the acquirer: a refund of a
// card payment, or the reversal of a charge no checkout took, both as
// POST /v1/refund of the acquirer's payment. The acquirer answers at once:
// a refund's outcome is Taken.Refund. An acquirer that cannot be reached,
// gives no token, or answers 5xx, 401, 408 or 429 is unavailable
// (payd.ErrRailsUnavailable) and asked again later (the outbox's
// schedule); the acquirer refunds a payment once, so a refund asked again
// after its answer was lost is answered "already refunded", which is this
// refund's success.
func (c *Client) Deliver(ctx context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	if o.Kind != payd.OrderCardRefund && o.Kind != payd.OrderCardReverse {
		return payd.Taken{}, fmt.Errorf("the card acquirer takes no %s order", o.Kind)
	}
	body := map[string]any{"payId": o.Data.OriginalRef}
	if o.Data.Amount != o.Data.OriginalTotal {
		body["refundAmount"] = json.Number(o.Data.Amount.String())
	}
	var res struct {
		Status string `json:"status"`
	}
	err := c.authed(ctx, http.MethodPost, "/v1/refund", body, &res)
	var ae *APIError
	switch {
	case err == nil && res.Status == "OK":
		return settled(o, payd.RefundAccepted, nil)
	case err == nil && res.Status == "REVERSED", errors.As(err, &ae) && ae.Code == "13116": // already refunded
		return c.alreadyRefunded(ctx, o)
	case err == nil:
		return settled(o, payd.RefundRejected, fmt.Errorf("acquirer answered status %q", res.Status))
	case errors.As(err, &ae) && ae.Permanent():
		return settled(o, payd.RefundRejected, err)
	case errors.Is(err, payd.ErrRailsUnavailable):
		return payd.Taken{}, err
	}
	// No answer, 5xx, 401, 408 or 429: the acquirer takes nothing now.
	return payd.Taken{}, fmt.Errorf("%w (%w)", err, payd.ErrRailsUnavailable)
}

// alreadyRefunded settles an order the acquirer says it refunded before:
// what it refunded (pay-info's refundAmount) is compared with the order's
// amount (payd.AlreadyRefunded). An answer lost before is this order's
// success; another amount is a refund for a person to review.
func (c *Client) alreadyRefunded(ctx context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	var pi payInfo
	if err := c.authed(ctx, http.MethodGet, "/v1/pay-info/"+o.Data.OriginalRef, nil, &pi); err != nil {
		return payd.Taken{}, fmt.Errorf("acquirer: already refunded, and pay-info failed: %v (%w)", err, payd.ErrRailsUnavailable)
	}
	st := payd.AlreadyRefunded(o.Data.Amount, money(pi.RefundAmount))
	if st == payd.RefundAccepted {
		return settled(o, st, nil)
	}
	return settled(o, st, fmt.Errorf("acquirer refunded %q of the payment, the order asked %s", pi.RefundAmount.String(), o.Data.Amount))
}

// settled is an order's outcome at the acquirer. A refund takes it as its
// status; a reversal has none of its own: one the acquirer did not make
// as asked is refused (payd.ErrOrderRefused), with why.
func settled(o *payd.RailsOrder, st payd.RefundStatus, why error) (payd.Taken, error) {
	if o.Kind.RefundKind() {
		return payd.Taken{Refund: st}, nil
	}
	if st != payd.RefundAccepted {
		return payd.Taken{}, fmt.Errorf("%w: %v", payd.ErrOrderRefused, why)
	}
	return payd.Taken{}, nil
}

// money reads an amount of the acquirer's; nil when missing or unreadable.
func money(n json.Number) *payd.Money {
	if n == "" {
		return nil
	}
	m, err := payd.ParseMoney(n.String())
	if err != nil {
		return nil
	}
	return &m
}

// mask keeps a masked card number as the acquirer gives it, and masks
// anything else that would hold more than its first six and last four
// digits: a full number never reaches payd's database.
func mask(n string) string {
	// Any Unicode digit counts: a full-width "４１１１" is a card number too.
	digits := 0
	for _, r := range n {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	if digits <= 10 {
		return cut(n, 19)
	}
	var b strings.Builder
	seen := 0
	for _, r := range n {
		if unicode.IsDigit(r) {
			seen++
			if seen > 6 && seen <= digits-4 {
				r = '*'
			}
		}
		b.WriteRune(r)
	}
	return cut(b.String(), 19)
}

// ipv4 is the payer's IPv4 address as the acquirer requires one; a payer
// seen over IPv6 (or unknown) is sent as 0.0.0.0.
func ipv4(addr string) string {
	if ip := net.ParseIP(addr); ip != nil && ip.To4() != nil {
		return ip.To4().String()
	}
	return "0.0.0.0"
}

// cut shortens s to at most n characters.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
