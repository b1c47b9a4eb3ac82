package payd

import (
	"context"
	"time"
)

// Cause says who or what made a state change.
type Cause string

// The causes of state changes.
const (
	CauseAPI      Cause = "api"      // the merchant, through the API or the console
	CausePayer    Cause = "payer"    // the payer, on a hosted page or a simulator
	CauseBank     Cause = "bank"     // the payment network, through the rails
	CauseExpiry   Cause = "expiry"   // a deadline passed on the real clock
	CauseClock    Cause = "clock"    // a deadline passed because a test clock was advanced
	CauseOperator Cause = "operator" // the operator, through the payd command
)

// Object kinds a change is about.
const (
	ObjectRTP       = "rtp"
	ObjectQR        = "qr"
	ObjectExtension = "extension"
	ObjectCheckout  = "checkout"
	ObjectPayment   = "payment"
	ObjectRefund    = "refund"
)

type causeKey struct{}

// WithCause marks the state changes made under ctx as caused by c.
func WithCause(ctx context.Context, c Cause) context.Context {
	return context.WithValue(ctx, causeKey{}, c)
}

// CauseOf is the cause ctx carries; the merchant's API when none.
func CauseOf(ctx context.Context) Cause {
	if c, ok := ctx.Value(causeKey{}).(Cause); ok {
		return c
	}
	return CauseAPI
}

type clientAddrKey struct{}

// WithClientAddr records the address of the client a request came from
// (the payer, behind trusted proxies), for what passes it on (a card
// acquirer asks for the payer's address).
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddrOf is the client's address ctx carries, "" when none.
func ClientAddrOf(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return a
}

// Change is one state change of an object, recorded in the transaction
// that made it.
type Change struct {
	ID         int64
	MerchantID string
	Object     string // ObjectRTP, ObjectQR, …
	ObjectID   string
	From, To   string
	At         time.Time
	Cause      Cause
}
