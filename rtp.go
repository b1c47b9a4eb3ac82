package payd

import (
	"regexp"
	"strings"
	"time"
)

// RTPStatus is the internal state of a Request to Pay. GET and list show it
// as is; operation responses show the Pending view (OperationStatus).
type RTPStatus string

const (
	// RTPCreated: stored but not delivered to the payer's bank (an
	// unreachable test alias). Leaves by cancel or expiry.
	RTPCreated RTPStatus = "Created"
	// RTPActive: delivered, waiting for the payer. Leaves by accept,
	// reject, cancel or expiry.
	RTPActive RTPStatus = "Active"
	// RTPAccepted: the payer accepted and the payment was executed. Leaves
	// only when its refund is accepted.
	RTPAccepted RTPStatus = "Accepted"
	// RTPRejected: the payer rejected. Final.
	RTPRejected RTPStatus = "Rejected"
	// RTPExpired: expiresAt passed while Created or Active. Final.
	RTPExpired RTPStatus = "Expired"
	// RTPCancelled: cancelled by the merchant. Final; cancelling again is a no-op.
	RTPCancelled RTPStatus = "Cancelled"
	// RTPRefunded: the payment's refund was accepted. Final.
	RTPRefunded RTPStatus = "Refunded"
)

// Open reports whether the RTP still waits for something to happen to it.
func (s RTPStatus) Open() bool { return s == RTPCreated || s == RTPActive }

// OperationStatus is the status as operation responses and callbacks show
// it: Created and Active both read as Pending.
func (s RTPStatus) OperationStatus() string {
	if s.Open() {
		return "Pending"
	}
	return string(s)
}

// ParseRTPStatusFilter reads a list filter value (case-insensitive): the six
// seed values, plus Pending (Created or Active) and Refunded.
func ParseRTPStatusFilter(v string) ([]RTPStatus, bool) {
	switch strings.ToLower(v) {
	case "created":
		return []RTPStatus{RTPCreated}, true
	case "active":
		return []RTPStatus{RTPActive}, true
	case "pending":
		return []RTPStatus{RTPCreated, RTPActive}, true
	case "accepted":
		return []RTPStatus{RTPAccepted}, true
	case "rejected":
		return []RTPStatus{RTPRejected}, true
	case "expired":
		return []RTPStatus{RTPExpired}, true
	case "cancelled":
		return []RTPStatus{RTPCancelled}, true
	case "refunded":
		return []RTPStatus{RTPRefunded}, true
	}
	return nil, false
}

// Sandbox test aliases (spec §7.2).
const (
	AliasNotEnrolled = "37360000001"
	AliasUnreachable = "37360000002"
	AliasAutoAccept  = "37360000003"
	AliasAutoReject  = "37360000004"
	// AutoDecisionDelay is how long after creation the auto aliases decide.
	AutoDecisionDelay = 2 * time.Second
)

// Sandbox payer data (spec §7.1, §7.2).
const (
	TestIBAN     = "MD88AG000000011621810140"
	TestRTPPayer = "TEST RTP PAYER"
	TestQRPayer  = "TEST QR PAYMENT"
)

var (
	aliasRE = regexp.MustCompile(`^373\d{8}$`)
	ibanRE  = regexp.MustCompile(`^[A-Z]{2}\d{2}[A-Z0-9]{1,30}$`)
)

// RTP is a Request to Pay.
type RTP struct {
	ID           string
	MerchantID   string
	Alias        string
	Amount       Money
	Currency     string
	Description  string
	OrderID      string
	TerminalID   string
	CallbackURL  string
	RedirectURL  string
	Status       RTPStatus
	CancelReason string
	PayID        string // the payment, once accepted
	AutoAction   string // "accept" or "reject" for the sandbox auto aliases
	AutoAt       time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	ExpiresAt    time.Time
}

// RTPInput is the body of POST /v2/rtp after decoding. Optional strings are
// "" when absent.
type RTPInput struct {
	Alias       string
	Amount      *Money
	ExpiresAt   *time.Time
	ExpiresRaw  string // the expiresAt text as sent, for the error message
	Currency    string
	Description string
	OrderID     string
	TerminalID  string
	CallbackURL string
	RedirectURL string
}

// CheckAmount returns a reason when a payment amount is outside 0 < a ≤ 100000.
func CheckAmount(a Money) string {
	if a <= 0 || a > MaxAmount {
		return "must be greater than 0 and at most 100000"
	}
	return ""
}

