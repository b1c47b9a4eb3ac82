package payd

import (
	"regexp"
	"strings"
	"time"
)

// National MIA QR codes (docs/rails.md, "The QR registry"). In production
// a QR's url is a link of the National Bank's registry, which a payer's
// bank app resolves to the code's terms and pays by a pacs.008 naming the
// reference the registry gave. payd mints the link from the QR's own id,
// so a create answers with it at once, and tells the registry every change
// of what a payer's bank reads (RegistryOrder), through the connector, as
// its other rails messages.

// MIALinkBase starts every MIA QR link: version 1 of the registry's links.
const MIALinkBase = "https://mia-qr.bnm.md/1/"

// MIALinkPattern is what a link is: a payment context (m mobile, e
// e-commerce, i invoice, 0 other), the registry, the PSP's three-letter
// code and the code's 32 hex digits.
var MIALinkPattern = regexp.MustCompile(`^https://mia-qr\.bnm\.md/1/([mei0])/BNM/([A-Z]{3})([0-9a-f]{32})$`)

// PSPCodePattern is what a PSP's code is.
var PSPCodePattern = regexp.MustCompile(`^[A-Z]{3}$`)

// Payment contexts of a MIA QR.
const (
	ContextMobile    = "m"
	ContextECommerce = "e"
	ContextInvoice   = "i"
	ContextOther     = "0"
)

// PmtContext is the QR's payment context: e-commerce for a checkout's
// QR, mobile for any other.
func (q *QR) PmtContext() string {
	if q.CheckoutID != "" {
		return ContextECommerce
	}
	return ContextMobile
}

// MIALink is the QR's national link under the PSP's code psp.
func MIALink(psp string, q *QR) string {
	return MIALinkBase + q.PmtContext() + "/BNM/" + psp + strings.ReplaceAll(q.ID, "-", "")
}

// QRURL is a QR's url: its national link when the deployment has a
// registry (psp, its PSP code), else payd's own page of it (the sandbox).
func QRURL(publicURL, psp string, q *QR) string {
	if psp != "" {
		return MIALink(psp, q)
	}
	return publicURL + "/qr/" + q.ID
}

// ParseMIALink reads a link's context, PSP code and the id it carries
// (hyphenated, as payd's ids are).
func ParseMIALink(link string) (context, psp, id string, ok bool) {
	m := MIALinkPattern.FindStringSubmatch(link)
	if m == nil {
		return "", "", "", false
	}
	h := m[3]
	return m[1], m[2], h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// QRRegistration is what the registry keeps of a code: what a payer's
// bank reads when it resolves the link. Revision orders the registrations
// of one code: the registry keeps the highest it was given.
type QRRegistration struct {
	QRID            string          `json:"qrId"`
	Link            string          `json:"link"`
	Revision        int64           `json:"revision"`
	QRType          QRType          `json:"qrType"`
	AmountType      AmountType      `json:"amountType"`
	PmtContext      string          `json:"pmtContext"`
	Status          QRStatus        `json:"status"`
	Currency        string          `json:"currency"`
	CreditorAccount CreditorAccount `json:"creditorAccount"`
	DBA             string          `json:"dba"` // the merchant's trading name
	// Extension is the terms a payer pays now: a Hybrid's current
	// extension (nil while it has none), else the code's own.
	Extension *RegistryTerms `json:"extension"`
}

// CreditorAccount is the account a code's payments go to.
type CreditorAccount struct {
	IBAN string `json:"iban"`
}

// RegistryTerms are a code's payable terms.
type RegistryTerms struct {
	ExtensionID string          `json:"extensionId,omitempty"` // a Hybrid's extension
	Status      ExtensionStatus `json:"status"`
	Amount      *Money          `json:"amount"`
	AmountMin   *Money          `json:"amountMin"`
	AmountMax   *Money          `json:"amountMax"`
	// RemittanceInfo4Payer is the text the payer's app shows.
	RemittanceInfo4Payer string `json:"remittanceInfo4Payer"`
	// CreditorRef is what the payer's bank names as the pacs.008's
	// EndToEndId (32 hex digits): the extension's id, else the code's.
	CreditorRef string `json:"creditorRef"`
	// ValidUntil is the terms' deadline (a Dynamic code's, a Hybrid's
	// extension's); null when they have none.
	ValidUntil *time.Time `json:"validUntil"`
}

// RegistrationOf is what the registry must know of q, the merchant m's,
// under the PSP's code psp (the revision is the store's to set).
func RegistrationOf(psp string, m *Merchant, q *QR) QRRegistration {
	r := QRRegistration{QRID: q.ID, Link: MIALink(psp, q), QRType: q.Type, AmountType: q.AmountType, PmtContext: q.PmtContext(),
		Status: q.Status, Currency: q.Currency, CreditorAccount: CreditorAccount{IBAN: NormalizeIBAN(m.IBAN)}, DBA: m.Name}
	if q.Type == QRHybrid && q.ExtensionID == "" {
		return r
	}
	t := &RegistryTerms{Amount: q.Amounts.Amount, AmountMin: q.Amounts.Min, AmountMax: q.Amounts.Max, RemittanceInfo4Payer: q.Description,
		CreditorRef: strings.ReplaceAll(q.ID, "-", ""), Status: ExtActive}
	if q.Type == QRHybrid {
		t.ExtensionID, t.Status, t.CreditorRef = q.ExtensionID, q.ExtStatus, strings.ReplaceAll(q.ExtensionID, "-", "")
	}
	if !q.ExpiresAt.IsZero() {
		at := q.ExpiresAt.UTC()
		t.ValidUntil = &at
	}
	r.Extension = t
	return r
}

// Same reports whether two registrations say the same to a payer's bank
// (whatever their revisions).
func (r QRRegistration) Same(o QRRegistration) bool {
	r.Revision, o.Revision = 0, 0
	if (r.Extension == nil) != (o.Extension == nil) {
		return false
	}
	if r.Extension != nil {
		a, b := *r.Extension, *o.Extension
		if !sameMoney(a.Amount, b.Amount) || !sameMoney(a.AmountMin, b.AmountMin) || !sameMoney(a.AmountMax, b.AmountMax) ||
			(a.ValidUntil == nil) != (b.ValidUntil == nil) || a.ValidUntil != nil && !a.ValidUntil.Equal(*b.ValidUntil) {
			return false
		}
		a.Amount, a.AmountMin, a.AmountMax, a.ValidUntil = nil, nil, nil, nil
		b.Amount, b.AmountMin, b.AmountMax, b.ValidUntil = nil, nil, nil, nil
		if a != b {
			return false
		}
	}
	r.Extension, o.Extension = nil, nil
	return r == o
}

func sameMoney(a, b *Money) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// OrderRegisterQR tells the QR registry a code's terms (a create, or any
// change a payer's bank reads).
const OrderRegisterQR OrderKind = "qr.register"

// RegistryOrder is the order that gives the registry r.
func RegistryOrder(m *Merchant, r QRRegistration, now time.Time) *RailsOrder {
	return newOrder(OrderRegisterQR, m.ID, r.QRID, now, OrderData{QR: &r})
}
