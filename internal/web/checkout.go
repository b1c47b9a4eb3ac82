package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"payd"
	"payd/internal/i18n"
	"payd/internal/sqlstore"
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
	// CardPage: the card is taken on the acquirer's own page (production).
	CardPage bool
	// CardPending: the payer came back from the acquirer's page and its
	// outcome is not known yet.
	CardPending bool
	Card        map[string]string
	Refresh     bool
}

// offersCard reports whether a card acquirer is configured that takes
// the checkout's amount (a production acquirer has a minimum).
func (p *Pages) offersCard(c *payd.Checkout) bool {
	return p.cards != nil || p.gateway != nil && p.gateway.Takes(c.Amount, c.Currency)
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
	return catalog.Pick(r, r.URL.Query().Get("lang"), c.Language)
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
		C: c, Merchant: m.Name, Status: catalog.T(lang, "checkout."+string(c.Status)), OffersQR: m.Active && c.OffersQR(), OffersCard: m.Active && p.offersCard(c), CardPage: p.gateway != nil,
		ShowQR: live && m.Active && c.Method == payd.MethodMiaQr, ShowCard: live && m.Active && c.Method == payd.MethodCard, Card: card,
	}
	if v.ShowCard && v.CardPage && r.URL.Query().Get("card") == "pending" {
		v.CardPending = true
	}
	v.Refresh = v.ShowQR || v.CardPending
	if v.Card == nil {
		v.Card = map[string]string{}
	}
	pg := page{Lang: lang, T: catalog.Texts(lang), Langs: i18n.Languages, CSRF: p.csrfToken(w, r), Sandbox: p.cfg.Sandbox, Error: errMsg, Data: v}
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
	c, err := p.store.SelectCheckoutMethod(r.Context(), id, r.PostForm.Get("method"), p.offersCard, p.checkoutURL(id), now)
	if err != nil {
		p.checkoutError(w, r, id, err)
		return
	}
	http.Redirect(w, r, "/checkout/"+c.ID+langQuery(r), http.StatusSeeOther)
}

// langQuery keeps a page's ?lang through a form's redirect, in any case
// (as checkoutLang reads it).
func langQuery(r *http.Request) string {
	if l := strings.ToLower(r.URL.Query().Get("lang")); catalog.Speaks(l) {
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
		p.renderCheckout(w, r, http.StatusBadRequest, c, catalog.T(lang, "form.invalid"), nil)
	case errors.As(err, &pe), errors.Is(err, payd.ErrConflict):
		p.renderCheckout(w, r, http.StatusConflict, c, catalog.T(lang, "checkout.conflict"), nil)
	default:
		p.failed(w, "checkout", err)
	}
}

