package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"payd/internal/rails/iso20022"
)

// message is one message received from payd.
type message struct {
	Kind         string    `json:"kind"` // pain.013, camt.055, pacs.004
	MsgID        string    `json:"msgId"`
	ObjectID     string    `json:"objectId"` // the rtpId (pain.013, camt.055) or refundId (pacs.004), hyphenated
	Alias        string    `json:"alias,omitempty"`
	Amount       string    `json:"amount"`
	Currency     string    `json:"currency"`
	Creditor     string    `json:"creditor,omitempty"`
	CreditorIBAN string    `json:"creditorIban,omitempty"`
	EndToEndID   string    `json:"endToEndId,omitempty"` // a pacs.004's original credit's
	ReceivedAt   time.Time `json:"receivedAt"`
	Copies       int       `json:"copies"` // how many times payd sent it
	// Conflicts counts copies whose content differed from the first's
	// (the same MsgId must always carry the same message).
	Conflicts int    `json:"conflicts"`
	Body      string `json:"body"`
}

type bank struct {
	paydURL, key string
	bic          string // this bank's BIC: the payers' agent
	client       *http.Client

	mu         sync.Mutex
	msgs       []*message
	byID       map[string]*message
	sent       []exchange // every message sent to payd, with payd's answer
	downUntil  time.Time
	down       bool
	refused    int // messages of payd's answered 503 while down
	duplicates bool
	bookings   []*booking      // what the bank booked on its customers' accounts
	accounts   map[string]bool // the merchants' accounts it knows
	stmtSeq    int
	loc        *time.Location         // the bank's calendar
	registry   map[string]*registered // the QR registry's codes, by qrId (registry.go)
}

// exchange is a message payd-bank sent and what payd answered.
type exchange struct {
	Kind   string    `json:"kind"`
	Body   string    `json:"body"`
	Status int       `json:"status"`
	Answer string    `json:"answer"`
	At     time.Time `json:"at"`
}

func newBank(paydURL, key, bic string) *bank {
	return &bank{paydURL: paydURL, key: key, bic: bic, client: &http.Client{Timeout: 10 * time.Second}, byID: map[string]*message{},
		accounts: map[string]bool{}, loc: time.UTC, registry: map[string]*registered{}}
}

