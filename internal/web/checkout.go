package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"payd"
)

type checkoutView struct {
	C        *payd.Checkout
	Merchant string
	Status   string
	OffersQR bool
	// OffersCard: a card acquirer is configured (the sandbox's test cards,
	// or a production acquirer adapter).
	OffersCard bool
	ShowQR     bool
	ShowCard   bool
	Card       map[string]string
	Refresh    bool
}

func (p *Pages) checkoutURL(id string) string { return p.cfg.PublicURL + "/checkout/" + id }

func (p *Pages) loadCheckout(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, ok := payd.ParseID(r.PathValue("id"))
	if !ok {
		p.notFound(w, r)
	}
	return id, ok
}

// checkoutLang is the checkout's language unless ?lang switches it.
func checkoutLang(r *http.Request, c *payd.Checkout) string {
	if l := strings.ToLower(r.URL.Query().Get("lang")); messages[l] != nil {
		return l
	}
	return c.Language
}

// returnURL is where the browser goes after Completed or Failed: the
// merchant's URL with checkoutId, checkoutStatus and orderId appended.
func returnURL(c *payd.Checkout) string {
	base := c.SuccessURL
	if c.Status == payd.CheckoutFailed {
		base = c.FailURL
	}
	if base == "" || (c.Status != payd.CheckoutCompleted && c.Status != payd.CheckoutFailed) {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("checkoutId", c.ID)
	q.Set("checkoutStatus", string(c.Status))
	if id := c.OrderID(); id != "" {
		q.Set("orderId", id)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// checkoutPage is GET /checkout/{id}: opening it initializes the checkout.
func (p *Pages) checkoutPage(w http.ResponseWriter, r *http.Request) {
	id, ok := p.loadCheckout(w, r)
	if !ok {
		return
	}
	c, err := p.store.OpenCheckout(r.Context(), id, p.checkoutTime(r.Context(), id))
	if err != nil {
		if !errors.Is(err, payd.ErrNotFound) {
			p.failed(w, "checkout page", err)
			return
		}
		p.notFound(w, r)
		return
	}
	if u := returnURL(c); u != "" {
		http.Redirect(w, r, u, http.StatusSeeOther)
		return
	}
	p.renderCheckout(w, r, http.StatusOK, c, "", nil)
}

func (p *Pages) renderCheckout(w http.ResponseWriter, r *http.Request, status int, c *payd.Checkout, errMsg string, card map[string]string) {
	lang := checkoutLang(r, c)
	m, err := p.store.Merchant(r.Context(), c.MerchantID)
	if err != nil {
		p.notFound(w, r)
		return
	}
	live := !c.Status.Terminal()
	v := checkoutView{
		C: c, Merchant: m.Name, Status: messages[lang]["checkout."+string(c.Status)], OffersQR: m.Active && c.OffersQR(), OffersCard: m.Active && p.cards != nil,
		ShowQR: live && m.Active && c.Method == payd.MethodMiaQr, ShowCard: live && m.Active && c.Method == payd.MethodCard, Card: card,
	}
	v.Refresh = v.ShowQR
	if v.Card == nil {
		v.Card = map[string]string{}
	}
	pg := page{Lang: lang, T: messages[lang], Langs: languages, CSRF: csrfToken(w, r), Sandbox: p.cfg.Sandbox, Error: errMsg, Data: v}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := p.tmpl.ExecuteTemplate(w, "checkout.html", pg); err != nil {
		p.log.Error("render checkout", "err", err)
	}
}

// checkoutMethod is POST /checkout/{id}/method.
func (p *Pages) checkoutMethod(w http.ResponseWriter, r *http.Request) {
	id, ok := p.loadCheckout(w, r)
	if !ok {
		return
	}
	if err := checkForm(r); err != nil {
		p.plain(w, http.StatusForbidden, "Forbidden.")
		return
	}
	now := p.checkoutTime(r.Context(), id)
	c, err := p.store.SelectCheckoutMethod(r.Context(), id, r.PostForm.Get("method"), p.cards != nil, p.checkoutURL(id), now)
	if err != nil {
		p.checkoutError(w, r, id, err)
		return
	}
	http.Redirect(w, r, "/checkout/"+c.ID+langQuery(r), http.StatusSeeOther)
}

func langQuery(r *http.Request) string {
	if l := r.URL.Query().Get("lang"); messages[l] != nil {
		return "?lang=" + l
	}
	return ""
}

// checkoutError shows the page again with the status an error calls for.
func (p *Pages) checkoutError(w http.ResponseWriter, r *http.Request, id string, err error) {
	c, lerr := p.store.Checkout(r.Context(), "", id, p.checkoutTime(r.Context(), id))
	if lerr != nil {
		p.notFound(w, r)
		return
	}
	lang := checkoutLang(r, c)
	var pe *payd.Error
	switch {
	case errors.Is(err, payd.ErrNotFound):
		p.notFound(w, r)
	case errors.As(err, &pe) && pe.Code == payd.CodeCheckoutFormat:
		p.renderCheckout(w, r, http.StatusBadRequest, c, messages[lang]["form.invalid"], nil)
	case errors.As(err, &pe), errors.Is(err, payd.ErrConflict):
		p.renderCheckout(w, r, http.StatusConflict, c, messages[lang]["checkout.conflict"], nil)
	default:
		p.failed(w, "checkout", err)
	}
}

// checkoutCard is POST /checkout/{id}/card: the card form, answered by the
// configured acquirer; without one (production, for now) it is not served.
func (p *Pages) checkoutCard(w http.ResponseWriter, r *http.Request) {
	if p.cards == nil {
		p.notFound(w, r)
		return
	}
	id, ok := p.loadCheckout(w, r)
	if !ok {
		return
	}
	if err := checkForm(r); err != nil {
		p.plain(w, http.StatusForbidden, "Forbidden.")
		return
	}
	now := p.checkoutTime(r.Context(), id)
	c, err := p.store.Checkout(r.Context(), "", id, now)
	if err != nil {
		p.notFound(w, r)
		return
	}
	if c.Status != payd.CheckoutMethodSelected || c.Method != payd.MethodCard {
		p.renderCheckout(w, r, http.StatusConflict, c, messages[checkoutLang(r, c)]["checkout.conflict"], nil)
		return
	}
	card := payd.Card{
		Number: strings.ReplaceAll(strings.TrimSpace(r.PostForm.Get("cardNumber")), " ", ""),
		Expiry: strings.TrimSpace(r.PostForm.Get("expiry")), CVV: strings.TrimSpace(r.PostForm.Get("cvv")),
		Holder: strings.TrimSpace(r.PostForm.Get("cardHolder")),
	}
	if bad := card.Check(); bad != "" || payd.TextLen(card.Holder) > payd.MaxPayerName {
		// Show the form again with what the payer typed, except the card number and CVV.
		p.renderCheckout(w, r, http.StatusBadRequest, c, messages[checkoutLang(r, c)]["checkout.badCard"],
			map[string]string{"expiry": card.Expiry, "cardHolder": card.Holder})
		return
	}
	res, err := p.cards.Authorize(r.Context(), c, card)
	if err != nil {
		p.checkoutError(w, r, id, err)
		return
	}
	c, _, err = p.store.CardPaid(r.Context(), id, res, now)
	if err != nil {
		p.checkoutError(w, r, id, err)
		return
	}
	if u := returnURL(c); u != "" {
		http.Redirect(w, r, u, http.StatusSeeOther)
		return
	}
	p.renderCheckout(w, r, http.StatusOK, c, "", nil)
}