// checkoutCard is POST /checkout/{id}/card: the card form, answered by the
// configured acquirer; without one (production, for now) it is not served.
func (p *Pages) checkoutCard(w http.ResponseWriter, r *http.Request) {
	if p.gateway != nil {
		p.checkoutCardPage(w, r)
		return
	}
	if p.cards == nil {
		p.notFound(w, r)
		return
	}
	c, now, ok := p.cardCheckout(w, r)
	if !ok {
		return
	}
	id := c.ID
	card := payd.Card{
		Number: strings.ReplaceAll(strings.TrimSpace(r.PostForm.Get("cardNumber")), " ", ""),
		Expiry: strings.TrimSpace(r.PostForm.Get("expiry")), CVV: strings.TrimSpace(r.PostForm.Get("cvv")),
		Holder: strings.TrimSpace(r.PostForm.Get("cardHolder")),
	}
	if bad := card.Check(); bad != "" || payd.TextLen(card.Holder) > payd.MaxPayerName {
		// Show the form again with what the payer typed, except the card number and CVV.
		p.renderCheckout(w, r, http.StatusBadRequest, c, catalog.T(checkoutLang(r, c), "checkout.badCard"),
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

// cardCheckout is the start of both card handlers: the checkout of the
// request, read as of its merchant's time, from a form of payd's, waiting
// for its card; otherwise it answers and reports false.
func (p *Pages) cardCheckout(w http.ResponseWriter, r *http.Request) (*payd.Checkout, time.Time, bool) {
	id, ok := p.loadCheckout(w, r)
	if !ok {
		return nil, time.Time{}, false
	}
	if err := checkForm(r); err != nil {
		p.plain(w, http.StatusForbidden, "Forbidden.")
		return nil, time.Time{}, false
	}
	now := p.checkoutTime(r.Context(), id)
	c, err := p.store.Checkout(r.Context(), "", id, now)
	if err != nil {
		p.notFound(w, r)
		return nil, time.Time{}, false
	}
	if c.Status != payd.CheckoutMethodSelected || c.Method != payd.MethodCard {
		p.renderCheckout(w, r, http.StatusConflict, c, catalog.T(checkoutLang(r, c), "checkout.conflict"), nil)
		return nil, time.Time{}, false
	}
	return c, now, true
}

// cardClaimLease is how long a request creating the acquirer's payment
// holds the checkout's card session before another may take it over.
const cardClaimLease = 30 * time.Second

// CardAskEvery is how often the payer's pages may ask the acquirer about
// one card session, and how long a failed start keeps the acquirer from
// being asked again: the acquirer's rate limit is shared by every
// merchant, and a page must not turn each of its requests into a call.
const CardAskEvery = 5 * time.Second

// checkoutCardPage is POST /checkout/{id}/card with a production acquirer:
// it creates the acquirer's payment for the checkout once (a reload or a
// second click reuses it, or waits for the request creating it) and sends
// the payer to the acquirer's page. Nothing is decided here.
func (p *Pages) checkoutCardPage(w http.ResponseWriter, r *http.Request) {
	c, _, ok := p.cardCheckout(w, r)
	if !ok {
		return
	}
	id := c.ID
	unavailable := func(err error) {
		p.log.Warn("card payment could not be started", "checkout_id", id, "err", err)
		p.renderCheckout(w, r, http.StatusServiceUnavailable, c, catalog.T(checkoutLang(r, c), "checkout.cardUnavailable"), nil)
	}
	// Another request may be creating it: wait for its page a little.
	var claim sqlstore.CardClaim
	var err error
	for wait := 0; ; wait++ {
		if claim, err = p.store.ClaimCardSession(r.Context(), id, c.MerchantID, p.clock.Now(), cardClaimLease); err != nil {
			unavailable(err)
			return
		}
		if !claim.RetryAt.IsZero() {
			unavailable(errors.New("the acquirer failed to create the payment a moment ago"))
			return
		}
		if claim.URL != "" || claim.Mine {
			break
		}
		if wait == 50 {
			unavailable(errors.New("another request is still creating the acquirer's payment"))
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	if claim.URL != "" {
		http.Redirect(w, r, claim.URL, http.StatusSeeOther)
		return
	}
	back := p.checkoutURL(id) + "/card/return"
	sess, err := p.gateway.StartCard(r.Context(), c, payd.CardStart{
		ClientIP: payd.ClientAddrOf(r.Context()), Language: checkoutLang(r, c),
		OkURL: back, FailURL: back, CallbackURL: p.cfg.CardCallbackURL,
	})
	if err != nil {
		p.store.DropCardSession(context.WithoutCancel(r.Context()), claim.ID, p.clock.Now().Add(CardAskEvery))
		unavailable(err)
		return
	}
	// Only a payment payd has recorded may take the payer's money.
	if err := p.store.OpenCardSession(context.WithoutCancel(r.Context()), claim.ID, sess, p.clock.Now()); err != nil {
		unavailable(err)
		return
	}
	http.Redirect(w, r, sess.URL, http.StatusSeeOther)
}

// checkoutCardReturn is where the acquirer's page sends the payer back
// (okUrl and failUrl alike). What the URL says is not trusted: payd asks
// the acquirer about the checkout's open session (at most once every
// CardAskEvery, however many requests come), applies a final outcome (as
// the callback would), and shows the checkout, which waits for the
// outcome while there is none.
func (p *Pages) checkoutCardReturn(w http.ResponseWriter, r *http.Request) {
	id, ok := p.loadCheckout(w, r)
	if !ok {
		return
	}
	if p.gateway == nil {
		p.notFound(w, r)
		return
	}
	pending := ""
	sid, err := p.store.CardSessionToAsk(r.Context(), id, p.clock.Now(), CardAskEvery)
	if err != nil {
		p.log.Info("card return: the session could not be read; the poller will ask", "checkout_id", id, "err", err)
	}
	if sid == "" && err == nil {
		if c, err := p.store.Checkout(r.Context(), "", id, p.checkoutTime(r.Context(), id)); err == nil && c.Status == payd.CheckoutMethodSelected {
			pending = "card=pending" // asked a moment ago, or being settled
		}
	}
	if sid != "" {
		o, err := p.gateway.CardStatus(r.Context(), sid)
		switch {
		case err != nil:
			p.log.Info("card return: the acquirer could not be asked; the poller will", "checkout_id", id, "err", err)
			pending = "card=pending"
		case !o.Final():
			pending = "card=pending"
		default:
			if err := payd.ApplyCardOutcome(context.WithoutCancel(r.Context()), p.store, id, o, p.checkoutTime(r.Context(), id)); err != nil {
				p.log.Info("card return: outcome not applied; the poller will", "checkout_id", id, "err", err)
				pending = "card=pending"
			}
		}
	}
	u := "/checkout/" + id
	if q := strings.TrimPrefix(langQuery(r), "?"); q != "" || pending != "" {
		u += "?" + strings.Trim(q+"&"+pending, "&")
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}
