package web

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"
	"strings"

	"github.com/boombuler/barcode"
	"github.com/boombuler/barcode/qr"

	"payd"
)

// qrMatrix encodes url as a QR code: byte mode, error correction level M.
func qrMatrix(url string) (barcode.Barcode, error) {
	return qr.Encode(url, qr.M, qr.Unicode)
}

const quietZone = 4 // modules of white around the code

// QRPNG renders the QR code of url as a size×size PNG with a 4-module quiet
// zone; modules are whole pixels, centred.
func QRPNG(url string, size int) ([]byte, error) {
	code, err := qrMatrix(url)
	if err != nil {
		return nil, err
	}
	n := code.Bounds().Dx()
	scale := size / (n + 2*quietZone)
	if scale < 1 {
		scale = 1
		size = n + 2*quietZone
	}
	img := image.NewGray(image.Rect(0, 0, size, size))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	off := (size - n*scale) / 2
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if isDark(code.At(x, y)) {
				for dy := 0; dy < scale; dy++ {
					for dx := 0; dx < scale; dx++ {
						img.SetGray(off+x*scale+dx, off+y*scale+dy, color.Gray{})
					}
				}
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func isDark(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r+g+b < 3*0x8000
}

// QRSVG renders the QR code of url as SVG, size pixels wide.
func QRSVG(url string, size int) ([]byte, error) {
	code, err := qrMatrix(url)
	if err != nil {
		return nil, err
	}
	n := code.Bounds().Dx()
	total := n + 2*quietZone
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, size, size, total, total)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, total, total)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if isDark(code.At(x, y)) {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+quietZone, y+quietZone)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return b.Bytes(), nil
}

// qrURL is what a QR's image encodes: its url (payd.QRURL).
func (p *Pages) qrURL(q *payd.QR) string { return payd.QRURL(p.cfg.PublicURL, p.store.QRRegistry(), q) }

// qrImageOrPage serves GET /qr/{id}, /qr/{id}.png and /qr/{id}.svg.
func (p *Pages) qrImageOrPage(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	ext := ""
	if i := strings.LastIndexByte(raw, '.'); i > 0 {
		raw, ext = raw[:i], raw[i+1:]
	}
	// An image that is not there is a plain 404 (an <img> shows no page).
	missing := p.notFound
	if ext != "" {
		missing = func(w http.ResponseWriter, r *http.Request) { p.plain(w, http.StatusNotFound, "Not found.") }
	}
	id, ok := payd.ParseID(raw)
	if !ok || (ext != "" && ext != "png" && ext != "svg") {
		missing(w, r)
		return
	}
	q, err := p.store.QR(r.Context(), "", id, p.clock.Now())
	if err == nil && ext == "" {
		// The page shows the status as of the merchant's time (the image does not depend on it).
		q, err = p.store.QR(r.Context(), "", id, p.timeOf(r.Context(), q.MerchantID))
	}
	if err != nil {
		if !errors.Is(err, payd.ErrNotFound) {
			p.failed(w, "qr page", err)
			return
		}
		missing(w, r)
		return
	}
	if ext == "" {
		p.renderQR(w, r, http.StatusOK, q, "", nil)
		return
	}
	size := 256
	if v, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil {
		size = min(max(v, 64), 1024)
	}
	var b []byte
	if ext == "png" {
		b, err = QRPNG(p.qrURL(q), size)
		w.Header().Set("Content-Type", "image/png")
	} else {
		b, err = QRSVG(p.qrURL(q), size)
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	if err != nil {
		p.log.Error("qr image", "err", err)
		p.plain(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(b)
}

type qrView struct {
	QR       *payd.QR
	Merchant string
	Status   string
	CanPay   bool
	// Scannable: the page shows the code; a Paid or Cancelled QR's is hidden.
	Scannable bool
	Form      map[string]string
	Payment   *payd.Payment
}

func (p *Pages) renderQR(w http.ResponseWriter, r *http.Request, status int, q *payd.QR, errMsg string, paid *payd.Payment) {
	lang := language(r)
	m, err := p.store.Merchant(r.Context(), q.MerchantID)
	if err != nil {
		p.notFound(w, r)
		return
	}
	form := map[string]string{"amount": "", "payerName": payd.TestQRPayer, "iban": payd.TestIBAN}
	if q.Amounts.Amount != nil {
		form["amount"] = q.Amounts.Amount.String()
	}
	if r.Method == http.MethodPost && paid == nil {
		for k := range form {
			form[k] = r.PostForm.Get(k)
		}
	}
	p.render(w, r, status, "qr.html", lang, qrView{
		QR: q, Merchant: m.Name, Status: catalog.T(lang, "qr."+string(q.Status)),
		CanPay: p.payer != nil && m.Active && q.Payable() && paid == nil, Form: form, Payment: paid,
		Scannable: q.Status != payd.QRPaid && q.Status != payd.QRCancelled,
	}, errMsg)
}

// qrPay is the sandbox pay simulator: POST /qr/{id}/pay, with the rules and
// effects of test-pay.
func (p *Pages) qrPay(w http.ResponseWriter, r *http.Request) {
	if p.payer == nil {
		p.notFound(w, r)
		return
	}
	id, ok := payd.ParseID(r.PathValue("id"))
	if !ok {
		p.notFound(w, r)
		return
	}
	q, err := p.store.QR(r.Context(), "", id, p.clock.Now())
	if err != nil {
		p.notFound(w, r)
		return
	}
	now := p.timeOf(r.Context(), q.MerchantID)
	if err := checkForm(r); err != nil {
		p.plain(w, http.StatusForbidden, "Forbidden.")
		return
	}
	lang := language(r)
	in := payd.PayInput{QRID: q.ID, IBAN: strings.TrimSpace(r.PostForm.Get("iban")), Currency: "MDL",
		PayerName: strings.TrimSpace(r.PostForm.Get("payerName"))}
	if a, err := payd.ParseMoney(strings.TrimSpace(r.PostForm.Get("amount"))); err == nil {
		in.Amount = &a
	}
	if err := in.Validate(); err != nil {
		p.renderQR(w, r, http.StatusBadRequest, q, catalog.T(lang, "form.invalid")+" "+err.Error(), nil)
		return
	}
	q2, pay, err := p.payer.PayQR(r.Context(), q.MerchantID, in, now)
	if err != nil {
		var pe *payd.Error
		switch {
		case errors.As(err, &pe) && pe.Code == payd.CodeQRState, errors.Is(err, payd.ErrConflict):
			q, _ = p.store.QR(r.Context(), "", id, now)
			p.renderQR(w, r, http.StatusConflict, q, catalog.T(lang, "qr.notPayable"), nil)
		case errors.As(err, &pe):
			p.renderQR(w, r, http.StatusBadRequest, q, catalog.T(lang, "form.invalid")+" "+pe.Message, nil)
		default:
			p.failed(w, "qr pay", err)
		}
		return
	}
	if q2.RedirectURL != "" {
		http.Redirect(w, r, q2.RedirectURL, http.StatusSeeOther)
		return
	}
	p.renderQR(w, r, http.StatusOK, q2, "", pay)
}
