package console

import (
	"net/http"
	"net/url"

	"payd"
)

// payCheckout pays one of the merchant's checkouts as a payer would: it
// opens the hosted page, chooses the method there and pays by the test
// card on the card form, or by QR through the API's test-pay. It returns
// what to tell the merchant.
func (c *Console) payCheckout(r *http.Request, s *session, id string, card bool) flash {
	co, err := c.store.Checkout(r.Context(), s.m.ID, id, s.m.Now(c.clock.Now()))
	if err != nil {
		return flash{Msg: c.tr(r, "notfound")}
	}
	csrf := randomToken()
	page := func(method, path string, form url.Values) int {
		var body []byte
		if form != nil {
			form.Set("csrf", csrf)
			body = []byte(form.Encode())
		}
		return c.serve(r, method, path, body, func(req *http.Request) {
			req.AddCookie(&http.Cookie{Name: "payd_csrf", Value: csrf})
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
		}).status
	}
	base := "/checkout/" + url.PathEscape(id) + "?lang=en"
	if st := page(http.MethodGet, base, nil); st >= 400 {
		return flash{Msg: c.tr(r, "notfound")}
	}
	if co.Status != payd.CheckoutMethodSelected {
		method := payd.MethodMiaQr
		if card {
			method = payd.MethodCard
		}
		if st := page(http.MethodPost, "/checkout/"+url.PathEscape(id)+"/method?lang=en", url.Values{"method": {method}}); st >= 400 {
			return flash{Msg: http.StatusText(st)}
		}
	}
	if co, err = c.store.Checkout(r.Context(), s.m.ID, id, s.m.Now(c.clock.Now())); err != nil {
		return flash{Msg: c.tr(r, "notfound")}
	}
	if card {
		if co.Method != payd.MethodCard {
			return flash{Msg: "The checkout's payer chose " + co.Method + "."}
		}
		st := page(http.MethodPost, "/checkout/"+url.PathEscape(id)+"/card?lang=en", url.Values{"cardNumber": {payd.ApprovedCard},
			"expiry": {payd.ApprovedCardExpiry}, "cvv": {payd.ApprovedCardCVV}, "cardHolder": {"TEST PAYER"}})
		if st >= 400 {
			return flash{Msg: http.StatusText(st)}
		}
		return flash{Msg: c.tr(r, "paid"), OK: true}
	}
	if co.QRID == "" {
		return flash{Msg: "The checkout's payer chose " + co.Method + "."}
	}
	res := c.call(r, s.token, http.MethodPost, "/v2/instant/test-pay", map[string]any{"qrId": co.QRID,
		"amount": rawNumber(co.Amount.String()), "currency": co.Currency, "payerName": "TEST PAYER", "iban": payd.TestIBAN})
	if !res.ok() {
		return flash{Msg: res.message()}
	}
	return flash{Msg: c.tr(r, "paid"), OK: true}
}
