// Package iso20022 is payd's production rails adapter: it speaks ISO 20022
// XML to a bank-side connector over HTTPS, one message per POST, signed
// both ways (docs/rails.md is the connector's specification).
//
// Outbound, the rails outbox hands it orders: an RTP goes out as pain.013,
// its cancellation as camt.055, a refund's return of funds as pacs.004.
// Inbound, the connector POSTs to /rails/iso20022: pain.014 (the payer
// accepted or rejected an RTP), pacs.008 (a payer's credit for a QR, an
// extension or an RTP, answered with pacs.002) and pacs.002 (a refund's
// return settled or rejected). Every inbound message is applied through
// the Ledger use cases, once per MsgId (payd.Inbox).
//
// Every message payd writes validates against the ISO 20022 base XSD of
// its version (xsd; TestMessagesValidate), for every input the
// merchant API accepts: texts longer than their ISO field are cut at its
// boundary (Text), optional groups with no value are left out (pointers),
// and the usage follows the EPC's SEPA Request-to-Pay and SCT Inst
// guidelines where the schema leaves a choice (docs/rails.md).
//
// The message structs carry only the elements payd reads or writes;
// amounts are exact decimals, never floats.
package iso20022

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"payd"
)

// Namespaces of the message versions payd speaks.
const (
	NSPain013 = "urn:iso:std:iso:20022:tech:xsd:pain.013.001.07"
	NSPain014 = "urn:iso:std:iso:20022:tech:xsd:pain.014.001.07"
	NSCamt055 = "urn:iso:std:iso:20022:tech:xsd:camt.055.001.08"
	NSPacs008 = "urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08"
	NSPacs002 = "urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10"
	NSPacs004 = "urn:iso:std:iso:20022:tech:xsd:pacs.004.001.09"
)

// Amount is an amount with its currency, e.g. <InstdAmt Ccy="MDL">50.00</InstdAmt>.
type Amount struct {
	Ccy   string `xml:"Ccy,attr"`
	Value string `xml:",chardata"`
}

// Amt formats money as an ISO amount.
func Amt(m payd.Money, ccy string) Amount { return Amount{Ccy: ccy, Value: m.String()} }

// AmtP is Amt as an optional element.
func AmtP(m payd.Money, ccy string) *Amount { a := Amt(m, ccy); return &a }

// Money parses an ISO amount exactly: an XSD decimal without a sign (a
// leading '+' is taken), at most two fraction digits for MDL.
func (a Amount) Money() (payd.Money, error) {
	v := strings.TrimPrefix(strings.TrimSpace(a.Value), "+")
	if strings.HasPrefix(v, ".") {
		v = "0" + v
	}
	v = strings.TrimSuffix(v, ".")
	if v == "" || strings.Trim(v, "0123456789.") != "" || strings.Count(v, ".") > 1 {
		return 0, fmt.Errorf("bad amount %q", a.Value)
	}
	return payd.ParseMoney(v)
}

// GroupHeader is every message's GrpHdr, its elements in the one order the
// six messages share; each message writes those its schema has.
type GroupHeader struct {
	MsgID    string      `xml:"MsgId"`
	CreDtTm  string      `xml:"CreDtTm"`
	NbOfTxs  string      `xml:"NbOfTxs,omitempty"`
	InitgPty *Party      `xml:"InitgPty,omitempty"`
	DbtrAgt  *Agent      `xml:"DbtrAgt,omitempty"`
	CdtrAgt  *Agent      `xml:"CdtrAgt,omitempty"`
	SttlmInf *Settlement `xml:"SttlmInf,omitempty"`
	InstgAgt *Agent      `xml:"InstgAgt,omitempty"`
	InstdAgt *Agent      `xml:"InstdAgt,omitempty"`
}

// Settlement is GrpHdr/SttlmInf.
type Settlement struct {
	Mtd string `xml:"SttlmMtd"`
}

// Clearing is the settlement of every credit and return: CLRG.
func Clearing() *Settlement { return &Settlement{Mtd: SettlementClring} }

// Party is a party: its name, an organisation id, a mobile number.
type Party struct {
	Name     string   `xml:"Nm,omitempty"`
	ID       *PartyID `xml:"Id,omitempty"`
	CtctDtls *Contact `xml:"CtctDtls,omitempty"`
}

