package payd

import (
	"math/big"
	"net/mail"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CheckoutStatus is where a hosted checkout session is (spec §4.6).
type CheckoutStatus string

const (
	// CheckoutWaiting: registered; the payer has not opened the page.
	// Leaves when the page is opened, a method is posted, at expiry
	// (Abandoned) or by cancel.
	CheckoutWaiting CheckoutStatus = "WaitingForInit"
	// CheckoutInitialized: the payer opened the page.
	CheckoutInitialized CheckoutStatus = "Initialized"
	// CheckoutMethodSelected: the payer picked a method (and may switch).
	CheckoutMethodSelected CheckoutStatus = "PaymentMethodSelected"
	// CheckoutCompleted: paid. Terminal.
	CheckoutCompleted CheckoutStatus = "Completed"
	// CheckoutExpired: expiresAt passed after the page was opened. Terminal.
	CheckoutExpired CheckoutStatus = "Expired"
	// CheckoutAbandoned: expiresAt passed and the page was never opened. Terminal.
	CheckoutAbandoned CheckoutStatus = "Abandoned"
	// CheckoutCancelled: cancelled by the merchant. Terminal.
	CheckoutCancelled CheckoutStatus = "Cancelled"
	// CheckoutFailed: the card was declined. Terminal.
	CheckoutFailed CheckoutStatus = "Failed"
)

// CheckoutStatuses are every status, for filters.
var CheckoutStatuses = []CheckoutStatus{CheckoutWaiting, CheckoutInitialized, CheckoutMethodSelected, CheckoutCompleted,
	CheckoutExpired, CheckoutAbandoned, CheckoutCancelled, CheckoutFailed}

// Terminal reports whether nothing more can happen to the checkout.
func (s CheckoutStatus) Terminal() bool {
	switch s {
	case CheckoutCompleted, CheckoutExpired, CheckoutAbandoned, CheckoutCancelled, CheckoutFailed:
		return true
	}
	return false
}

// Payment methods of a checkout.
const (
	MethodMiaQr = "MiaQr"
	MethodCard  = "Card"
)

// Defaults of the checkout area (spec §0.2).
const (
	DefaultCheckoutLifetime = 25 * time.Minute
	MaxOrderItems           = 100
)

// Quantity is an item quantity in thousandths (at most 3 decimals).
type Quantity int64

// Times is the line total of unit price m at this quantity, rounded half
// up to the minor unit (quantities have three decimals).
func (q Quantity) Times(m Money) Money {
	p := new(big.Int).Mul(big.NewInt(int64(m)), big.NewInt(int64(q)))
	p.Add(p, big.NewInt(500))
	p.Quo(p, big.NewInt(1000))
	return Money(p.Int64())
}

// String renders the quantity as its shortest decimal: 1, 2.5, 0.125.
func (q Quantity) String() string {
	s := strconv.FormatInt(int64(q)/1000, 10)
	if f := int64(q) % 1000; f != 0 {
		fs := strings.TrimRight(strconv.FormatInt(1000+f, 10)[1:], "0")
		s += "." + fs
	}
	return s
}

// ParseQuantity reads a quantity with at most 3 decimals.
func ParseQuantity(s string) (Quantity, error) {
	// Reuse the money parser on a value scaled by 10: 3 decimals → 2.
	m, err := ParseMoney(shiftDecimal(s))
	return Quantity(m), err
}

// shiftDecimal multiplies a decimal text by 10 by moving its point.
func shiftDecimal(s string) string {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil {
			return s
		}
		return s[:i] + "e" + strconv.Itoa(e+1)
	}
	return s + "e1"
}

// Order is the order summary of a checkout; every field may be absent.
type Order struct {
	ID               string
	Description      string
	Date             time.Time
	Amount           *Money
	Currency         string
	DeliveryAmount   *Money
	DeliveryCurrency string
	Items            []OrderItem
}

// OrderItem is one line of an order.
type OrderItem struct {
	ExternalID   string
	Title        string
	Amount       *Money
	Currency     string
	Quantity     *Quantity
	DisplayOrder *int
}

// Payer is what the merchant knows of the payer; every field may be absent.
type Payer struct {
	Name, Email, Phone, IP, UserAgent string
}

