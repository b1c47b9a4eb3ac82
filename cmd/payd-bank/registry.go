package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"payd"
	"payd/internal/rails/iso20022"
)

// The National Bank's QR registry, as its public documentation describes
// it (docs/rails.md, "The QR registry"), and a payer's bank app that pays
// from a link alone. payd registers each code's terms through the
// connector; a payer's bank resolves a link there and pays what the
// registry says, by pacs.008, with the reference the registry gave.

// registered is a code as the registry keeps it: the newest registration
// it was given, and how many messages it took.
type registered struct {
	payd.QRRegistration
	Messages int       `json:"messages"`
	At       time.Time `json:"registeredAt"`
}

// register takes a registration (POST /iso20022 with the registry's media
// type): the newest revision of a code is kept, an older one answered
// stale and kept out; the same message again answers the same.
func (b *bank) register(w http.ResponseWriter, body []byte) {
	var m iso20022.RegistryMessage
	if err := json.Unmarshal(body, &m); err != nil || m.Type != iso20022.RegistryType || m.MsgID == "" {
		http.Error(w, "not a registration", http.StatusBadRequest)
		return
	}
	reg := m.QR
	if _, psp, id, ok := payd.ParseMIALink(reg.Link); !ok || id != reg.QRID || psp == "" {
		http.Error(w, fmt.Sprintf("link %q is not a MIA QR link of code %s", reg.Link, reg.QRID), http.StatusUnprocessableEntity)
		return
	}
	b.mu.Lock()
	cur := b.registry[reg.QRID]
	status := iso20022.RegistryRegistered
	switch {
	case cur == nil:
		cur = &registered{QRRegistration: reg}
		b.registry[reg.QRID] = cur
	case reg.Revision > cur.Revision:
		cur.QRRegistration = reg
	case reg.Revision < cur.Revision:
		status = iso20022.RegistryStale
	}
	cur.Messages++
	cur.At = time.Now().UTC()
	answer := iso20022.RegistryAnswer{MsgID: m.MsgID, Link: cur.Link, Revision: cur.Revision, Status: status}
	b.mu.Unlock()
	out, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", iso20022.RegistryMediaType)
	iso20022.Sign(w.Header(), b.key, out, time.Now())
	w.Write(out)
}

// registryList is GET /registry: every code the registry knows.
func (b *bank) registryList(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	out := make([]registered, 0, len(b.registry))
	for _, reg := range b.registry {
		out = append(out, *reg)
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].QRID < out[j].QRID })
	writeJSON(w, 200, out)
}

// resolve is what a bank app reads of a link: the registry's record, or
// why it cannot be paid.
func (b *bank) resolve(link string) (payd.QRRegistration, int, string) {
	if _, _, _, ok := payd.ParseMIALink(link); !ok {
		return payd.QRRegistration{}, http.StatusBadRequest, "not a MIA QR link"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, reg := range b.registry {
		if reg.Link == link {
			return reg.QRRegistration, 200, ""
		}
	}
	return payd.QRRegistration{}, http.StatusNotFound, "the registry knows no such code"
}

// registryGet is GET /registry/resolve?link=…: the record a bank app reads.
func (b *bank) registryGet(w http.ResponseWriter, r *http.Request) {
	reg, status, why := b.resolve(r.URL.Query().Get("link"))
	if status != 200 {
		writeJSON(w, status, map[string]any{"error": why})
		return
	}
	writeJSON(w, 200, reg)
}

// payable says why a code cannot be paid now at amount ("" when it can),
// and the amount to pay, as a bank app applies the registry's terms.
func payable(reg payd.QRRegistration, amount string, at time.Time) (string, string) {
	t := reg.Extension
	switch {
	case reg.Status != payd.QRActive:
		return "", "the code is " + string(reg.Status)
	case t == nil:
		return "", "the code has no terms to pay"
	case t.Status != payd.ExtActive:
		return "", "the code's terms are " + string(t.Status)
	case t.ValidUntil != nil && !at.Before(*t.ValidUntil):
		return "", "the code expired at " + t.ValidUntil.Format(time.RFC3339)
	}
	if reg.AmountType == payd.AmountFixed {
		if t.Amount == nil {
			return "", "the code has no amount"
		}
		if amount != "" {
			if m, err := payd.ParseMoney(amount); err != nil || m != *t.Amount {
				return "", "the code's amount is " + t.Amount.String()
			}
		}
		return t.Amount.String(), ""
	}
	m, err := payd.ParseMoney(strings.TrimSpace(amount))
	if err != nil || m <= 0 {
		return "", "the payer must give an amount"
	}
	if reg.AmountType == payd.AmountControlled && (t.AmountMin != nil && m < *t.AmountMin || t.AmountMax != nil && m > *t.AmountMax) {
		return "", fmt.Sprintf("the amount must be between %s and %s", t.AmountMin, t.AmountMax)
	}
	return m.String(), ""
}

// payLink is POST /pay-link: a payer's bank app pays a code from its link
// alone, as the registry describes it, by pacs.008 (the registry's
// reference as EndToEndId, its account, its remittance text), and answers
// payd's pacs.002 status. A code that cannot be paid is refused (409) and
// nothing is sent.
func (b *bank) payLink(w http.ResponseWriter, r *http.Request) {
	var in struct {
		payer
		Link   string `json:"link"`
		Amount string `json:"amount"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Link == "" {
		writeJSON(w, 400, map[string]any{"error": `body {"link", "amount" (Free and Controlled codes), "payerName", "iban"} required`})
		return
	}
	reg, status, why := b.resolve(in.Link)
	if status != 200 {
		writeJSON(w, status, map[string]any{"error": why})
		return
	}
	amount, why := payable(reg, in.Amount, time.Now())
	if why != "" {
		writeJSON(w, http.StatusConflict, map[string]any{"error": why, "status": reg.Status})
		return
	}
	t := reg.Extension
	b.credit(w, creditOrder{payer: in.payer, EndToEndID: t.CreditorRef, Remittance: t.RemittanceInfo4Payer, Amount: amount,
		Currency: reg.Currency, CreditorIBAN: reg.CreditorAccount.IBAN, Creditor: reg.DBA})
}
