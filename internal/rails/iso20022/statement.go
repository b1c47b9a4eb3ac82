package iso20022

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"time"

	"payd"
)

// Statements: the bank's account statements, camt.053 at the end of each
// day and camt.054 notifications during it, which payd reconciles with
// its payments and refunds (payd.MatchEntries).

const (
	NSCamt053 = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
	NSCamt054 = "urn:iso:std:iso:20022:tech:xsd:camt.054.001.08"
)

// Camt053 is a bank-to-customer statement: the day's bookings of accounts.
type Camt053 struct {
	XMLName xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:camt.053.001.08 Document"`
	Body    Camt053Body `xml:"BkToCstmrStmt"`
}

// Camt053Body is the statement message.
type Camt053Body struct {
	GrpHdr StatementHeader `xml:"GrpHdr"`
	Stmts  []AccountReport `xml:"Stmt"`
}

// Camt054 is a bank-to-customer debit/credit notification: bookings as
// they happen.
type Camt054 struct {
	XMLName xml.Name    `xml:"urn:iso:std:iso:20022:tech:xsd:camt.054.001.08 Document"`
	Body    Camt054Body `xml:"BkToCstmrDbtCdtNtfctn"`
}

// Camt054Body is the notification message.
type Camt054Body struct {
	GrpHdr  StatementHeader `xml:"GrpHdr"`
	Ntfctns []AccountReport `xml:"Ntfctn"`
}

// StatementHeader is GrpHdr of camt.053 and camt.054.
type StatementHeader struct {
	MsgID   string `xml:"MsgId"`
	CreDtTm string `xml:"CreDtTm"`
}

// AccountReport is one account's Stmt (camt.053) or Ntfctn (camt.054),
// its elements in the order both schemas share (a notification has no
// balances).
type AccountReport struct {
	ID      string    `xml:"Id"`
	CreDtTm string    `xml:"CreDtTm,omitempty"`
	FrToDt  *Period   `xml:"FrToDt,omitempty"`
	Acct    Account   `xml:"Acct"`
	Bal     []Balance `xml:"Bal"`
	Ntries  []Entry   `xml:"Ntry"`
}

// Period is FrToDt.
type Period struct {
	FrDtTm string `xml:"FrDtTm"`
	ToDtTm string `xml:"ToDtTm"`
}

// Balance is one of a statement's balances (OPBD, CLBD).
type Balance struct {
	Tp        string     `xml:"Tp>CdOrPrtry>Cd"`
	Amt       Amount     `xml:"Amt"`
	CdtDbtInd string     `xml:"CdtDbtInd"`
	Dt        DateChoice `xml:"Dt"`
}

// DateChoice is a date or a date and time.
type DateChoice struct {
	Dt   string `xml:"Dt,omitempty"`
	DtTm string `xml:"DtTm,omitempty"`
}

// Date is the choice's date, YYYY-MM-DD ("" when none).
func (d *DateChoice) Date() string {
	switch {
	case d == nil:
		return ""
	case d.Dt != "":
		return d.Dt
	case d.DtTm != "":
		if t, err := ParseTimeValue(d.DtTm); err == nil {
			return t.UTC().Format(time.DateOnly)
		}
	}
	return ""
}

// Entry is one booking (Ntry).
type Entry struct {
	NtryRef     string         `xml:"NtryRef,omitempty"`
	Amt         Amount         `xml:"Amt"`
	CdtDbtInd   string         `xml:"CdtDbtInd"`
	Sts         string         `xml:"Sts>Cd"`
	BookgDt     *DateChoice    `xml:"BookgDt,omitempty"`
	ValDt       *DateChoice    `xml:"ValDt,omitempty"`
	AcctSvcrRef string         `xml:"AcctSvcrRef,omitempty"`
	BkTxCd      BankTxCode     `xml:"BkTxCd"`
	NtryDtls    []EntryDetails `xml:"NtryDtls"`
}

// BankTxCode is the ISO bank transaction code of an entry.
type BankTxCode struct {
	Domain    string `xml:"Domn>Cd"`
	Family    string `xml:"Domn>Fmly>Cd"`
	SubFamily string `xml:"Domn>Fmly>SubFmlyCd"`
}

// Codes of the bookings payd reads: a received credit transfer, and the
// return of one.
var (
	CodeReceivedCredit = BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}
	CodeReturn         = BankTxCode{Domain: "PMNT", Family: "ICDT", SubFamily: "RRTN"}
)

// EntryDetails is NtryDtls: the entry's transactions.
type EntryDetails struct {
	TxDtls []TxDetails `xml:"TxDtls"`
}

// TxDetails is one transaction of an entry.
type TxDetails struct {
	Refs      *TxRefs     `xml:"Refs,omitempty"`
	Amt       *Amount     `xml:"Amt,omitempty"`
	CdtDbtInd string      `xml:"CdtDbtInd,omitempty"`
	RmtInf    *Remittance `xml:"RmtInf,omitempty"`
}

// TxRefs are a transaction's references, in the schema's order.
type TxRefs struct {
	MsgID       string `xml:"MsgId,omitempty"`
	AcctSvcrRef string `xml:"AcctSvcrRef,omitempty"`
	EndToEndID  string `xml:"EndToEndId,omitempty"`
	TxID        string `xml:"TxId,omitempty"`
}