func (b *bank) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /iso20022", b.receive)
	mux.HandleFunc("GET /messages", b.list)
	mux.HandleFunc("GET /sent", b.listSent)
	mux.HandleFunc("POST /send", b.sendRaw)
	mux.HandleFunc("POST /rtp/{id}/accept", b.rtpAccept)
	mux.HandleFunc("POST /rtp/{id}/reject", b.rtpReject)
	mux.HandleFunc("POST /pay", b.pay)
	mux.HandleFunc("POST /pay-link", b.payLink)
	mux.HandleFunc("GET /registry", b.registryList)
	mux.HandleFunc("GET /registry/resolve", b.registryGet)
	mux.HandleFunc("POST /refund/{id}/settle", b.refundStatus)
	mux.HandleFunc("POST /refund/{id}/reject", b.refundStatus)
	mux.HandleFunc("POST /down", b.goDown)
	mux.HandleFunc("GET /down", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		down, refused := b.downLocked(), b.refused
		b.mu.Unlock()
		writeJSON(w, 200, map[string]any{"down": down, "refused": refused})
	})
	mux.HandleFunc("GET /bookings", b.listBookings)
	mux.HandleFunc("GET /statements", b.getStatement)
	mux.HandleFunc("POST /statements/send", b.sendStatement)
	mux.HandleFunc("POST /up", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.down, b.downUntil = false, time.Time{}
		b.mu.Unlock()
		writeJSON(w, 200, map[string]any{"down": false})
	})
	mux.HandleFunc("POST /duplicates", func(w http.ResponseWriter, r *http.Request) {
		on := r.URL.Query().Get("on") == "true"
		b.mu.Lock()
		b.duplicates = on
		b.mu.Unlock()
		writeJSON(w, 200, map[string]any{"duplicates": on})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// downLocked: the connector answers 503 now (b.mu held).
func (b *bank) downLocked() bool {
	return b.down && (b.downUntil.IsZero() || time.Now().Before(b.downUntil))
}

// refuseIfDown answers 503 while the connector is down, counting the
// messages it refused.
func (b *bank) refuseIfDown(w http.ResponseWriter) bool {
	b.mu.Lock()
	down := b.downLocked()
	if down {
		b.refused++
	}
	b.mu.Unlock()
	if down {
		http.Error(w, "connector down", http.StatusServiceUnavailable)
	}
	return down
}

// receive is the connector endpoint payd posts its messages to.
func (b *bank) receive(w http.ResponseWriter, r *http.Request) {
	if b.refuseIfDown(w) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable", http.StatusBadRequest)
		return
	}
	if err := iso20022.Verify(r.Header, b.key, body, time.Now()); err != nil {
		http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), iso20022.RegistryMediaType) {
		b.register(w, body)
		return
	}
	m, err := parse(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	if m.CreditorIBAN != "" {
		b.accounts[m.CreditorIBAN] = true
	}
	if old := b.byID[m.MsgID]; old != nil {
		old.Copies++ // a redelivery: the network deduplicates by MsgId
		if old.Body != m.Body {
			old.Conflicts++
		}
	} else {
		m.Copies, m.ReceivedAt = 1, time.Now().UTC()
		b.msgs = append(b.msgs, m)
		b.byID[m.MsgID] = m
	}
	b.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func parse(body []byte) (*message, error) {
	ns, err := iso20022.Namespace(body)
	if err != nil {
		return nil, err
	}
	m := &message{Body: string(body)}
	switch ns {
	case iso20022.NSPain013:
		var x iso20022.Pain013
		if err := xml.Unmarshal(body, &x); err != nil {
			return nil, err
		}
		pi := x.Req.PmtInf
		m.Kind, m.MsgID, m.Amount, m.Currency = "pain.013", x.Req.GrpHdr.MsgID, pi.Tx.Amt.Value, pi.Tx.Amt.Ccy
		m.ObjectID, m.Creditor, m.CreditorIBAN = hyphenate(pi.Tx.PmtID.EndToEndID), pi.Tx.Cdtr.Name, pi.Tx.CdtrAcct.IBANValue()
		if pi.Dbtr.CtctDtls != nil {
			m.Alias = iso20022.AliasOf(pi.Dbtr.CtctDtls.MobNb)
		}
	case iso20022.NSCamt055:
		var x iso20022.Camt055
		if err := xml.Unmarshal(body, &x); err != nil {
			return nil, err
		}
		tx := x.Req.Undrlyg.PmtInf.Tx
		m.Kind, m.MsgID, m.ObjectID = "camt.055", x.Req.Assgnmt.ID, hyphenate(tx.OrgnlEndToEndID)
		m.Amount, m.Currency = tx.OrgnlInstdAmt.Value, tx.OrgnlInstdAmt.Ccy
	case iso20022.NSPacs004:
		var x iso20022.Pacs004
		if err := xml.Unmarshal(body, &x); err != nil {
			return nil, err
		}
		tx := x.Msg.Tx
		m.Kind, m.MsgID, m.ObjectID = "pacs.004", x.Msg.GrpHdr.MsgID, hyphenate(tx.RtrID)
		m.Amount, m.Currency, m.EndToEndID = tx.RtrdAmt.Value, tx.RtrdAmt.Ccy, tx.OrgnlEndToEndID
		if ref := tx.OrgnlTxRef; ref != nil {
			if ref.Cdtr != nil && ref.Cdtr.Pty != nil {
				m.Creditor = ref.Cdtr.Pty.Name
			}
			m.CreditorIBAN = ref.CdtrAcct.IBANValue()
		}
	default:
		return nil, fmt.Errorf("payd-bank does not take %s", ns)
	}
	if m.MsgID == "" {
		return nil, fmt.Errorf("no MsgId")
	}
	return m, nil
}

func hyphenate(s string) string {
	if id, ok := iso20022.ParseMsgID(s); ok {
		return id
	}
	return s
}

// listSent is every message payd-bank sent payd, with payd's answers.
func (b *bank) listSent(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	out := append([]exchange{}, b.sent...)
	b.mu.Unlock()
	writeJSON(w, 200, out)
}

// sendRaw signs and sends a document as it is (tests build malformed or
// unusual messages with it) and answers payd's status and body.
func (b *bank) sendRaw(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeJSON(w, 400, map[string]any{"error": "unreadable"})
		return
	}
	status, answer, err := b.post("raw", body)
	if err != nil {
		writeJSON(w, 502, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"paydStatus": status, "paydAnswer": string(answer)})
}

func (b *bank) list(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("kind")
	b.mu.Lock()
	out := []message{}
	for _, m := range b.msgs {
		if kind == "" || m.Kind == kind {
			out = append(out, *m)
		}
	}
	b.mu.Unlock()
	writeJSON(w, 200, out)
}

func (b *bank) goDown(w http.ResponseWriter, r *http.Request) {
	var until time.Time
	if f := r.URL.Query().Get("for"); f != "" {
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			writeJSON(w, 400, map[string]any{"error": "for must be a duration such as 30s"})
			return
		}
		until = time.Now().Add(d)
	}
	b.mu.Lock()
	b.down, b.downUntil = true, until
	b.mu.Unlock()
	writeJSON(w, 200, map[string]any{"down": true})
}