// PartyID is Party/Id: an organisation's other identification.
type PartyID struct {
	OrgOther *GenericID `xml:"OrgId>Othr"`
}

// GenericID is an identification with no scheme of ISO's own.
type GenericID struct {
	ID string `xml:"Id"`
}

// Contact is Party/CtctDtls: the party's mobile number.
type Contact struct {
	MobNb string `xml:"MobNb,omitempty"`
}

// Agent is a financial institution: by BIC, or "NOTPROVIDED" when unknown.
type Agent struct {
	BICFI string     `xml:"FinInstnId>BICFI,omitempty"`
	Other *GenericID `xml:"FinInstnId>Othr,omitempty"`
}

// NotProvided is the identification of an agent payd does not know, as the
// EPC's guidelines write it.
const NotProvided = "NOTPROVIDED"

// AgentBIC is an agent by its BIC; "" gives the NOTPROVIDED agent.
func AgentBIC(bic string) *Agent {
	if bic == "" {
		return &Agent{Other: &GenericID{ID: NotProvided}}
	}
	return &Agent{BICFI: bic}
}

// BIC is the agent's BIC, "" when it has none.
func (a *Agent) BIC() string {
	if a == nil {
		return ""
	}
	return a.BICFI
}

// Account is a cash account, identified by its IBAN.
type Account struct {
	IBAN string `xml:"Id>IBAN"`
}

// IBAN is an account by its IBAN; nil (no element) when it is unknown.
func IBAN(iban string) *Account {
	if iban == "" {
		return nil
	}
	return &Account{IBAN: iban}
}

// IBANValue is the account's IBAN, or "".
func (a *Account) IBANValue() string {
	if a == nil {
		return ""
	}
	return a.IBAN
}

// PartyOrAgent is ISO's Party40Choice: a party or an agent.
type PartyOrAgent struct {
	Pty *Party `xml:"Pty,omitempty"`
	Agt *Agent `xml:"Agt,omitempty"`
}

// DateTime is a date-and-time choice written as a date and time.
type DateTime struct {
	DtTm string `xml:"DtTm"`
}

// PaymentID is a transaction's identification.
type PaymentID struct {
	InstrID    string `xml:"InstrId,omitempty"`
	EndToEndID string `xml:"EndToEndId"`
	TxID       string `xml:"TxId,omitempty"`
}

// Remittance is the payer's free text (payd writes one line).
type Remittance struct {
	Ustrd []string `xml:"Ustrd"`
}

// RemittanceText is one line of free text; nil when there is none.
func RemittanceText(s string) *Remittance {
	if s = Text(s, MaxRemittance); s == "" {
		return nil
	}
	return &Remittance{Ustrd: []string{s}}
}

// Reason is a reason code.
type Reason struct {
	Cd string `xml:"Cd"`
}

// ReasonInfo is a coded reason with additional text (StsRsnInf, CxlRsnInf,
// RtrRsnInf share the shape).
type ReasonInfo struct {
	Rsn      *Reason  `xml:"Rsn,omitempty"`
	AddtlInf []string `xml:"AddtlInf,omitempty"`
}

// ReasonWith is a coded reason and one line of text, cut to 105
// characters; nil when both are empty.
func ReasonWith(code, text string) *ReasonInfo {
	text = Text(text, MaxAdditionalInfo)
	if code == "" && text == "" {
		return nil
	}
	r := &ReasonInfo{}
	if code != "" {
		r.Rsn = &Reason{Cd: code}
	}
	if text != "" {
		r.AddtlInf = []string{text}
	}
	return r
}

// Pain013 is a creditor payment activation request: an RTP.
type Pain013 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:pain.013.001.07 Document"`
	Req     Pain013Req `xml:"CdtrPmtActvtnReq"`
}

// Pain013Req is the message: its header and the one payment information.
type Pain013Req struct {
	GrpHdr GroupHeader   `xml:"GrpHdr"`
	PmtInf Pain013PmtInf `xml:"PmtInf"`
}

// Pain013PmtInf is the RTP's payment information.
type Pain013PmtInf struct {
	PmtInfID    string    `xml:"PmtInfId"`
	PmtMtd      string    `xml:"PmtMtd"`
	ReqdExctnDt DateTime  `xml:"ReqdExctnDt"`
	XpryDt      *DateTime `xml:"XpryDt,omitempty"`
	Dbtr        Party     `xml:"Dbtr"`
	DbtrAcct    *Account  `xml:"DbtrAcct,omitempty"`
	DbtrAgt     Agent     `xml:"DbtrAgt"`
	ChrgBr      string    `xml:"ChrgBr,omitempty"`
	Tx          Pain013Tx `xml:"CdtTrfTx"`
}

