//go:generate go run ./internal/httpapi/errorsdoc docs/errors.md

package payd

import (
	"errors"
	"sort"
	"strings"
)

// Error is a failure the client is told about: a code from the contract's
// table, its message with the placeholders filled, and the placeholder
// values. Anything that is not an *Error (or Errors) is internal and is
// reported to clients as code 10000 without detail.
type Error struct {
	Code    string
	Message string
	Args    map[string]string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errors is a validation failure: one item per invalid field.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Err returns es as an error, or nil when there is nothing in it.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Has reports whether an item already names the parameter p.
func (es Errors) Has(p string) bool {
	for _, e := range es {
		if e.Args["parameter"] == p {
			return true
		}
	}
	return false
}

// Error codes of the contract (spec/API.md §0.10).
const (
	CodeInternal            = "10000"
	CodeBadCredentials      = "11000"
	CodeInvalidParameter    = "12000"
	CodeInvalidRequest      = "12001"
	CodeQRCurrency          = "12002"
	CodeQRSorting           = "12003"
	CodeQRType              = "12004"
	CodeQRStatus            = "12005"
	CodeExpiresAtWindow     = "12006"
	CodeMissingCredentials  = "12007"
	CodeQRNotFound          = "13000"
	CodeMerchantInactive    = "14000"
	CodePaymentNotFound     = "14003"
	CodeQRAlreadyCancelled  = "14005"
	CodeQRTypeUnsupported   = "14006"
	CodeAmountRequired      = "14007"
	CodeAmountBoundsMissing = "14008"
	CodeNotRefundable       = "14014"
	CodeAlreadyRefunded     = "14015"
	CodeRefundTooLarge      = "14016"
	CodeQRState             = "14019"
	CodeRTPCurrency         = "22000"
	CodeRTPStatusFilter     = "22001"
	CodeRTPSorting          = "22002"
	CodeRTPNotFound         = "23000"
	CodeRTPMerchantInactive = "24000"
	CodeRTPState            = "24005"
	CodeAliasNotEnrolled    = "24006"
	CodePartialRefund       = "34001"
	CodeCheckoutCurrency    = "42000"
	CodeCheckoutAmount      = "42001"
	CodeCheckoutNegative    = "42002"
	CodeCheckoutQuantity    = "42003"
	CodeCheckoutLanguage    = "42004"
	CodeCheckoutFormat      = "42005"
	CodeCheckoutMissing     = "42006"
	CodeCheckoutPaging      = "42007"
	CodeCheckoutNotFound    = "43001"
	CodeCheckoutInactive    = "44000"
	CodeCheckoutState       = "44002"
	CodeNoRoute             = "90000"
	CodeUnauthorized        = "90001"
	CodeSandboxOnly         = "90002"
	CodeBodyTooLarge        = "90003"
	CodeMediaType           = "90004"
	CodeRateLimited         = "90005"
	CodeRefundNotFound      = "90006"
	CodeIdempotencyMismatch = "90007"
	CodeIdempotencyBusy     = "90008"
	CodeUnavailable         = "90009"
	CodeMethodNotAllowed    = "90010"
	CodeCallbackNotFound    = "90011"
)

var templates = map[string]string{
	CodeInternal:            "An internal error occurred.",
	CodeBadCredentials:      "Invalid credentials. Please check 'clientId' and 'clientSecret'.",
	CodeInvalidParameter:    "Parameter '{parameter}' is invalid: {reason}.",
	CodeInvalidRequest:      "Request is invalid: {error}.",
	CodeQRCurrency:          "Currency '{value}' is invalid.",
	CodeQRSorting:           "Sorting options are invalid: {parameter}.",
	CodeQRType:              "QR type '{value}' is invalid.",
	CodeQRStatus:            "QR status '{value}' is invalid.",
	CodeExpiresAtWindow:     "'expiresAt' must be between 1 minute and 60 days from now; got '{value}'.",
	CodeMissingCredentials:  "Please provide 'clientId' and 'clientSecret'.",
	CodeQRNotFound:          "QR '{qrId}' not found.",
	CodeMerchantInactive:    "Merchant is not active.",
	CodePaymentNotFound:     "Payment '{payId}' not found.",
	CodeQRAlreadyCancelled:  "QR '{qrId}' is already cancelled.",
	CodeQRTypeUnsupported:   "QR code type '{type}' does not support this operation.",
	CodeAmountRequired:      "'amount' is required for amountType '{amountType}'.",
	CodeAmountBoundsMissing: "'amountMin' and 'amountMax' are required for amountType 'Controlled'.",
	CodeNotRefundable:       "Payment '{payId}' cannot be refunded.",
	CodeAlreadyRefunded:     "Payment '{payId}' is already refunded.",
	CodeRefundTooLarge:      "Cannot refund {amount}; refundable amount is {refundableAmount}.",
	CodeQRState:             "QR code's state does not allow this operation.",
	CodeRTPCurrency:         "Currency '{value}' is invalid.",
	CodeRTPStatusFilter:     "Status '{value}' is invalid.",
	CodeRTPSorting:          "Sorting options are invalid: {parameter}.",
	CodeRTPNotFound:         "The specified Request to Pay '{rtpId}' does not exist.",
	CodeRTPMerchantInactive: "Merchant is not active.",
	CodeRTPState:            "The current status '{status}' does not permit the operation.",
	CodeAliasNotEnrolled:    "The recipient '{alias}' has not activated instant payments.",
	CodePartialRefund:       "Partial refund is not available: {paymentId}. RTP payments are refunded in full.",
	CodeCheckoutCurrency:    "Currency '{value}' is not supported.",
	CodeCheckoutAmount:      "Amount must be greater than 0 and at most 100000.",
	CodeCheckoutNegative:    "'{parameter}' must be greater than or equal to 0.",
	CodeCheckoutQuantity:    "Quantity must be greater than 0.",
	CodeCheckoutLanguage:    "Language '{value}' is not supported. Supported: RO, RU, EN.",
	CodeCheckoutFormat:      "'{parameter}' has an invalid format.",
	CodeCheckoutMissing:     "Required field '{parameter}' is missing.",
	CodeCheckoutPaging:      "Pagination options are invalid: {parameter}.",
	CodeCheckoutNotFound:    "Checkout '{checkoutId}' does not exist.",
	CodeCheckoutInactive:    "Merchant is not active.",
	CodeCheckoutState:       "Current status '{status}' doesn't permit this operation.",
	CodeNoRoute:             "No route for {method} {path}.",
	CodeUnauthorized:        "Access token is missing, invalid or expired.",
	CodeSandboxOnly:         "This endpoint is available only in the sandbox.",
	CodeBodyTooLarge:        "Request body exceeds {limit} bytes.",
	CodeMediaType:           "Content-Type '{contentType}' is not supported; use application/json.",
	CodeRateLimited:         "Too many requests; retry after {retryAfter} seconds.",
	CodeRefundNotFound:      "Refund '{refundId}' not found.",
	CodeIdempotencyMismatch: "Idempotency key '{key}' was used for a different request.",
	CodeIdempotencyBusy:     "A request with idempotency key '{key}' is in progress.",
	CodeUnavailable:         "Service unavailable.",
	CodeMethodNotAllowed:    "Method {method} is not allowed for {path}.",
	CodeCallbackNotFound:    "Callback '{callbackId}' not found.",
}

// Template is the message template of an error code ("" if unknown):
// {name} stands for the value of errorArgs[name].
func Template(code string) string { return templates[code] }

// Codes lists every error code of the contract, sorted.
func Codes() []string {
	out := make([]string, 0, len(templates))
	for c := range templates {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// E builds the error with the given code; kv are placeholder name/value
// pairs that fill the code's message template and become its Args.
func E(code string, kv ...string) *Error {
	e := &Error{Code: code}
	msg := templates[code]
	if len(kv) > 0 {
		e.Args = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			e.Args[kv[i]] = kv[i+1]
			msg = strings.ReplaceAll(msg, "{"+kv[i]+"}", kv[i+1])
		}
	}
	e.Message = msg
	return e
}

// Invalid is the 12000 error for one parameter.
func Invalid(parameter, reason string) *Error {
	return E(CodeInvalidParameter, "parameter", parameter, "reason", reason)
}

// IsCode reports whether err is (or wraps) a payd error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// ErrNotFound is returned by stores when a row does not exist; the caller
// turns it into the area's not-found code.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by stores when a guarded update lost a race.
var ErrConflict = errors.New("concurrent update")
