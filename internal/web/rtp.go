package web

import (
	"errors"
	"net/http"
	"strings"

	"payd"
)

type rtpView struct {
	RTP      *payd.RTP
	Merchant string
	Status   string
	CanAct   bool
	Done     string // "accepted" or "rejected" after a decision
}

func (p *Pages) loadRTP(w http.ResponseWriter, r *http.Request) (*payd.RTP, *payd.Merchant, bool) {
	id, ok := payd.ParseID(r.PathValue("id"))
	if !ok {
		p.notFound(w, r)
		return nil, nil, false
	}
	rt, err := p.store.RTP(r.Context(), "", id, p.clock.Now())
	if err != nil {
		if !errors.Is(err, payd.ErrNotFound) {
			p.failed(w, "rtp page", err)
			return nil, nil, false
		}
		p.notFound(w, r)
		return nil, nil, false
	}
	m, err := p.store.Merchant(r.Context(), rt.MerchantID)
	if err != nil {
		p.notFound(w, r)
		return nil, nil, false
	}
	rt.Observe(m.Now(p.clock.Now())) // the merchant's test clock, in the sandbox
	return rt, m, true
}

func (p *Pages) rtpPage(w http.ResponseWriter, r *http.Request) {
	rt, m, ok := p.loadRTP(w, r)
	if !ok {
		return
	}
	lang := language(r)
	p.render(w, r, http.StatusOK, "rtp.html", lang, rtpView{
		RTP: rt, Merchant: m.Name, Status: catalog.T(lang, "status."+string(rt.Status)),
		CanAct: p.payer != nil && m.Active && rt.Status == payd.RTPActive,
	}, "")
}

// rtpDecide is the sandbox payer accepting or rejecting: the same store
// transitions as test-accept (with the RTP's amount) and test-reject.
func (p *Pages) rtpDecide(w http.ResponseWriter, r *http.Request) {
	if p.payer == nil {
		p.notFound(w, r)
		return
	}
	rt, m, ok := p.loadRTP(w, r)
	if !ok {
		return
	}
	lang := language(r)
	if err := checkForm(r); err != nil {
		p.plain(w, http.StatusForbidden, "Forbidden.")
		return
	}
	accept := strings.HasSuffix(r.URL.Path, "/accept")
	var err error
	if accept {
		rt, _, err = p.payer.AcceptRTP(r.Context(), m.ID, rt.ID, nil, m.Now(p.clock.Now()))
	} else {
		rt, err = p.payer.RejectRTP(r.Context(), m.ID, rt.ID, m.Now(p.clock.Now()))
	}
	if err != nil {
		var pe *payd.Error
		if errors.As(err, &pe) || errors.Is(err, payd.ErrConflict) {
			rt, _, _ = p.loadRTP(w, r)
			if rt == nil {
				return
			}
			p.render(w, r, http.StatusConflict, "rtp.html", lang, rtpView{RTP: rt, Merchant: m.Name,
				Status: catalog.T(lang, "status."+string(rt.Status))}, catalog.T(lang, "rtp.conflict"))
			return
		}
		p.failed(w, "rtp decision", err)
		return
	}
	if accept && rt.RedirectURL != "" {
		http.Redirect(w, r, rt.RedirectURL, http.StatusSeeOther)
		return
	}
	done := "rejected"
	if accept {
		done = "accepted"
	}
	p.render(w, r, http.StatusOK, "rtp.html", lang, rtpView{RTP: rt, Merchant: m.Name,
		Status: catalog.T(lang, "status."+string(rt.Status)), Done: done}, "")
}