// Pain013Tx is the requested transfer.
type Pain013Tx struct {
	PmtID    PaymentID   `xml:"PmtId"`
	Amt      Amount      `xml:"Amt>InstdAmt"`
	ChrgBr   string      `xml:"ChrgBr"`
	CdtrAgt  Agent       `xml:"CdtrAgt"`
	Cdtr     Party       `xml:"Cdtr"`
	CdtrAcct *Account    `xml:"CdtrAcct,omitempty"`
	RmtInf   *Remittance `xml:"RmtInf,omitempty"`
}

// Camt055 is a customer payment cancellation request: an RTP withdrawn.
type Camt055 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:camt.055.001.08 Document"`
	Req     Camt055Req `xml:"CstmrPmtCxlReq"`
}

// Camt055Req is the cancellation: who asks whom, and what.
type Camt055Req struct {
	Assgnmt  Assignment   `xml:"Assgnmt"`
	CtrlData *ControlData `xml:"CtrlData,omitempty"`
	Undrlyg  Camt055Undrl `xml:"Undrlyg"`
}

// Assignment is the case: its id, the assigner, the assignee, when.
type Assignment struct {
	ID      string       `xml:"Id"`
	Assgnr  PartyOrAgent `xml:"Assgnr"`
	Assgne  PartyOrAgent `xml:"Assgne"`
	CreDtTm string       `xml:"CreDtTm"`
}

// ControlData is the number of transactions.
type ControlData struct {
	NbOfTxs string `xml:"NbOfTxs"`
}

// Camt055Undrl names the RTP to cancel.
type Camt055Undrl struct {
	PmtInf Camt055PmtInf `xml:"OrgnlPmtInfAndCxl"`
}

// Camt055PmtInf is the original payment information and its transaction.
type Camt055PmtInf struct {
	OrgnlPmtInfID string    `xml:"OrgnlPmtInfId"`
	Tx            Camt055Tx `xml:"TxInf"`
}

// Camt055Tx is the transaction to cancel, with the reason.
type Camt055Tx struct {
	CxlID           string      `xml:"CxlId"`
	OrgnlEndToEndID string      `xml:"OrgnlEndToEndId"`
	OrgnlInstdAmt   Amount      `xml:"OrgnlInstdAmt"`
	CxlRsnInf       *ReasonInfo `xml:"CxlRsnInf,omitempty"`
}

// StatusTx is one transaction's status in pain.014 and pacs.002.
type StatusTx struct {
	OrgnlEndToEndID string      `xml:"OrgnlEndToEndId,omitempty"`
	OrgnlTxID       string      `xml:"OrgnlTxId,omitempty"`
	TxSts           string      `xml:"TxSts,omitempty"`
	StsRsnInf       *ReasonInfo `xml:"StsRsnInf,omitempty"`
}

// ReasonCode is the status's reason code, "" when none is given.
func (s StatusTx) ReasonCode() string {
	if s.StsRsnInf == nil || s.StsRsnInf.Rsn == nil {
		return ""
	}
	return s.StsRsnInf.Rsn.Cd
}

// OriginalGroup names the message a status reports on.
type OriginalGroup struct {
	OrgnlMsgID   string `xml:"OrgnlMsgId"`
	OrgnlMsgNmID string `xml:"OrgnlMsgNmId"`
}

// Pain014 is a creditor payment activation request status report: the
// payer's bank says an RTP was accepted (ACCP) or rejected (RJCT).
type Pain014 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:pain.014.001.07 Document"`
	Rpt     Pain014Rpt `xml:"CdtrPmtActvtnReqStsRpt"`
}

// Pain014Rpt is the report.
type Pain014Rpt struct {
	GrpHdr  GroupHeader     `xml:"GrpHdr"`
	OrgnlGr OriginalGroup   `xml:"OrgnlGrpInfAndSts"`
	PmtInfs []Pain014PmtInf `xml:"OrgnlPmtInfAndSts"`
}