// Validate reports every field problem of the request at once.
func (in RTPInput) Validate(now time.Time, urls URLRules) error {
	var errs Errors
	switch {
	case strings.TrimSpace(in.Alias) == "":
		errs = append(errs, Invalid("alias", "is required"))
	case !aliasRE.MatchString(in.Alias):
		errs = append(errs, Invalid("alias", `must match ^373\d{8}$`))
	}
	if in.Amount == nil {
		errs = append(errs, Invalid("amount", "is required"))
	} else if r := CheckAmount(*in.Amount); r != "" {
		errs = append(errs, Invalid("amount", r))
	}
	if in.ExpiresAt == nil || !ExpiryInWindow(now, *in.ExpiresAt) {
		errs = append(errs, E(CodeExpiresAtWindow, "value", in.ExpiresRaw))
	}
	if in.Currency != "MDL" {
		errs = append(errs, E(CodeRTPCurrency, "value", in.Currency))
	}
	checkText(&errs, "description", in.Description, MaxDescription, true)
	checkText(&errs, "orderId", in.OrderID, MaxOrderID, false)
	checkText(&errs, "terminalId", in.TerminalID, MaxTerminalID, false)
	checkURL(&errs, urls, "callbackUrl", in.CallbackURL)
	checkURL(&errs, urls, "redirectUrl", in.RedirectURL)
	return errs.Err()
}

func checkURL(errs *Errors, urls URLRules, name, u string) {
	if u == "" {
		return
	}
	if r := urls.Check(u); r != "" {
		*errs = append(*errs, Invalid(name, r))
	}
}

// NewRTP creates the RTP a valid input asks for: stored and delivered
// (Active) at one instant. The sandbox's network then treats its test
// aliases specially (package rails/sandbox).
func NewRTP(in RTPInput, merchantID string, now time.Time) (*RTP, error) {
	return &RTP{
		ID: NewID(now), MerchantID: merchantID, Alias: in.Alias,
		Amount: *in.Amount, Currency: in.Currency, Description: in.Description,
		OrderID: in.OrderID, TerminalID: in.TerminalID,
		CallbackURL: in.CallbackURL, RedirectURL: in.RedirectURL,
		Status: RTPActive, CreatedAt: now, UpdatedAt: now, ExpiresAt: *in.ExpiresAt,
	}, nil
}

// Observe applies the passage of time: an open RTP whose deadline has come
// is Expired, as of its deadline. Reads and transitions call it first, so
// expiry never waits for the background loop. It reports whether it changed
// anything.
func (r *RTP) Observe(now time.Time) bool {
	if r.Status.Open() && !now.Before(r.ExpiresAt) {
		r.Status = RTPExpired
		r.UpdatedAt = r.ExpiresAt
		return true
	}
	return false
}

func (r *RTP) stateError() error {
	return E(CodeRTPState, "status", string(r.Status))
}

// Cancel cancels an open RTP. Cancelling a cancelled RTP changes nothing and
// succeeds; any other state refuses.
func (r *RTP) Cancel(now time.Time, reason string) (changed bool, err error) {
	r.Observe(now)
	switch r.Status {
	case RTPCancelled:
		return false, nil
	case RTPCreated, RTPActive:
		r.Status, r.CancelReason, r.UpdatedAt = RTPCancelled, reason, now
		return true, nil
	}
	return false, r.stateError()
}

// Accept records the payer's acceptance; only an Active RTP can be accepted.
// The caller records the payment.
func (r *RTP) Accept(now time.Time, payID string) error {
	r.Observe(now)
	if r.Status != RTPActive {
		return r.stateError()
	}
	r.Status, r.PayID, r.UpdatedAt, r.AutoAction = RTPAccepted, payID, now, ""
	return nil
}

// Reject records the payer's rejection; only an Active RTP can be rejected.
func (r *RTP) Reject(now time.Time) error {
	r.Observe(now)
	if r.Status != RTPActive {
		return r.stateError()
	}
	r.Status, r.UpdatedAt, r.AutoAction = RTPRejected, now, ""
	return nil
}

// Refunded marks an accepted RTP whose payment's refund was accepted.
func (r *RTP) Refunded(now time.Time) {
	if r.Status == RTPAccepted {
		r.Status, r.UpdatedAt = RTPRefunded, now
	}
}

// RTPFilter selects RTPs for the list endpoint.
type RTPFilter struct {
	MerchantID    string
	RTPID         string
	OrderID       string
	Amount        *Money
	Description   string // case-insensitive substring
	Statuses      []RTPStatus
	TerminalID    string
	CreatedFrom   *time.Time
	CreatedTo     *time.Time
	ExpiresFrom   *time.Time
	ExpiresTo     *time.Time
	SortBy        string // a column name of RTPSortFields
	Desc          bool
	Count, Offset int
}

// RTPSortFields maps the list's sortBy values (lower case) to the field
// they sort by. "type" has no RTP field behind it and sorts by createdAt.
var RTPSortFields = map[string]string{
	"orderid": "orderId", "type": "createdAt", "amount": "amount",
	"status": "status", "createdat": "createdAt", "expiresat": "expiresAt",
}
