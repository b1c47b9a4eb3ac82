package payd

import (
	"strings"
	"time"
)

// QRType is Static, Dynamic or Hybrid (spec §2.2).
type QRType string

const (
	QRStatic  QRType = "Static"  // paid any number of times; no expiry
	QRDynamic QRType = "Dynamic" // paid once, before expiresAt
	QRHybrid  QRType = "Hybrid"  // paid any number of times while it has an active extension
)

// AmountType says how much the payer may pay (spec §2.3).
type AmountType string

const (
	AmountFixed      AmountType = "Fixed"
	AmountControlled AmountType = "Controlled"
	AmountFree       AmountType = "Free"
)

// QRStatus is where a QR is in its life (spec §2.11).
type QRStatus string

const (
	// QRActive: live. Left by payment (Dynamic → Paid), expiry, idleness or cancel.
	QRActive QRStatus = "Active"
	// QRInactive: Static or Hybrid idle for the inactivity period. Final.
	QRInactive QRStatus = "Inactive"
	// QRExpired: Dynamic past expiresAt (final), or Hybrid whose extension
	// expired (a new extension makes it Active again).
	QRExpired QRStatus = "Expired"
	// QRPaid: a Dynamic QR after its payment. Final.
	QRPaid QRStatus = "Paid"
	// QRCancelled: cancelled by the merchant. Final.
	QRCancelled QRStatus = "Cancelled"
)

// ExtensionStatus is where a hybrid QR's extension is (spec §2.10).
type ExtensionStatus string

const (
	ExtActive    ExtensionStatus = "Active"    // the QR's payable terms
	ExtReplaced  ExtensionStatus = "Replaced"  // a newer extension took over. Final.
	ExtCancelled ExtensionStatus = "Cancelled" // cancelled itself or with its QR. Final.
	ExtExpired   ExtensionStatus = "Expired"   // its expiresAt passed, or its QR went Inactive. Final.
)

// DefaultQRInactivity is how long a Static or Hybrid QR may go unpaid.
const DefaultQRInactivity = 30 * 24 * time.Hour

// Amounts are a QR's or extension's amount terms; nil means absent.
type Amounts struct {
	Amount, Min, Max *Money
}