// Pain014PmtInf is the RTP's payment information and its status.
type Pain014PmtInf struct {
	OrgnlPmtInfID string     `xml:"OrgnlPmtInfId"`
	Txs           []StatusTx `xml:"TxInfAndSts"`
}

// Pacs008 is an FI-to-FI customer credit transfer: a payer's money.
type Pacs008 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08 Document"`
	Msg     Pacs008Msg `xml:"FIToFICstmrCdtTrf"`
}

// Pacs008Msg is the header and the transfers (payd takes one a message).
type Pacs008Msg struct {
	GrpHdr GroupHeader `xml:"GrpHdr"`
	Txs    []CreditTx  `xml:"CdtTrfTxInf"`
}

// CreditTx is one credit transfer.
type CreditTx struct {
	PmtID       PaymentID   `xml:"PmtId"`
	Amt         Amount      `xml:"IntrBkSttlmAmt"`
	AccptncDtTm string      `xml:"AccptncDtTm,omitempty"`
	ChrgBr      string      `xml:"ChrgBr"`
	Dbtr        Party       `xml:"Dbtr"`
	DbtrAcct    *Account    `xml:"DbtrAcct,omitempty"`
	DbtrAgt     Agent       `xml:"DbtrAgt"`
	CdtrAgt     Agent       `xml:"CdtrAgt"`
	Cdtr        Party       `xml:"Cdtr"`
	CdtrAcct    *Account    `xml:"CdtrAcct,omitempty"`
	RmtInf      *Remittance `xml:"RmtInf,omitempty"`
}

// Ustrd is the transfer's free text, its lines joined.
func (c CreditTx) Ustrd() string {
	if c.RmtInf == nil {
		return ""
	}
	return strings.Join(c.RmtInf.Ustrd, " ")
}

// Pacs002 is an FI-to-FI payment status report: payd's answer to a
// pacs.008, and the connector's news of a refund's return.
type Pacs002 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10 Document"`
	Rpt     Pacs002Rpt `xml:"FIToFIPmtStsRpt"`
}

// Pacs002Rpt is the report.
type Pacs002Rpt struct {
	GrpHdr  GroupHeader    `xml:"GrpHdr"`
	OrgnlGr *OriginalGroup `xml:"OrgnlGrpInfAndSts,omitempty"`
	Txs     []StatusTx     `xml:"TxInfAndSts"`
}

// Pacs004 is a payment return: a refund's money going back to the payer.
type Pacs004 struct {
	XMLName xml.Name   `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.004.001.09 Document"`
	Msg     Pacs004Msg `xml:"PmtRtr"`
}

// Pacs004Msg is the header and the one return.
type Pacs004Msg struct {
	GrpHdr GroupHeader `xml:"GrpHdr"`
	Tx     ReturnTx    `xml:"TxInf"`
}

// ReturnTx is one return, referencing the original credit.
type ReturnTx struct {
	RtrID           string         `xml:"RtrId"`
	OrgnlEndToEndID string         `xml:"OrgnlEndToEndId,omitempty"`
	OrgnlTxID       string         `xml:"OrgnlTxId,omitempty"`
	OrgnlAmt        *Amount        `xml:"OrgnlIntrBkSttlmAmt,omitempty"`
	RtrdAmt         Amount         `xml:"RtrdIntrBkSttlmAmt"`
	ChrgBr          string         `xml:"ChrgBr,omitempty"`
	RtrRsnInf       *ReasonInfo    `xml:"RtrRsnInf,omitempty"`
	OrgnlTxRef      *OriginalTxRef `xml:"OrgnlTxRef,omitempty"`
}

// OriginalTxRef is the original credit's parties.
type OriginalTxRef struct {
	Dbtr     *PartyOrAgent `xml:"Dbtr,omitempty"`
	DbtrAcct *Account      `xml:"DbtrAcct,omitempty"`
	CdtrAgt  *Agent        `xml:"CdtrAgt,omitempty"`
	Cdtr     *PartyOrAgent `xml:"Cdtr,omitempty"`
	CdtrAcct *Account      `xml:"CdtrAcct,omitempty"`
}

// PartyNamed is a party by name, as Party40Choice; nil without a name.
func PartyNamed(name string) *PartyOrAgent {
	if name = Text(name, MaxName); name == "" {
		return nil
	}
	return &PartyOrAgent{Pty: &Party{Name: name}}
}

