// Package iso20022 is payd's production rails adapter: it speaks ISO 20022
// XML to a bank-side connector over HTTPS, one message per POST, signed
// both ways (docs/rails.md is the connector's specification).
//
// Outbound, the rails outbox hands it orders: an RTP goes out as pain.013,
// its cancellation as camt.055, a refund's return of funds as pacs.004.
// Inbound, the connector POSTs to /rails/iso20022: pain.014 (the payer
// accepted or rejected an RTP), pacs.008 (a payer's credit for a QR, an
// extension or an RTP, answered with pacs.002) and pacs.002 (a refund's
// return settled or rejected). Every inbound message is applied through the
// Ledger use cases, once per MsgId.
//
// The message structs carry only the elements payd reads or writes;
// amounts are exact decimals with two fraction digits, never floats.
package iso20022

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"

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

// Money parses an ISO amount exactly: digits with at most two fraction
// digits (ISO's decimal has no sign or exponent here).
func (a Amount) Money() (payd.Money, error) {
	v := strings.TrimSpace(a.Value)
	if v == "" || strings.Trim(v, "0123456789.") != "" {
		return 0, fmt.Errorf("bad amount %q", a.Value)
	}
	return payd.ParseMoney(v)
}

// GroupHeader is every message's GrpHdr.
type GroupHeader struct {
	MsgID    string      `xml:"MsgId"`
	CreDtTm  string      `xml:"CreDtTm"`
	NbOfTxs  string      `xml:"NbOfTxs,omitempty"`
	SttlmInf *Settlement `xml:"SttlmInf,omitempty"`
}

// Settlement is GrpHdr/SttlmInf.
type Settlement struct {
	Mtd string `xml:"SttlmMtd"`
}

// Clearing is the settlement of every credit and return: CLRG.
func Clearing() *Settlement { return &Settlement{Mtd: SettlementClring} }

// Account is a cash account: an IBAN, or a proxy such as a phone alias.
type Account struct {
	ID    *AccountID `xml:"Id,omitempty"`
	Proxy *Proxy     `xml:"Prxy,omitempty"`
}

// AccountID is Acct/Id.
type AccountID struct {
	IBAN string `xml:"IBAN"`
}

// IBAN is an account identified by its IBAN ("" gives no Id).
func IBAN(iban string) Account {
	if iban == "" {
		return Account{}
	}
	return Account{ID: &AccountID{IBAN: iban}}
}

// IBANValue is the account's IBAN, or "".
func (a Account) IBANValue() string {
	if a.ID == nil {
		return ""
	}
	return a.ID.IBAN
}

// Proxy identifies an account by an alias: Tp/Cd TELE and the phone number.
type Proxy struct {
	Type string `xml:"Tp>Cd"`
	ID   string `xml:"Id"`
}

// Party is a party by name.
type Party struct {
	Name string `xml:"Nm"`
}

// Pain013 is a creditor payment activation request: an RTP.
type Pain013 struct {
	XMLName xml.Name      `xml:"urn:iso:std:iso:20022:tech:xsd:pain.013.001.07 Document"`
	GrpHdr  GroupHeader   `xml:"CdtrPmtActvtnReq>GrpHdr"`
	PmtInf  Pain013PmtInf `xml:"CdtrPmtActvtnReq>PmtInf"`
}

// Pain013PmtInf is the RTP's payment information.
type Pain013PmtInf struct {
	PmtInfID    string    `xml:"PmtInfId"`
	PmtMtd      string    `xml:"PmtMtd"`
	ReqdExctnDt string    `xml:"ReqdExctnDt>DtTm"`
	XpryDt      string    `xml:"XpryDt>DtTm"`
	DbtrAcct    Account   `xml:"DbtrAcct"`
	Tx          Pain013Tx `xml:"CdtTrfTx"`
}

// Pain013Tx is the requested transfer.
type Pain013Tx struct {
	EndToEndID string  `xml:"PmtId>EndToEndId"`
	Amt        Amount  `xml:"Amt>InstdAmt"`
	Cdtr       Party   `xml:"Cdtr"`
	CdtrAcct   Account `xml:"CdtrAcct"`
	Ustrd      string  `xml:"RmtInf>Ustrd,omitempty"`
}

// Camt055 is a customer payment cancellation request: an RTP withdrawn.
type Camt055 struct {
	XMLName xml.Name  `xml:"urn:iso:std:iso:20022:tech:xsd:camt.055.001.08 Document"`
	ID      string    `xml:"CstmrPmtCxlReq>Assgnmt>Id"`
	CreDtTm string    `xml:"CstmrPmtCxlReq>Assgnmt>CreDtTm"`
	Cxl     Camt055Tx `xml:"CstmrPmtCxlReq>Undrlyg>OrgnlPmtInfAndCxl"`
}

// Camt055Tx names the RTP to cancel.
type Camt055Tx struct {
	OrgnlPmtInfID   string `xml:"OrgnlPmtInfId"`
	CxlID           string `xml:"TxInf>CxlId"`
	OrgnlEndToEndID string `xml:"TxInf>OrgnlEndToEndId"`
	OrgnlInstdAmt   Amount `xml:"TxInf>OrgnlInstdAmt"`
	Rsn             string `xml:"TxInf>CxlRsnInf>Rsn>Cd"`
	AddtlInf        string `xml:"TxInf>CxlRsnInf>AddtlInf,omitempty"`
}

