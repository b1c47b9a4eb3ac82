// Package client is a Go client for payd's merchant API: typed requests
// and results for every endpoint, money as exact decimals (payd.Money),
// tokens fetched and renewed on its own, every POST made idempotent and
// retried safely.
//
//	c := client.New("http://127.0.0.1:8080", clientID, clientSecret)
//	rtp, err := c.CreateRTP(ctx, client.RTPRequest{Alias: "37369112221", Amount: payd.Money(5000),
//		Currency: "MDL", Description: "Order 42", ExpiresAt: time.Now().Add(time.Hour)})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "24006" { … }
//
// Retries: network errors, 429 (after Retry-After) and 503 are retried with
// backoff for at most MaxRetryTime; every POST carries an Idempotency-Key
// (generated unless the call gives one in its context, WithIdempotencyKey),
// so a retried POST is executed once. Other 4xx answers are never retried.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd/client/internal/wire"
)

// Client calls one payd deployment as one merchant. It is safe for
// concurrent use.
type Client struct {
	BaseURL      string // e.g. https://pay.example.com or http://127.0.0.1:8080
	ClientID     string
	ClientSecret string
	HTTP         *http.Client
	MaxRetryTime time.Duration // default 30 s
	// RenewBefore: a token is renewed this long before it expires (default 30 s).
	RenewBefore time.Duration

	mu       sync.Mutex // guards token; held during a fetch, so one fetch runs at a time
	token    string
	tokenExp time.Time
}

// New returns a client with the defaults.
func New(baseURL, clientID, clientSecret string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), ClientID: clientID, ClientSecret: clientSecret,
		HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Error is an answer of payd other than 200: its HTTP status and the first
// error of the envelope (all of them in Errors).
type Error struct {
	Status  int
	Code    string            // errorCode, e.g. "12000"
	Message string            // errorMessage
	Args    map[string]string // errorArgs
	Errors  []ErrorItem
}

func (e *Error) Error() string { return fmt.Sprintf("payd: %d %s: %s", e.Status, e.Code, e.Message) }

type idemKey struct{}

// WithIdempotencyKey makes the POST made with ctx carry key instead of a
// generated one (use the same key to retry a call yourself).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKey{}, key)
}

func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// accessToken returns a token valid for at least RenewBefore, fetching one
// when needed; concurrent callers wait for the one fetch.
func (c *Client) accessToken(ctx context.Context, forceNew bool) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	renew := c.RenewBefore
	if renew == 0 {
		renew = 30 * time.Second
	}
	if !forceNew && c.token != "" && time.Until(c.tokenExp) > renew {
		return c.token, nil
	}
	var res wire.TokenResult
	start := time.Now()
	err := c.do(ctx, http.MethodPost, "/v2/auth/token", "", wire.TokenRequest{ClientID: c.ClientID, ClientSecret: c.ClientSecret}, &res)
	if err != nil {
		return "", err
	}
	c.token, c.tokenExp = res.AccessToken, start.Add(time.Duration(res.ExpiresIn)*time.Second)
	return c.token, nil
}

// call makes an authenticated call; a token refused as expired or revoked
// is fetched again once.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	tok, err := c.accessToken(ctx, false)
	if err != nil {
		return err
	}
	err = c.do(ctx, method, path, tok, body, out)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusUnauthorized && e.Code == "90001" {
		if tok, err = c.accessToken(ctx, true); err != nil {
			return err
		}
		err = c.do(ctx, method, path, tok, body, out)
	}
	return err
}

// do sends one request, retrying what is safe to retry, and decodes the
// envelope's result into out.
func (c *Client) do(ctx context.Context, method, path, token string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	key := ""
	if method == http.MethodPost && path != "/v2/auth/token" {
		if k, ok := ctx.Value(idemKey{}).(string); ok && k != "" {
			key = k
		} else {
			key = newKey()
		}
	}
	maxTime := c.MaxRetryTime
	if maxTime == 0 {
		maxTime = 30 * time.Second
	}
	deadline := time.Now().Add(maxTime)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if payload != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
		if err != nil {
			return err
		}
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := hc.Do(req)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			wait = backoff(attempt)
		} else {
			b, rerr := io.ReadAll(io.LimitReader(res.Body, 16<<20))
			res.Body.Close()
			switch {
			case rerr != nil:
				err, wait = rerr, backoff(attempt)
			case res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable:
				err = decodeError(res.StatusCode, b)
				wait = backoff(attempt)
				if s, perr := strconv.Atoi(res.Header.Get("Retry-After")); perr == nil && s >= 0 {
					wait = time.Duration(s) * time.Second
				}
			case res.StatusCode != http.StatusOK:
				return decodeError(res.StatusCode, b)
			default:
				return decodeResult(b, out)
			}
		}
		if time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// backoff is 100 ms doubling per attempt, at most 5 s.
func backoff(attempt int) time.Duration {
	return time.Duration(math.Min(float64(100*time.Millisecond)*math.Pow(2, float64(attempt)), float64(5*time.Second)))
}

func decodeError(status int, b []byte) error {
	var env wire.Failure
	e := &Error{Status: status}
	if json.Unmarshal(b, &env) == nil && len(env.Errors) > 0 {
		e.Errors = env.Errors
		e.Code, e.Message, e.Args = env.Errors[0].ErrorCode, env.Errors[0].ErrorMessage, env.Errors[0].ErrorArgs
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return e
}

func decodeResult(b []byte, out any) error {
	var env struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("payd: unreadable answer: %w", err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

// ListOptions page a list: Count (1–1000) items from Offset, sorted by
// SortBy in Order ("asc" or "desc"), filtered by Filters (the list's query
// parameters, e.g. {"status": "Active"}).
type ListOptions struct {
	Count, Offset int
	SortBy, Order string
	Filters       map[string]string
}

func (o ListOptions) query(pageParams ...string) string {
	v := url.Values{}
	count, offset := "count", "offset"
	if len(pageParams) == 2 {
		count, offset = pageParams[0], pageParams[1]
	}
	n := o.Count
	if n == 0 {
		n = 100
	}
	v.Set(count, strconv.Itoa(n))
	v.Set(offset, strconv.Itoa(o.Offset))
	if o.SortBy != "" {
		v.Set("sortBy", o.SortBy)
	}
	if o.Order != "" {
		v.Set("order", o.Order)
	}
	for k, val := range o.Filters {
		v.Set(k, val)
	}
	return "?" + v.Encode()
}

// Page is a page of a list.
type Page[T any] struct {
	TotalCount int `json:"totalCount"`
	Items      []T `json:"items"`
}