// ReadStatement reads a camt.053 or camt.054 strictly (as every message
// payd takes) into payd's view: the accounts, and each booked entry as one
// StatementEntry per transaction. Pending entries (Sts other than BOOK)
// are not bookings and are left out.
func ReadStatement(body []byte) (*payd.Statement, error) {
	ns, err := Namespace(body)
	if err != nil {
		return nil, err
	}
	var hdr StatementHeader
	var reports []AccountReport
	st := &payd.Statement{}
	switch ns {
	case NSCamt053:
		var m Camt053
		if err := decodeStrict(body, &m); err != nil {
			return nil, fmt.Errorf("camt.053: %w", err)
		}
		hdr, reports, st.Kind, st.EndOfDay = m.Body.GrpHdr, m.Body.Stmts, "camt.053", true
	case NSCamt054:
		var m Camt054
		if err := decodeStrict(body, &m); err != nil {
			return nil, fmt.Errorf("camt.054: %w", err)
		}
		hdr, reports, st.Kind = m.Body.GrpHdr, m.Body.Ntfctns, "camt.054"
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnknownMessage, ns)
	}
	if err := checkMsgID(hdr.MsgID); err != nil {
		return nil, fmt.Errorf("%s: %w", st.Kind, err)
	}
	created, err := ParseTimeValue(hdr.CreDtTm)
	if err != nil {
		return nil, fmt.Errorf("%s: GrpHdr/CreDtTm: %w", st.Kind, err)
	}
	st.MsgID, st.CreatedAt = hdr.MsgID, created
	if len(reports) == 0 {
		return nil, fmt.Errorf("%s: no Stmt or Ntfctn", st.Kind)
	}
	for i, r := range reports {
		acct := payd.NormalizeIBAN(r.Acct.IBAN)
		if !ibanRE.MatchString(acct) {
			return nil, fmt.Errorf("%s: report %d: Acct/Id/IBAN %q is not an IBAN", st.Kind, i+1, r.Acct.IBAN)
		}
		rep := payd.StatementReport{ID: r.ID, Account: acct, From: created.UTC().Format(time.DateOnly)}
		rep.To = rep.From
		if r.FrToDt != nil {
			from, err1 := ParseTimeValue(r.FrToDt.FrDtTm)
			to, err2 := ParseTimeValue(r.FrToDt.ToDtTm)
			if err1 != nil || err2 != nil || to.Before(from) {
				return nil, fmt.Errorf("%s: report %d: FrToDt is not a period", st.Kind, i+1)
			}
			rep.From, rep.To = from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly)
		}
		for j, n := range r.Ntries {
			if n.Sts != "BOOK" {
				continue
			}
			entries, err := readEntry(st.MsgID, acct, i, j, n, created)
			if err != nil {
				return nil, fmt.Errorf("%s: report %d, entry %d: %w", st.Kind, i+1, j+1, err)
			}
			rep.Entries = append(rep.Entries, entries...)
		}
		st.Reports = append(st.Reports, rep)
	}
	return st, nil
}

// readEntry is one booked Ntry as payd's entries: one for each of its
// transactions that carries its own amount, else one for the whole entry.
func readEntry(msgID, acct string, ri, ni int, n Entry, created time.Time) ([]payd.StatementEntry, error) {
	dir := map[string]string{"CRDT": payd.DirCredit, "DBIT": payd.DirDebit}[n.CdtDbtInd]
	if dir == "" {
		return nil, fmt.Errorf("CdtDbtInd %q is neither CRDT nor DBIT", n.CdtDbtInd)
	}
	if !ccyRE.MatchString(n.Amt.Ccy) {
		return nil, fmt.Errorf("Amt needs its Ccy, not %q", n.Amt.Ccy)
	}
	amount, err := n.Amt.Money()
	if err != nil || amount <= 0 {
		return nil, fmt.Errorf("Amt %q is not a positive amount of at most two decimals", n.Amt.Value)
	}
	date := n.BookgDt.Date()
	if date == "" {
		date = n.ValDt.Date()
	}
	if date == "" {
		date = created.UTC().Format(time.DateOnly)
	}
	base := payd.StatementEntry{Account: acct, BookingDate: date, Direction: dir, Amount: amount, Currency: n.Amt.Ccy,
		EntryRef: n.NtryRef, BankRef: n.AcctSvcrRef}
	var txs []TxDetails
	for _, d := range n.NtryDtls {
		txs = append(txs, d.TxDtls...)
	}
	split := len(txs) > 1
	var out []payd.StatementEntry
	for k, tx := range txs {
		e := base
		if tx.Refs != nil {
			e.EndToEndID, e.TxID = payd.NormalizeRef(tx.Refs.EndToEndID), payd.NormalizeRef(tx.Refs.TxID)
		}
		if split {
			if tx.Amt == nil {
				return nil, fmt.Errorf("a batch booking's transaction %d has no Amt", k+1)
			}
			if e.Amount, err = tx.Amt.Money(); err != nil || e.Amount <= 0 {
				return nil, fmt.Errorf("transaction %d: Amt %q is not a positive amount", k+1, tx.Amt.Value)
			}
			e.Currency = tx.Amt.Ccy
		}
		e.ID = entryID(msgID, acct, n.AcctSvcrRef, n.NtryRef, ri, ni, k, split)
		out = append(out, e)
	}
	if len(out) == 0 {
		base.ID = entryID(msgID, acct, n.AcctSvcrRef, n.NtryRef, ri, ni, 0, false)
		out = append(out, base)
	}
	return out, nil
}

// entryID is payd's id of a booking: the bank's reference of it on the
// account (the same booking in the day's notification and its end-of-day
// statement is one entry), else the entry's place in its message.
func entryID(msgID, acct, bankRef, entryRef string, ri, ni, ti int, split bool) string {
	key := "ref\x00" + acct + "\x00" + bankRef
	switch {
	case bankRef == "" && entryRef != "":
		key = "ntry\x00" + acct + "\x00" + entryRef
	case bankRef == "":
		key = fmt.Sprintf("pos\x00%s\x00%d\x00%d", msgID, ri, ni)
	}
	if split {
		key += fmt.Sprintf("\x00tx%d", ti)
	}
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}