// QR is a QR code. For a Hybrid QR, the amount terms, texts, URLs and
// expiry mirror its current extension.
type QR struct {
	ID           string
	MerchantID   string
	Type         QRType
	AmountType   AmountType
	Currency     string
	TerminalID   string
	Status       QRStatus
	ExtensionID  string // Hybrid: the current extension ("" when none)
	ExtStatus    ExtensionStatus
	Amounts      Amounts
	Description  string
	OrderID      string
	CallbackURL  string
	RedirectURL  string
	ExpiresAt    time.Time // Dynamic: its own; Hybrid: the current extension's
	IdleFrom     time.Time // creation or the last payment
	CheckoutID   string    // the checkout this QR pays, if any
	CancelReason string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Extension is a hybrid QR's payable terms for a period.
type Extension struct {
	ID          string
	QRID        string
	MerchantID  string
	Status      ExtensionStatus
	Amounts     Amounts
	Description string
	OrderID     string
	CallbackURL string
	RedirectURL string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time
}

// QRInput is a QR creation request after decoding (POST …/qr and
// POST …/qr/hybrid), and ExtensionInput an extension's.
type QRInput struct {
	Type       string
	AmountType string
	Currency   string
	TerminalID string
	Ext        ExtensionInput // Static/Dynamic: the QR's own terms
	HasExt     bool           // hybrid: an extension was given
}

// ExtensionInput is the payable terms of a request.
type ExtensionInput struct {
	ExpiresAt   *time.Time
	ExpiresRaw  string
	Amounts     Amounts
	Description string
	OrderID     string
	CallbackURL string
	RedirectURL string
}

// ParseAmountType reads an amountType as sent (exact case).
func ParseAmountType(s string) (AmountType, bool) {
	switch AmountType(s) {
	case AmountFixed, AmountControlled, AmountFree:
		return AmountType(s), true
	}
	return "", false
}

// CheckAmounts applies the rules of spec §2.3 for amountType t.
func CheckAmounts(errs *Errors, t AmountType, a Amounts) {
	bound := func(name string, m *Money) {
		if m != nil && (*m <= 0 || *m > MaxAmount) {
			*errs = append(*errs, Invalid(name, "must be greater than 0 and at most 100000"))
		}
	}
	absent := func(name string, m *Money) {
		if m != nil {
			*errs = append(*errs, Invalid(name, "must be absent for amountType "+string(t)))
		}
	}
	switch t {
	case AmountFixed:
		if a.Amount == nil {
			*errs = append(*errs, E(CodeAmountRequired, "amountType", string(t)))
		}
		bound("amount", a.Amount)
		absent("amountMin", a.Min)
		absent("amountMax", a.Max)
	case AmountControlled:
		if a.Amount == nil {
			*errs = append(*errs, E(CodeAmountRequired, "amountType", string(t)))
		}
		if a.Min == nil || a.Max == nil {
			*errs = append(*errs, E(CodeAmountBoundsMissing))
		}
		bound("amount", a.Amount)
		bound("amountMin", a.Min)
		bound("amountMax", a.Max)
		if a.Min != nil && a.Max != nil && *a.Min >= *a.Max && !errs.Has("amountMin") {
			*errs = append(*errs, Invalid("amountMin", "must be less than amountMax"))
		}
		if a.Amount != nil && a.Min != nil && a.Max != nil && (*a.Amount < *a.Min || *a.Amount > *a.Max) && !errs.Has("amount") {
			*errs = append(*errs, Invalid("amount", "must be between amountMin and amountMax"))
		}
	case AmountFree:
		absent("amount", a.Amount)
		absent("amountMin", a.Min)
		absent("amountMax", a.Max)
	}
}

// checkTerms validates the texts and URLs of terms (not amounts or expiry).
func (in ExtensionInput) checkTerms(errs *Errors, urls URLRules, descRequired bool) {
	checkText(errs, "description", in.Description, MaxDescription, descRequired)
	checkText(errs, "orderId", in.OrderID, MaxOrderID, false)
	checkURL(errs, urls, "callbackUrl", in.CallbackURL)
	checkURL(errs, urls, "redirectUrl", in.RedirectURL)
}

func (in ExtensionInput) checkExpiry(errs *Errors, now time.Time) {
	if in.ExpiresAt == nil || !ExpiryInWindow(now, *in.ExpiresAt) {
		*errs = append(*errs, E(CodeExpiresAtWindow, "value", in.ExpiresRaw))
	}
}

// ValidateQR checks a Static or Dynamic creation request.
func (in QRInput) ValidateQR(now time.Time, urls URLRules) error {
	var errs Errors
	qt := QRType(in.Type)
	if qt != QRStatic && qt != QRDynamic {
		errs = append(errs, E(CodeQRType, "value", in.Type))
	}
	at, ok := ParseAmountType(in.AmountType)
	switch {
	case !ok:
		errs = append(errs, Invalid("amountType", "must be Fixed, Controlled or Free"))
	case at == AmountFree && qt == QRDynamic:
		errs = append(errs, Invalid("amountType", "Free is not allowed for a Dynamic QR"))
	default:
		CheckAmounts(&errs, at, in.Ext.Amounts)
	}
	if qt == QRDynamic {
		in.Ext.checkExpiry(&errs, now)
	}
	if in.Currency != "MDL" {
		errs = append(errs, E(CodeQRCurrency, "value", in.Currency))
	}
	in.Ext.checkTerms(&errs, urls, true)
	checkText(&errs, "terminalId", in.TerminalID, MaxTerminalID, false)
	return errs.Err()
}

// ValidateHybrid checks a Hybrid creation request and its extension.
func (in QRInput) ValidateHybrid(now time.Time, urls URLRules) error {
	var errs Errors
	at, ok := ParseAmountType(in.AmountType)
	if !ok {
		errs = append(errs, Invalid("amountType", "must be Fixed, Controlled or Free"))
	}
	if in.Currency != "MDL" {
		errs = append(errs, E(CodeQRCurrency, "value", in.Currency))
	}
	checkText(&errs, "terminalId", in.TerminalID, MaxTerminalID, false)
	if in.HasExt {
		in.Ext.checkExpiry(&errs, now)
		in.Ext.checkTerms(&errs, urls, true)
		if ok {
			CheckAmounts(&errs, at, in.Ext.Amounts)
		}
	}
	return errs.Err()
}

// ValidateFields checks what an extension request can be checked for
// without its QR (spec §2.6 step 1).
func (in ExtensionInput) ValidateFields(now time.Time, urls URLRules) error {
	var errs Errors
	in.checkExpiry(&errs, now)
	in.checkTerms(&errs, urls, true)
	for name, m := range map[string]*Money{"amount": in.Amounts.Amount, "amountMin": in.Amounts.Min, "amountMax": in.Amounts.Max} {
		if m != nil && (*m <= 0 || *m > MaxAmount) {
			errs = append(errs, Invalid(name, "must be greater than 0 and at most 100000"))
		}
	}
	return errs.Err()
}

// NewQR builds a Static or Dynamic QR, or a Hybrid one with its optional
// first extension, from a valid input.
func NewQR(in QRInput, merchantID string, now time.Time) (*QR, *Extension) {
	q := &QR{
		ID: NewID(now), MerchantID: merchantID, Type: QRType(in.Type), AmountType: AmountType(in.AmountType),
		Currency: in.Currency, TerminalID: in.TerminalID, Status: QRActive, IdleFrom: now, CreatedAt: now, UpdatedAt: now,
	}
	if q.Type == "" {
		q.Type = QRHybrid
	}
	if q.Type != QRHybrid {
		q.setTerms(in.Ext)
		if q.Type == QRStatic {
			q.ExpiresAt = time.Time{}
		}
		return q, nil
	}
	if !in.HasExt {
		return q, nil
	}
	ext := NewExtension(q, in.Ext, now)
	q.useExtension(ext)
	return q, ext
}

func (q *QR) setTerms(t ExtensionInput) {
	q.Amounts, q.Description, q.OrderID = t.Amounts, t.Description, t.OrderID
	q.CallbackURL, q.RedirectURL = t.CallbackURL, t.RedirectURL
	if t.ExpiresAt != nil {
		q.ExpiresAt = *t.ExpiresAt
	}
}

// NewExtension builds an Active extension of q.
func NewExtension(q *QR, in ExtensionInput, now time.Time) *Extension {
	return &Extension{
		ID: NewID(now), QRID: q.ID, MerchantID: q.MerchantID, Status: ExtActive, Amounts: in.Amounts,
		Description: in.Description, OrderID: in.OrderID, CallbackURL: in.CallbackURL, RedirectURL: in.RedirectURL,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: *in.ExpiresAt,
	}
}

func (q *QR) useExtension(e *Extension) {
	q.ExtensionID, q.ExtStatus = e.ID, e.Status
	q.Amounts, q.Description, q.OrderID = e.Amounts, e.Description, e.OrderID
	q.CallbackURL, q.RedirectURL, q.ExpiresAt = e.CallbackURL, e.RedirectURL, e.ExpiresAt
}

func (q *QR) clearExtension() {
	q.ExtensionID, q.ExtStatus = "", ""
	q.Amounts, q.Description, q.OrderID = Amounts{}, "", ""
	q.CallbackURL, q.RedirectURL, q.ExpiresAt = "", "", time.Time{}
}

// InactiveAt is when an unpaid Static or Hybrid QR becomes Inactive.
func (q *QR) InactiveAt(inactivity time.Duration) time.Time { return q.IdleFrom.Add(inactivity) }

// Observe applies the passage of time (spec §0.7, §2.11): a Dynamic QR past
// expiresAt is Expired; a Hybrid whose active extension passed its
// expiresAt is Expired with it; a Static or Hybrid idle for the inactivity
// period is Inactive. Each change is dated at its deadline. It reports
// whether anything changed.
func (q *QR) Observe(now time.Time, inactivity time.Duration) bool {
	changed := false
	idle := q.InactiveAt(inactivity)
	switch {
	case q.Type == QRDynamic && q.Status == QRActive && !now.Before(q.ExpiresAt):
		q.Status, q.UpdatedAt, changed = QRExpired, q.ExpiresAt, true
	case q.Type == QRHybrid && q.Status == QRActive && q.ExtStatus == ExtActive && !now.Before(q.ExpiresAt) && q.ExpiresAt.Before(idle):
		q.Status, q.ExtStatus, q.UpdatedAt, changed = QRExpired, ExtExpired, q.ExpiresAt, true
	}
	if q.Type != QRDynamic && (q.Status == QRActive || q.Status == QRExpired) && !now.Before(idle) {
		if q.ExtStatus == ExtActive {
			q.ExtStatus = ExtExpired
		}
		q.Status, q.UpdatedAt, changed = QRInactive, idle, true
	}
	return changed
}

// ObserveExtension applies time to an extension of q (q already observed).
func (e *Extension) Observe(now time.Time, q *QR, inactivity time.Duration) {
	if e.Status != ExtActive {
		return
	}
	idle := q.InactiveAt(inactivity)
	switch {
	case !now.Before(e.ExpiresAt) && e.ExpiresAt.Before(idle):
		e.Status, e.UpdatedAt = ExtExpired, e.ExpiresAt
	case !now.Before(idle) && q.Type == QRHybrid:
		e.Status, e.UpdatedAt = ExtExpired, idle
	}
}

// Payable reports whether q can be paid now (after Observe).
func (q *QR) Payable() bool {
	return q.Status == QRActive && (q.Type != QRHybrid || q.ExtStatus == ExtActive)
}

// CheckPayment applies the amount rule of q's terms to a payment amount.
func (q *QR) CheckPayment(amount Money) error {
	a := q.Amounts
	switch q.AmountType {
	case AmountFixed:
		if a.Amount == nil || amount != *a.Amount {
			return Invalid("amount", "must equal the QR amount")
		}
	case AmountControlled:
		if a.Min == nil || a.Max == nil || amount < *a.Min || amount > *a.Max {
			return Invalid("amount", "must be between amountMin and amountMax")
		}
	default:
		if r := CheckAmount(amount); r != "" {
			return Invalid("amount", r)
		}
	}
	return nil
}

// Pay records a payment at now: a Dynamic QR becomes Paid; every QR's
// inactivity period restarts. The caller checked Payable and the amount.
func (q *QR) Pay(now time.Time) {
	if q.Type == QRDynamic {
		q.Status, q.UpdatedAt = QRPaid, now
	}
	q.IdleFrom = now
}

func (q *QR) stateError() error { return E(CodeQRState) }

// Cancel cancels q (spec §2.7). It returns the extension it cancelled, if any.
func (q *QR) Cancel(now time.Time, reason string) (cancelledExt string, err error) {
	switch {
	case q.Status == QRCancelled:
		return "", E(CodeQRAlreadyCancelled, "qrId", q.ID)
	case q.Status == QRActive, q.Status == QRExpired && q.Type == QRHybrid:
	default:
		return "", q.stateError()
	}
	if q.ExtStatus == ExtActive {
		cancelledExt = q.ExtensionID
		q.ExtStatus = ExtCancelled
	}
	q.Status, q.CancelReason, q.UpdatedAt = QRCancelled, reason, now
	return cancelledExt, nil
}

// Extend checks that q can take a new extension with amounts a (spec §2.6
// steps 3–5) and makes ext its current one. It returns the id of the
// extension ext replaces, if any.
func (q *QR) Extend(now time.Time, in ExtensionInput) (ext *Extension, replaced string, err error) {
	if q.Type != QRHybrid {
		return nil, "", E(CodeQRTypeUnsupported, "type", string(q.Type))
	}
	var errs Errors
	CheckAmounts(&errs, q.AmountType, in.Amounts)
	if len(errs) > 0 {
		return nil, "", errs
	}
	if q.Status != QRActive && q.Status != QRExpired {
		return nil, "", q.stateError()
	}
	if q.ExtStatus == ExtActive {
		replaced = q.ExtensionID
	}
	ext = NewExtension(q, in, now)
	q.useExtension(ext)
	q.Status, q.UpdatedAt = QRActive, now
	return ext, replaced, nil
}

// CancelExtension cancels q's active extension (spec §2.8).
func (q *QR) CancelExtension(now time.Time) (string, error) {
	if q.Type != QRHybrid {
		return "", E(CodeQRTypeUnsupported, "type", string(q.Type))
	}
	if q.ExtStatus != ExtActive || q.Status != QRActive {
		return "", q.stateError()
	}
	id := q.ExtensionID
	q.clearExtension()
	q.UpdatedAt = now
	return id, nil
}

// ParseQRStatus reads a QR status filter value (any case).
func ParseQRStatus(s string) (QRStatus, bool) {
	for _, v := range []QRStatus{QRActive, QRInactive, QRExpired, QRPaid, QRCancelled} {
		if strings.EqualFold(s, string(v)) {
			return v, true
		}
	}
	return "", false
}

// ParseExtensionStatus reads an extension status filter value (any case).
func ParseExtensionStatus(s string) (ExtensionStatus, bool) {
	for _, v := range []ExtensionStatus{ExtActive, ExtReplaced, ExtCancelled, ExtExpired} {
		if strings.EqualFold(s, string(v)) {
			return v, true
		}
	}
	return "", false
}

// QRPaymentFields is the result of the qr.payment.executed callback (§6.2).
func QRPaymentFields(q *QR, p *Payment) Fields {
	fs := Fields{Str("qrId", q.ID)}
	if q.Type == QRHybrid {
		// Only a Hybrid QR's payment has an extension; the key is left out
		// otherwise (typed clients take a string here, not null). A null
		// is not signed, so the signature is the same either way.
		fs = append(fs, Str("extensionId", p.ExtensionID))
	}
	return append(fs, Str("qrStatus", string(q.Status)), Str("payId", p.ID),
		Str("referenceId", p.ReferenceNumber), Str("orderId", p.OrderID), Amt("amount", p.Amount),
		Amt("commission", p.Commission), Str("currency", p.Currency), Str("payerName", p.SenderName),
		Str("payerIban", p.SenderIBAN), Str("executedAt", FormatTime(p.ExecutedAt)), Str("terminalId", p.TerminalID))
}

// PayInput is a test-pay request (or the QR page's pay form) after decoding.
type PayInput struct {
	QRID      string
	Amount    *Money
	IBAN      string
	Currency  string
	PayerName string
}

// Validate checks the fields of a payment simulation (spec §7.1).
func (in PayInput) Validate() error {
	var errs Errors
	if in.QRID == "" {
		errs = append(errs, Invalid("qrId", "must be a GUID"))
	}
	if in.Amount == nil {
		errs = append(errs, Invalid("amount", "is required"))
	}
	switch {
	case in.IBAN == "":
		errs = append(errs, Invalid("iban", "is required"))
	case TextLen(in.IBAN) > MaxIBAN || !ibanRE.MatchString(in.IBAN):
		errs = append(errs, Invalid("iban", `must match ^[A-Z]{2}\d{2}[A-Z0-9]{1,30}$`))
	}
	if in.Currency != "MDL" {
		errs = append(errs, E(CodeQRCurrency, "value", in.Currency))
	}
	checkText(&errs, "payerName", in.PayerName, MaxPayerName, true)
	return errs.Err()
}