// Statuses, codes and limits payd reads and writes.
const (
	StatusAccepted   = "ACCP" // pain.014: the payer accepted
	StatusCredited   = "ACCC" // pacs.002: settlement on the creditor's account completed (payd's answer to an applied credit)
	StatusSettled    = "ACSC" // pacs.002: settlement completed (a refund's return)
	StatusPending    = "PDNG" // pacs.002: taken, not settled yet
	StatusRejected   = "RJCT"
	ReasonCustomer   = "CUST" // camt.055 and pacs.004: requested by the customer (the merchant)
	ChargesShared    = "SLEV" // charges follow the service level (the scheme's rules)
	PaymentTransfer  = "TRF"
	SettlementClring = "CLRG"

	// ISO field lengths payd writes to: longer texts are cut (Text).
	MaxName           = 140 // Max140Text: Nm
	MaxRemittance     = 140 // Max140Text: RmtInf/Ustrd
	MaxAdditionalInfo = 105 // Max105Text: AddtlInf
	MaxID             = 35  // Max35Text: MsgId, EndToEndId, TxId, …
)

// Text is s cut to at most max characters (ISO counts characters, not
// bytes), without trailing spaces; payd keeps the whole text.
func Text(s string, max int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return strings.TrimSpace(s[:i])
		}
		n++
	}
	return s
}

// Mobile writes a phone alias (373XXXXXXXX) in ISO's phone format:
// +373-XXXXXXXX.
func Mobile(alias string) string {
	if len(alias) > 3 && strings.HasPrefix(alias, "373") {
		return "+373-" + alias[3:]
	}
	return alias
}

// AliasOf reads an alias back from ISO's phone format.
func AliasOf(mobile string) string {
	return strings.ReplaceAll(strings.TrimPrefix(mobile, "+"), "-", "")
}

// ReasonCode is the ISO status reason of a pacs.002 for why payd refused a
// credit (payd.Refusal); docs/rails.md has the table.
func ReasonCode(refusal string) string {
	switch refusal {
	case payd.RefusedUnknown:
		return "NARR" // Narrative: no ISO code says "unknown reference"; AddtlInf says it
	case payd.RefusedAccount:
		return "AC03" // InvalidCreditorAccountNumber: not the account of the target's merchant, or none
	case payd.RefusedPaid:
		return "DUPL" // DuplicatePayment: the target was paid already
	case payd.RefusedCancelled:
		return "AC04" // ClosedAccountNumber: the target was cancelled
	case payd.RefusedAmount:
		return "AM09" // WrongAmount
	case payd.RefusedExpired:
		return "TM01" // InvalidCutOffTime: past the target's deadline
	case payd.RefusedCurrency:
		return "AM11" // InvalidTransactionCurrency
	case payd.RefusedMerchant:
		return "AG01" // TransactionForbidden: the merchant is not active
	}
	return "AC04" // ClosedAccountNumber: the target cannot be paid in its state (rejected, inactive, finished)
}

// reasonText is the AddtlInf of a refusal whose code needs words.
func reasonText(code string) string {
	if code == "NARR" {
		return "No QR code, extension or RTP of the creditor's account has this reference."
	}
	return ""
}

// Time formats an ISODateTime in UTC with milliseconds.
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ParseTimeValue reads an ISODateTime (with or without fraction and offset).
func ParseTimeValue(s string) (time.Time, error) {
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("bad ISODateTime %q", s)
}

// Marshal renders a message with the XML declaration: the messages payd
// writes without reflection (write.go), the others through encoding/xml.
func Marshal(v any) ([]byte, error) {
	if m, ok := v.(message); ok {
		w := xmlWriter{b: make([]byte, 0, 2048)}
		w.b = append(w.b, xml.Header...)
		m.writeXML(&w)
		return append(w.b, '\n'), nil
	}
	return marshalReflect(v)
}

// marshalReflect is Marshal through encoding/xml.
func marshalReflect(v any) ([]byte, error) {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// ErrUnknownMessage is a document whose namespace payd does not speak.
var ErrUnknownMessage = errors.New("unknown ISO 20022 message")

// Namespace reads the namespace of a document's root element.
func Namespace(body []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("not an ISO 20022 document: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "Document" {
				return "", ErrUnknownMessage
			}
			return se.Name.Space, nil
		}
	}
}