// Checkout is a hosted checkout session.
type Checkout struct {
	ID          string
	MerchantID  string
	Status      CheckoutStatus
	Amount      Money
	Currency    string
	CallbackURL string
	SuccessURL  string
	FailURL     string
	Language    string
	Order       *Order // nil without orderInfo
	Payer       *Payer // nil without payerInfo
	Method      string // the selected payment method
	QRID        string // the checkout's QR, once MiaQr was selected
	PaymentID   string // the payment attempt that ended it
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time
	CompletedAt time.Time
	FailedAt    time.Time
	CancelledAt time.Time
}

// CheckoutInput is a registration request after decoding; Errs carries
// the decoder's format errors so Validate can report everything at once.
type CheckoutInput struct {
	Amount      *Money
	Currency    string
	Language    string
	CallbackURL string
	SuccessURL  string
	FailURL     string
	Order       *Order
	Payer       *Payer
}

var (
	phoneRE      = regexp.MustCompile(`^\+?\d{8,15}$`)
	itemCurrency = map[string]bool{"MDL": true, "EUR": true, "USD": true}
)

func checkoutFormat(p string) *Error  { return E(CodeCheckoutFormat, "parameter", p) }
func checkoutMissing(p string) *Error { return E(CodeCheckoutMissing, "parameter", p) }

func checkoutText(errs *Errors, name, s string, max int) {
	if TextLen(s) > max {
		*errs = append(*errs, checkoutFormat(name))
	}
}

// Validate checks a registration against the rules of spec §4.2, with the
// checkout area's codes. currencies are the accepted checkout currencies.
func (in *CheckoutInput) Validate(currencies []string, urls URLRules) error {
	var errs Errors
	switch {
	case in.Amount == nil:
		errs = append(errs, checkoutMissing("amount"))
	case *in.Amount <= 0 || *in.Amount > MaxAmount:
		errs = append(errs, E(CodeCheckoutAmount))
	}
	switch {
	case in.Currency == "":
		errs = append(errs, checkoutMissing("currency"))
	case !containsStr(currencies, in.Currency):
		errs = append(errs, E(CodeCheckoutCurrency, "value", in.Currency))
	}
	switch l := strings.ToLower(in.Language); l {
	case "":
		in.Language = "ro"
	case "ro", "ru", "en":
		in.Language = l
	default:
		errs = append(errs, E(CodeCheckoutLanguage, "value", in.Language))
	}
	for name, u := range map[string]string{"callbackUrl": in.CallbackURL, "successUrl": in.SuccessURL, "failUrl": in.FailURL} {
		if u != "" && urls.Check(u) != "" {
			errs = append(errs, checkoutFormat(name))
		}
	}
	if o := in.Order; o != nil {
		checkoutText(&errs, "orderInfo.id", o.ID, 100)
		checkoutText(&errs, "orderInfo.description", o.Description, MaxDescription)
		nonNegative(&errs, "orderInfo.orderAmount", o.Amount)
		nonNegative(&errs, "orderInfo.deliveryAmount", o.DeliveryAmount)
		anyCurrency(&errs, o.Currency)
		anyCurrency(&errs, o.DeliveryCurrency)
		if len(o.Items) > MaxOrderItems {
			errs = append(errs, checkoutFormat("orderInfo.items"))
		}
		for i, it := range o.Items {
			p := "orderInfo.items[" + strconv.Itoa(i) + "]."
			checkoutText(&errs, p+"externalId", it.ExternalID, 100)
			checkoutText(&errs, p+"title", it.Title, 125)
			nonNegative(&errs, p+"amount", it.Amount)
			anyCurrency(&errs, it.Currency)
			if it.Quantity != nil && *it.Quantity <= 0 {
				errs = append(errs, E(CodeCheckoutQuantity))
			}
			if it.DisplayOrder != nil && *it.DisplayOrder < 0 {
				errs = append(errs, checkoutFormat(p+"displayOrder"))
			}
		}
	}
	if p := in.Payer; p != nil {
		checkoutText(&errs, "payerInfo.name", p.Name, MaxPayerName)
		checkoutText(&errs, "payerInfo.userAgent", p.UserAgent, 1000)
		if p.Email != "" {
			if a, err := mail.ParseAddress(p.Email); err != nil || a.Address != p.Email || TextLen(p.Email) > 254 {
				errs = append(errs, checkoutFormat("payerInfo.email"))
			}
		}
		if p.Phone != "" && !phoneRE.MatchString(p.Phone) {
			errs = append(errs, checkoutFormat("payerInfo.phone"))
		}
		if p.IP != "" {
			if _, err := netip.ParseAddr(p.IP); err != nil {
				errs = append(errs, checkoutFormat("payerInfo.ip"))
			}
		}
	}
	return errs.Err()
}