// StatusTx is one transaction's status in pain.014 and pacs.002.
type StatusTx struct {
	OrgnlEndToEndID string `xml:"OrgnlEndToEndId,omitempty"`
	OrgnlTxID       string `xml:"OrgnlTxId,omitempty"`
	TxSts           string `xml:"TxSts"`
	Rsn             string `xml:"StsRsnInf>Rsn>Cd,omitempty"`
	AddtlInf        string `xml:"StsRsnInf>AddtlInf,omitempty"`
}

// Pain014 is a creditor payment activation request status report: the
// payer's bank says an RTP was accepted (ACCP) or rejected (RJCT).
type Pain014 struct {
	XMLName      xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:pain.014.001.07 Document"`
	GrpHdr       GroupHeader `xml:"CdtrPmtActvtnReqStsRpt>GrpHdr"`
	OrgnlMsgID   string      `xml:"CdtrPmtActvtnReqStsRpt>OrgnlGrpInfAndSts>OrgnlMsgId"`
	OrgnlMsgNmID string      `xml:"CdtrPmtActvtnReqStsRpt>OrgnlGrpInfAndSts>OrgnlMsgNmId"`
	Tx           StatusTx    `xml:"CdtrPmtActvtnReqStsRpt>OrgnlPmtInfAndSts>TxInfAndSts"`
}

// Pacs008 is an FI-to-FI customer credit transfer: a payer's money.
type Pacs008 struct {
	XMLName xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08 Document"`
	GrpHdr  GroupHeader `xml:"FIToFICstmrCdtTrf>GrpHdr"`
	Txs     []CreditTx  `xml:"FIToFICstmrCdtTrf>CdtTrfTxInf"`
}

// CreditTx is one credit transfer.
type CreditTx struct {
	EndToEndID  string  `xml:"PmtId>EndToEndId"`
	TxID        string  `xml:"PmtId>TxId"`
	Amt         Amount  `xml:"IntrBkSttlmAmt"`
	AccptncDtTm string  `xml:"AccptncDtTm,omitempty"`
	Dbtr        Party   `xml:"Dbtr"`
	DbtrAcct    Account `xml:"DbtrAcct"`
	Ustrd       string  `xml:"RmtInf>Ustrd,omitempty"`
}

// Pacs002 is an FI-to-FI payment status report: payd's answer to a
// pacs.008, and the connector's news of a refund's return.
type Pacs002 struct {
	XMLName      xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.002.001.10 Document"`
	GrpHdr       GroupHeader `xml:"FIToFIPmtStsRpt>GrpHdr"`
	OrgnlMsgID   string      `xml:"FIToFIPmtStsRpt>OrgnlGrpInfAndSts>OrgnlMsgId"`
	OrgnlMsgNmID string      `xml:"FIToFIPmtStsRpt>OrgnlGrpInfAndSts>OrgnlMsgNmId"`
	Tx           StatusTx    `xml:"FIToFIPmtStsRpt>TxInfAndSts"`
}

// Pacs004 is a payment return: a refund's money going back to the payer.
type Pacs004 struct {
	XMLName xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:pacs.004.001.09 Document"`
	GrpHdr  GroupHeader `xml:"PmtRtr>GrpHdr"`
	Tx      ReturnTx    `xml:"PmtRtr>TxInf"`
}

// ReturnTx is one return, referencing the original credit.
type ReturnTx struct {
	RtrID           string `xml:"RtrId"`
	OrgnlEndToEndID string `xml:"OrgnlEndToEndId"`
	OrgnlTxID       string `xml:"OrgnlTxId,omitempty"`
	OrgnlAmt        Amount `xml:"OrgnlIntrBkSttlmAmt"`
	RtrdAmt         Amount `xml:"RtrdIntrBkSttlmAmt"`
	Rsn             string `xml:"RtrRsnInf>Rsn>Cd"`
	AddtlInf        string `xml:"RtrRsnInf>AddtlInf,omitempty"`
	OrgnlDbtr       string `xml:"OrgnlTxRef>Dbtr>Pty>Nm,omitempty"`
	OrgnlDbtrIBAN   string `xml:"OrgnlTxRef>DbtrAcct>Id>IBAN,omitempty"`
	OrgnlCdtr       string `xml:"OrgnlTxRef>Cdtr>Pty>Nm,omitempty"`
	OrgnlCdtrIBAN   string `xml:"OrgnlTxRef>CdtrAcct>Id>IBAN,omitempty"`
}

// Statuses and reason codes payd reads and writes.
const (
	StatusAccepted   = "ACCP" // pain.014: the payer accepted
	StatusSettled    = "ACSC" // pacs.002: accepted and settled
	StatusPending    = "PDNG" // pacs.002: taken, not settled yet
	StatusRejected   = "RJCT"
	ReasonCustomer   = "CUST" // camt.055 and pacs.004: requested by the customer (the merchant)
	ProxyPhone       = "TELE" // an alias is a phone number
	PaymentTransfer  = "TRF"
	SettlementClring = "CLRG"
)

// ReasonCode is the ISO status reason of pacs.002 for why payd refused a
// credit (payd.Refusal).
func ReasonCode(refusal string) string {
	switch refusal {
	case payd.RefusedUnknown:
		return "AC01" // IncorrectAccountNumber: no such QR, extension or RTP
	case payd.RefusedAmount:
		return "AM09" // WrongAmount
	case payd.RefusedExpired:
		return "TM01" // InvalidCutOffTime: past the target's deadline
	case payd.RefusedCurrency:
		return "AM11" // InvalidTransactionCurrency
	case payd.RefusedMerchant:
		return "AG01" // TransactionForbidden: the merchant is not active
	}
	return "AC04" // ClosedAccountNumber: the target is paid, cancelled or inactive
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

// Marshal renders a message with the XML declaration.
func Marshal(v any) ([]byte, error) {
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