func newMsgID() string {
	var x [16]byte
	rand.Read(x[:])
	return "BANK" + strings.ToUpper(hex.EncodeToString(x[:]))[:28]
}

func now() string { return iso20022.Time(time.Now()) }

// send signs and posts one message to payd (twice when duplicating) and
// returns payd's last answer.
func (b *bank) send(kind string, v any) (int, []byte, error) {
	body, err := iso20022.Marshal(v)
	if err != nil {
		return 0, nil, err
	}
	return b.post(kind, body)
}

func (b *bank) post(kind string, body []byte) (int, []byte, error) {
	b.mu.Lock()
	times := 1
	if b.duplicates {
		times = 2
	}
	b.mu.Unlock()
	var status int
	var answer []byte
	for i := 0; i < times; i++ {
		req, _ := http.NewRequest(http.MethodPost, b.paydURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/xml; charset=utf-8")
		iso20022.Sign(req.Header, b.key, body, time.Now())
		resp, err := b.client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		answer, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		status = resp.StatusCode
		b.mu.Lock()
		b.sent = append(b.sent, exchange{Kind: kind, Body: string(body), Status: status, Answer: string(answer), At: time.Now().UTC()})
		b.mu.Unlock()
		if status == http.StatusOK && len(answer) > 0 {
			if err := iso20022.Verify(resp.Header, b.key, answer, time.Now()); err != nil {
				return status, answer, fmt.Errorf("payd's answer: %w", err)
			}
		}
	}
	return status, answer, nil
}

type payer struct {
	PayerName string `json:"payerName"`
	IBAN      string `json:"iban"`
}

func (p *payer) defaults() {
	if p.PayerName == "" {
		p.PayerName = "ION POPESCU"
	}
	if p.IBAN == "" {
		p.IBAN = "MD88AG000000011621810140"
	}
}

func (b *bank) rtp(id string) *message {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.msgs {
		if m.Kind == "pain.013" && m.ObjectID == id {
			return m
		}
	}
	return nil
}

func (b *bank) rtpStatus(rtp *message, status string) (int, []byte, error) {
	reason := ""
	if status == iso20022.StatusRejected {
		reason = "MS02" // NotSpecifiedReasonCustomerGenerated: the payer declined
	}
	return b.send("pain.014", &iso20022.Pain014{Rpt: iso20022.Pain014Rpt{
		GrpHdr: iso20022.GroupHeader{MsgID: newMsgID(), CreDtTm: now(), InitgPty: &iso20022.Party{Name: "PAYD-BANK"},
			DbtrAgt: iso20022.AgentBIC(b.bic)},
		OrgnlGr: iso20022.OriginalGroup{OrgnlMsgID: rtp.MsgID, OrgnlMsgNmID: "pain.013.001.07"},
		PmtInfs: []iso20022.Pain014PmtInf{{OrgnlPmtInfID: iso20022.ID(rtp.ObjectID), Txs: []iso20022.StatusTx{{
			OrgnlEndToEndID: iso20022.ID(rtp.ObjectID), TxSts: status, StsRsnInf: iso20022.ReasonWith(reason, "")}}}},
	}})
}

func (b *bank) rtpAccept(w http.ResponseWriter, r *http.Request) {
	rtp := b.rtp(hyphenate(r.PathValue("id")))
	if rtp == nil {
		writeJSON(w, 404, map[string]any{"error": "no pain.013 received for this RTP"})
		return
	}
	var p payer
	json.NewDecoder(r.Body).Decode(&p)
	p.defaults()
	if status, _, err := b.rtpStatus(rtp, iso20022.StatusAccepted); err != nil || status != 200 {
		writeJSON(w, 502, map[string]any{"error": fmt.Sprint("pain.014: ", status, " ", err)})
		return
	}
	// The money goes to the account the request named.
	b.credit(w, creditOrder{EndToEndID: iso20022.ID(rtp.ObjectID), Amount: rtp.Amount, Currency: rtp.Currency,
		CreditorIBAN: rtp.CreditorIBAN, Creditor: rtp.Creditor, payer: p})
}

func (b *bank) rtpReject(w http.ResponseWriter, r *http.Request) {
	rtp := b.rtp(hyphenate(r.PathValue("id")))
	if rtp == nil {
		writeJSON(w, 404, map[string]any{"error": "no pain.013 received for this RTP"})
		return
	}
	status, body, err := b.rtpStatus(rtp, iso20022.StatusRejected)
	if err != nil {
		writeJSON(w, 502, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"paydStatus": status, "paydAnswer": string(body)})
}

// creditOrder is a payer's credit as /pay takes it.
type creditOrder struct {
	payer
	Target            string `json:"target"`            // the QR, extension or RTP paid: its id as EndToEndId
	EndToEndID        string `json:"endToEndId"`        // instead of target: e.g. NOTPROVIDED
	Remittance        string `json:"remittance"`        // RmtInf/Ustrd
	Amount            string `json:"amount"`            // a decimal string
	Currency          string `json:"currency"`          // default MDL
	CreditorIBAN      string `json:"creditorIban"`      // the account paid (the QR's merchant's)
	Creditor          string `json:"creditor"`          // its holder's name
	NoCreditorAccount bool   `json:"noCreditorAccount"` // leave CdtrAcct out
	// How the bank books it (statements.go): the money booked but the
	// pacs.008 never sent (dropMessage), sent but never booked (unbooked),
	// booked at another amount, twice, or on another date.
	DropMessage  bool   `json:"dropMessage"`
	Unbooked     bool   `json:"unbooked"`
	BookedAmount string `json:"bookedAmount"`
	BookTwice    bool   `json:"bookTwice"`
	BookOn       string `json:"bookOn"`
	// TxID is the network's transaction id (default: a new one); a
	// dropped credit's, with unbooked, sends that credit to payd late.
	TxID string `json:"txId"`
}

func (b *bank) pay(w http.ResponseWriter, r *http.Request) {
	var in creditOrder
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || (in.Target == "" && in.EndToEndID == "") || in.Amount == "" {
		writeJSON(w, 400, map[string]any{"error": `body {"target" or "endToEndId","amount","creditorIban"} required`})
		return
	}
	if in.EndToEndID == "" {
		in.EndToEndID = iso20022.ID(hyphenate(in.Target))
	}
	b.credit(w, in)
}

// credit sends a pacs.008 and answers with payd's pacs.002 status.
func (b *bank) credit(w http.ResponseWriter, o creditOrder) {
	o.payer.defaults()
	if o.Currency == "" {
		o.Currency = "MDL"
	}
	if o.Creditor == "" {
		o.Creditor = "MERCHANT"
	}
	txID := o.TxID
	if txID == "" {
		txID = newMsgID()
	}
	tx := iso20022.CreditTx{
		PmtID: iso20022.PaymentID{EndToEndID: o.EndToEndID, TxID: txID}, Amt: iso20022.Amount{Ccy: o.Currency, Value: o.Amount},
		AccptncDtTm: now(), ChrgBr: iso20022.ChargesShared,
		Dbtr: iso20022.Party{Name: iso20022.Text(o.PayerName, iso20022.MaxName)}, DbtrAcct: iso20022.IBAN(o.IBAN), DbtrAgt: *iso20022.AgentBIC(b.bic),
		CdtrAgt: *iso20022.AgentBIC(""), Cdtr: iso20022.Party{Name: iso20022.Text(o.Creditor, iso20022.MaxName)},
		RmtInf: iso20022.RemittanceText(o.Remittance),
	}
	if !o.NoCreditorAccount {
		tx.CdtrAcct = iso20022.IBAN(o.CreditorIBAN)
	}
	if o.DropMessage {
		// The money reached the account; payd never hears of it.
		b.bookCredit(o, txID)
		writeJSON(w, 200, map[string]any{"status": "BOOKED", "dropped": true, "txId": txID})
		return
	}
	status, body, err := b.send("pacs.008", &iso20022.Pacs008{Msg: iso20022.Pacs008Msg{
		GrpHdr: iso20022.GroupHeader{MsgID: newMsgID(), CreDtTm: now(), NbOfTxs: "1", SttlmInf: iso20022.Clearing(),
			InstgAgt: iso20022.AgentBIC(b.bic)},
		Txs: []iso20022.CreditTx{tx},
	}})
	if err != nil {
		writeJSON(w, 502, map[string]any{"error": err.Error()})
		return
	}
	var ans iso20022.Pacs002
	if status != 200 || xml.Unmarshal(body, &ans) != nil || len(ans.Rpt.Txs) != 1 {
		writeJSON(w, 502, map[string]any{"error": "payd answered " + strconv.Itoa(status), "body": string(body)})
		return
	}
	if ans.Rpt.Txs[0].TxSts == iso20022.StatusCredited && !o.Unbooked {
		b.bookCredit(o, txID)
	}
	writeJSON(w, 200, map[string]any{"status": ans.Rpt.Txs[0].TxSts, "reason": ans.Rpt.Txs[0].ReasonCode(), "txId": txID, "answer": string(body)})
}

func (b *bank) refundStatus(w http.ResponseWriter, r *http.Request) {
	id := hyphenate(r.PathValue("id"))
	b.mu.Lock()
	var ret *message
	for _, m := range b.msgs {
		if m.Kind == "pacs.004" && m.ObjectID == id {
			ret = m
		}
	}
	b.mu.Unlock()
	orgnlMsgID := "NOTPROVIDED"
	if ret != nil {
		orgnlMsgID = ret.MsgID
	} else if r.URL.Query().Get("force") != "true" {
		writeJSON(w, 404, map[string]any{"error": "no pacs.004 received for this refund (force=true sends the status anyway)"})
		return
	}
	st, rsn := iso20022.StatusSettled, ""
	if strings.HasSuffix(r.URL.Path, "/reject") {
		st, rsn = iso20022.StatusRejected, "AC04"
	}
	msg, err := iso20022.Marshal(&iso20022.Pacs002{Rpt: iso20022.Pacs002Rpt{
		GrpHdr:  iso20022.GroupHeader{MsgID: newMsgID(), CreDtTm: now(), InstgAgt: iso20022.AgentBIC(b.bic)},
		OrgnlGr: &iso20022.OriginalGroup{OrgnlMsgID: orgnlMsgID, OrgnlMsgNmID: "pacs.004.001.09"},
		Txs:     []iso20022.StatusTx{{OrgnlTxID: iso20022.ID(id), TxSts: st, StsRsnInf: iso20022.ReasonWith(rsn, "")}},
	}})
	if err != nil {
		writeJSON(w, 500, map[string]any{"error": err.Error()})
		return
	}
	status, body, err := b.post("pacs.002", msg)
	// payd records a pacs.004 as taken once this connector's answer to it
	// arrives, which can be just after the return was received here. Until
	// then payd answers the status with a text and applies nothing
	// (docs/rails.md, Refunds): the same message is sent again, as a
	// connector does, for as long as payd may still be reading the answer.
	for wait, deadline := 20*time.Millisecond, time.Now().Add(10*time.Second); ret != nil && err == nil && status == 200 &&
		len(body) > 0 && time.Now().Before(deadline); wait = min(2*wait, time.Second) {
		time.Sleep(wait)
		status, body, err = b.post("pacs.002", msg)
	}
	if err != nil || status != 200 {
		writeJSON(w, 502, map[string]any{"error": fmt.Sprint("pacs.002: ", status, " ", err)})
		return
	}
	if st == iso20022.StatusSettled && ret != nil {
		b.bookReturn(ret)
	}
	writeJSON(w, 200, map[string]any{"status": st, "paydAnswer": string(body)})
}