func containsStr(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func nonNegative(errs *Errors, name string, m *Money) {
	if m != nil && *m < 0 {
		*errs = append(*errs, E(CodeCheckoutNegative, "parameter", name))
	}
}

func anyCurrency(errs *Errors, c string) {
	if c != "" && !itemCurrency[c] {
		*errs = append(*errs, E(CodeCheckoutCurrency, "value", c))
	}
}

// NewCheckout registers a valid input.
func NewCheckout(in CheckoutInput, merchantID string, lifetime time.Duration, now time.Time) *Checkout {
	return &Checkout{
		ID: NewID(now), MerchantID: merchantID, Status: CheckoutWaiting, Amount: *in.Amount, Currency: in.Currency,
		CallbackURL: in.CallbackURL, SuccessURL: in.SuccessURL, FailURL: in.FailURL, Language: in.Language,
		Order: in.Order, Payer: in.Payer, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(lifetime),
	}
}

// Observe applies expiry: Abandoned if the page was never opened, else
// Expired, dated at expiresAt.
func (c *Checkout) Observe(now time.Time) bool {
	if c.Status.Terminal() || now.Before(c.ExpiresAt) {
		return false
	}
	if c.Status == CheckoutWaiting {
		c.Status = CheckoutAbandoned
	} else {
		c.Status = CheckoutExpired
	}
	c.UpdatedAt = c.ExpiresAt
	return true
}

func (c *Checkout) stateError() error { return E(CodeCheckoutState, "status", string(c.Status)) }

// Open records that the payer opened the page.
func (c *Checkout) Open(now time.Time) bool {
	c.Observe(now)
	if c.Status != CheckoutWaiting {
		return false
	}
	c.Status, c.UpdatedAt = CheckoutInitialized, now
	return true
}

// OffersQR reports whether MiaQr is offered (MDL checkouts only).
func (c *Checkout) OffersQR() bool { return c.Currency == "MDL" }

// SelectMethod records the payer's choice of method; switching is allowed.
// Card is offered only when a card acquirer is configured (cards); a
// deactivated merchant's checkout (active false) offers nothing. It
// reports whether the checkout's QR must be created.
func (c *Checkout) SelectMethod(now time.Time, method string, cards, active bool) (needQR bool, err error) {
	c.Observe(now)
	if c.Status.Terminal() || !active {
		return false, c.stateError()
	}
	switch method {
	case MethodCard:
		if !cards {
			return false, checkoutFormat("method")
		}
	case MethodMiaQr:
		if !c.OffersQR() {
			return false, checkoutFormat("method")
		}
		needQR = c.QRID == ""
	default:
		return false, checkoutFormat("method")
	}
	c.Status, c.Method, c.UpdatedAt = CheckoutMethodSelected, method, now
	return needQR, nil
}

// QRInput is the checkout's QR (spec §4.7): Dynamic, Fixed, for the
// checkout's amount, expiring with the checkout, returning to its page.
func (c *Checkout) QR(pageURL string, now time.Time) *QR {
	desc := "Checkout " + c.ID
	order := ""
	if c.Order != nil {
		order = c.Order.ID
		if c.Order.Description != "" {
			desc = c.Order.Description
		}
	}
	amount := c.Amount
	return &QR{
		ID: NewID(now), MerchantID: c.MerchantID, Type: QRDynamic, AmountType: AmountFixed, Currency: "MDL",
		Status: QRActive, Amounts: Amounts{Amount: &amount}, Description: desc, OrderID: order, RedirectURL: pageURL,
		ExpiresAt: c.ExpiresAt, IdleFrom: now, CheckoutID: c.ID, CreatedAt: now, UpdatedAt: now,
	}
}

// Complete ends the checkout with an approved payment.
func (c *Checkout) Complete(now time.Time, paymentID string) error {
	c.Observe(now)
	if c.Status != CheckoutMethodSelected {
		return c.stateError()
	}
	c.Status, c.PaymentID, c.CompletedAt, c.UpdatedAt = CheckoutCompleted, paymentID, now, now
	return nil
}

// Fail ends the checkout with a declined payment.
func (c *Checkout) Fail(now time.Time, paymentID string) error {
	c.Observe(now)
	if c.Status != CheckoutMethodSelected {
		return c.stateError()
	}
	c.Status, c.PaymentID, c.FailedAt, c.UpdatedAt = CheckoutFailed, paymentID, now, now
	return nil
}

// Cancel is the merchant's cancel, allowed from any non-terminal status.
func (c *Checkout) Cancel(now time.Time) error {
	c.Observe(now)
	if c.Status.Terminal() {
		return c.stateError()
	}
	c.Status, c.CancelledAt, c.UpdatedAt = CheckoutCancelled, now, now
	return nil
}

// OrderID is the order's id, or "".
func (c *Checkout) OrderID() string {
	if c.Order == nil {
		return ""
	}
	return c.Order.ID
}

// Card is card data as entered on the page. The full number lives only in
// memory for the request; Mask is what may be kept.
type Card struct {
	Number, Expiry, CVV, Holder string
}

// Sandbox cards (spec §7.2).
const (
	ApprovedCard       = "5102180060101124"
	ApprovedCardExpiry = "06/28"
	ApprovedCardCVV    = "760"
)

var (
	expiryRE = regexp.MustCompile(`^(0[1-9]|1[0-2])/\d{2}$`)
	cvvRE    = regexp.MustCompile(`^\d{3}$`)
)

// Check reports the first malformed field of the card, or "".
func (c Card) Check() string {
	n := c.Number
	if len(n) < 12 || len(n) > 19 || !allDigits(n) || !luhn(n) {
		return "cardNumber"
	}
	if !expiryRE.MatchString(c.Expiry) {
		return "expiry"
	}
	if !cvvRE.MatchString(c.CVV) {
		return "cvv"
	}
	return ""
}

func luhn(n string) bool {
	sum, double := 0, false
	for i := len(n) - 1; i >= 0; i-- {
		d := int(n[i] - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// Approved reports whether the sandbox's acquirer approves the (well-formed) card.
func (c Card) Approved() bool {
	return c.Number == ApprovedCard && c.Expiry == ApprovedCardExpiry && c.CVV == ApprovedCardCVV
}

// Mask is the first 6 and last 4 digits around ******.
func (c Card) Mask() string { return c.Number[:6] + "******" + c.Number[len(c.Number)-4:] }

// CheckoutCallbackFields is the flat checkout.completed / checkout.failed
// body (spec §6.6), every key present.
func CheckoutCallbackFields(c *Checkout, p *Payment) Fields {
	var payer Payer
	if c.Payer != nil {
		payer = *c.Payer
	}
	var order Order
	if c.Order != nil {
		order = *c.Order
	}
	completed := Str("completedAt", "")
	if c.Status == CheckoutCompleted {
		completed = Str("completedAt", FormatTime(c.CompletedAt))
	}
	delivery := Field{Name: "orderDeliveryAmount", Amount: true, Null: true}
	if order.DeliveryAmount != nil {
		delivery = Amt("orderDeliveryAmount", *order.DeliveryAmount)
	}
	status, procStatus, procCode := PaymentExecuted, "OK", "00"
	if p.Failed {
		status, procStatus, procCode = PaymentFailed, "DECLINED", "05"
	}
	cardMask, threeDS := Str("senderCardNumber", ""), Str("threeDsResult", "")
	if p.Kind == PaymentCard {
		cardMask, threeDS = Str("senderCardNumber", p.CardMask), Str("threeDsResult", "Y")
	}
	return Fields{
		Str("checkoutId", c.ID), Str("terminalId", ""), Amt("amount", c.Amount), Str("currency", c.Currency), completed,
		Str("payerName", payer.Name), Str("payerEmail", payer.Email), Str("payerPhone", payer.Phone), Str("payerIp", payer.IP),
		Str("orderId", order.ID), Str("orderDescription", order.Description), delivery, Str("orderDeliveryCurrency", order.DeliveryCurrency),
		Str("paymentId", p.ID), Amt("paymentAmount", p.Amount), Str("paymentCurrency", p.Currency), Str("paymentStatus", status),
		Str("paymentExecutedAt", FormatTime(p.ExecutedAt)), Str("senderIban", p.SenderIBAN), Str("senderName", p.SenderName),
		cardMask, Str("retrievalReferenceNumber", p.ReferenceNumber), Str("processingStatus", procStatus),
		Str("processingStatusCode", procCode), Str("approvalCode", p.ApprovalCode), threeDS, Str("threeDsReason", ""),
		Str("paymentMethod", p.Method()),
	}
}
