package iso20022

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"payd"
)

// Statements: the bank's account statements, camt.053 at the end of each
// day and camt.054 notifications during it, in the versions banks send
// (.001.02 and .001.04 of 2009, and .001.08), read into one model
// (payd.Statement) which payd reconciles with its payments and refunds.
// The document is read against its version's schema (strict.go) and as a
// stream: each entry is decoded and kept as payd's compact form, so a
// statement of tens of MiB costs its entries, not a tree of it.

// The statements' namespaces payd reads.
var statementNS = map[string]struct{ kind, version string }{
	"urn:iso:std:iso:20022:tech:xsd:camt.053.001.02": {payd.KindCamt053, "001.02"},
	"urn:iso:std:iso:20022:tech:xsd:camt.053.001.04": {payd.KindCamt053, "001.04"},
	"urn:iso:std:iso:20022:tech:xsd:camt.053.001.08": {payd.KindCamt053, "001.08"},
	"urn:iso:std:iso:20022:tech:xsd:camt.054.001.02": {payd.KindCamt054, "001.02"},
	"urn:iso:std:iso:20022:tech:xsd:camt.054.001.04": {payd.KindCamt054, "001.04"},
	"urn:iso:std:iso:20022:tech:xsd:camt.054.001.08": {payd.KindCamt054, "001.08"},
}

// The newest versions' namespaces, which payd-bank writes by default.
const (
	NSCamt053 = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
	NSCamt054 = "urn:iso:std:iso:20022:tech:xsd:camt.054.001.08"
)

// IsStatement reports whether ns is a statement's namespace payd reads.
func IsStatement(ns string) bool { _, ok := statementNS[ns]; return ok }

// The structures an entry's parts decode into. They hold what every
// version has; where versions differ (a status as text or as a code, a
// transaction's amount of its own or in AmtDtls, a party's name in Pty or
// not) both forms are fields and the reader takes whichever is there.

type xAmount struct {
	Value string `xml:",chardata"`
	Ccy   string `xml:"Ccy,attr"`
}

type xDate struct {
	Dt   string `xml:"Dt"`
	DtTm string `xml:"DtTm"`
}

type xCode struct {
	Domain    string `xml:"Domn>Cd"`
	Family    string `xml:"Domn>Fmly>Cd"`
	SubFamily string `xml:"Domn>Fmly>SubFmlyCd"`
	Prtry     string `xml:"Prtry>Cd"`
}

type xStatus struct {
	Text  string `xml:",chardata"` // .001.02 and .001.04: BOOK
	Cd    string `xml:"Cd"`        // .001.08: <Cd>BOOK</Cd>
	Prtry string `xml:"Prtry"`
}

func (s xStatus) code() string {
	if s.Cd != "" {
		return strings.TrimSpace(s.Cd)
	}
	if s.Prtry != "" {
		return strings.TrimSpace(s.Prtry)
	}
	return strings.TrimSpace(s.Text)
}

type xParty struct {
	Nm    string `xml:"Nm"`
	PtyNm string `xml:"Pty>Nm"` // .001.08
}

func (p *xParty) name() string {
	if p == nil {
		return ""
	}
	if p.PtyNm != "" {
		return p.PtyNm
	}
	return p.Nm
}

type xTx struct {
	Refs struct {
		MsgID       string `xml:"MsgId"`
		AcctSvcrRef string `xml:"AcctSvcrRef"`
		InstrID     string `xml:"InstrId"`
		EndToEndID  string `xml:"EndToEndId"`
		UETR        string `xml:"UETR"`
		TxID        string `xml:"TxId"`
	} `xml:"Refs"`
	Amt       *xAmount `xml:"Amt"` // .001.04 and later
	CdtDbtInd string   `xml:"CdtDbtInd"`
	AmtDtls   struct {
		TxAmt  *xAmount `xml:"TxAmt>Amt"`
		InstdA *xAmount `xml:"InstdAmt>Amt"`
	} `xml:"AmtDtls"`
	BkTxCd    xCode `xml:"BkTxCd"`
	RltdPties struct {
		Dbtr *xParty `xml:"Dbtr"`
		Cdtr *xParty `xml:"Cdtr"`
	} `xml:"RltdPties"`
	RmtInf struct {
		Ustrd []string `xml:"Ustrd"`
		Strd  []struct {
			Ref  string   `xml:"CdtrRefInf>Ref"`
			Addl []string `xml:"AddtlRmtInf"`
		} `xml:"Strd"`
	} `xml:"RmtInf"`
	RtrRsn string `xml:"RtrInf>Rsn>Cd"`
}

type xEntry struct {
	NtryRef     string   `xml:"NtryRef"`
	Amt         xAmount  `xml:"Amt"`
	CdtDbtInd   string   `xml:"CdtDbtInd"`
	RvslInd     string   `xml:"RvslInd"`
	Sts         xStatus  `xml:"Sts"`
	BookgDt     *xDate   `xml:"BookgDt"`
	ValDt       *xDate   `xml:"ValDt"`
	AcctSvcrRef string   `xml:"AcctSvcrRef"`
	BkTxCd      xCode    `xml:"BkTxCd"`
	Info        string   `xml:"AddtlNtryInf"`
	NtryDtls    []xBatch `xml:"NtryDtls"`
}

type xBatch struct {
	Btch *struct {
		NbOfTxs string   `xml:"NbOfTxs"`
		TtlAmt  *xAmount `xml:"TtlAmt"`
	} `xml:"Btch"`
	TxDtls []xTx `xml:"TxDtls"`
}

type xBalance struct {
	Tp        string  `xml:"Tp>CdOrPrtry>Cd"`
	Prtry     string  `xml:"Tp>CdOrPrtry>Prtry"`
	Amt       xAmount `xml:"Amt"`
	CdtDbtInd string  `xml:"CdtDbtInd"`
	Dt        xDate   `xml:"Dt"`
}

type xNumSum struct {
	Nb  string `xml:"NbOfNtries"`
	Sum string `xml:"Sum"`
}

type xSummary struct {
	Ttl struct {
		xNumSum
		NetAmt string `xml:"TtlNetNtryAmt"` // .001.02
		NetCdt string `xml:"CdtDbtInd"`     // .001.02
		Net    *struct {
			Amt       string `xml:"Amt"`
			CdtDbtInd string `xml:"CdtDbtInd"`
		} `xml:"TtlNetNtry"` // .001.04 and later
	} `xml:"TtlNtries"`
	Cdt *xNumSum `xml:"TtlCdtNtries"`
	Dbt *xNumSum `xml:"TtlDbtNtries"`
}

type xAccount struct {
	IBAN string `xml:"Id>IBAN"`
	Othr string `xml:"Id>Othr>Id"`
	Ccy  string `xml:"Ccy"`
}

type xPage struct {
	PgNb      string `xml:"PgNb"`
	LastPgInd string `xml:"LastPgInd"`
}

// StatementLimit bounds a statement: a busy day's camt.053 of a few
// hundred thousand entries (an inbound message of another kind is bounded
// by 256 KiB).
const StatementLimit = 32 << 20

// ReadStatement reads a camt.053 or camt.054 of a version payd knows into
// payd's model, dates in the bank's time zone loc. Only booked entries
// (Sts BOOK) are kept; pending ones are counted. A document payd cannot
// read as its schema says, or with a value that is not what its element
// must hold (a date that is not one, an amount of more than two decimals
// or without its currency, a status it does not know), is refused with
// the reason.
func ReadStatement(body []byte, loc *time.Location) (*payd.Statement, error) {
	ns, err := Namespace(body)
	if err != nil {
		return nil, err
	}
	v, ok := statementNS[ns]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownMessage, ns)
	}
	d, err := strictReader(body)
	if err != nil {
		return nil, err
	}
	st := &payd.Statement{Kind: v.kind, Version: v.version, EndOfDay: v.kind == payd.KindCamt053}
	r := &statementReader{d: d, st: st, loc: loc}
	if err := r.read(); err != nil {
		return nil, fmt.Errorf("%s.%s: %w", v.kind, v.version, err)
	}
	return st, nil
}

type statementReader struct {
	d   *xml.Decoder
	st  *payd.Statement
	loc *time.Location
}

// next is the next start element at this level, nil at its end.
func (r *statementReader) next() (*xml.StartElement, error) {
	for {
		tok, err := r.d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return &t, nil
		case xml.EndElement:
			return nil, nil
		}
	}
}

func (r *statementReader) read() error {
	doc, err := r.next()
	if err != nil || doc == nil {
		return fmt.Errorf("no document: %v", err)
	}
	msg, err := r.next()
	if err != nil || msg == nil {
		return fmt.Errorf("no message in the document: %v", err)
	}
	for {
		el, err := r.next()
		if err != nil {
			return err
		}
		if el == nil {
			break
		}
		switch el.Name.Local {
		case "GrpHdr":
			var h struct {
				MsgID   string `xml:"MsgId"`
				CreDtTm string `xml:"CreDtTm"`
				Pg      *xPage `xml:"MsgPgntn"`
			}
			if err := r.d.DecodeElement(&h, el); err != nil {
				return err
			}
			if err := checkMsgID(h.MsgID); err != nil {
				return err
			}
			t, err := r.dateTime(h.CreDtTm)
			if err != nil {
				return fmt.Errorf("GrpHdr/CreDtTm: %w", err)
			}
			r.st.MsgID, r.st.CreatedAt = h.MsgID, t
			r.st.Page, r.st.LastPage = 1, true
			if h.Pg != nil {
				if r.st.Page, r.st.LastPage, err = page(h.Pg); err != nil {
					return fmt.Errorf("GrpHdr/MsgPgntn: %w", err)
				}
			}
		case "Stmt", "Ntfctn":
			rep, err := r.report(el)
			if err != nil {
				return fmt.Errorf("report %d (%s): %w", len(r.st.Reports)+1, el.Name.Local, err)
			}
			r.st.Reports = append(r.st.Reports, *rep)
		default:
			if err := r.d.Skip(); err != nil {
				return err
			}
		}
	}
	if r.st.MsgID == "" {
		return errors.New("no GrpHdr")
	}
	if len(r.st.Reports) == 0 {
		return errors.New("no Stmt or Ntfctn")
	}
	return readToEnd(r.d)
}

func (r *statementReader) report(start *xml.StartElement) (*payd.StatementReport, error) {
	rep := &payd.StatementReport{}
	var from, to time.Time
	for {
		el, err := r.next()
		if err != nil {
			return nil, err
		}
		if el == nil {
			break
		}
		switch el.Name.Local {
		case "Id", "ElctrncSeqNb", "LglSeqNb", "CreDtTm":
			var s string
			if err := r.d.DecodeElement(&s, el); err != nil {
				return nil, err
			}
			s = strings.TrimSpace(s)
			switch el.Name.Local {
			case "Id":
				rep.ID = s
			case "ElctrncSeqNb":
				rep.ElectronicSeq = s
			case "LglSeqNb":
				rep.LegalSeq = s
			case "CreDtTm":
				if rep.CreatedAt, err = r.dateTime(s); err != nil {
					return nil, fmt.Errorf("CreDtTm: %w", err)
				}
			}
		case "FrToDt":
			var p struct {
				Fr string `xml:"FrDtTm"`
				To string `xml:"ToDtTm"`
			}
			if err := r.d.DecodeElement(&p, el); err != nil {
				return nil, err
			}
			if from, err = r.dateTime(p.Fr); err != nil {
				return nil, fmt.Errorf("FrToDt/FrDtTm: %w", err)
			}
			if to, err = r.dateTime(p.To); err != nil {
				return nil, fmt.Errorf("FrToDt/ToDtTm: %w", err)
			}
			if to.Before(from) {
				return nil, errors.New("FrToDt ends before it starts")
			}
			if lt := to.In(r.loc); to.After(from) && lt.Equal(time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, r.loc)) {
				to = to.Add(-time.Nanosecond) // ends at midnight: the day before is its last
			}
		case "StmtPgntn", "NtfctnPgntn":
			var p xPage
			if err := r.d.DecodeElement(&p, el); err != nil {
				return nil, err
			}
			if rep.Page, rep.LastPage, err = page(&p); err != nil {
				return nil, fmt.Errorf("StmtPgntn: %w", err)
			}
		case "Acct":
			var a xAccount
			if err := r.d.DecodeElement(&a, el); err != nil {
				return nil, err
			}
			switch {
			case a.IBAN != "":
				rep.Account, rep.AccountIsIBAN = payd.NormalizeIBAN(a.IBAN), true
				if !ibanRE.MatchString(rep.Account) {
					return nil, fmt.Errorf("Acct/Id/IBAN %q is not an IBAN", a.IBAN)
				}
			case strings.TrimSpace(a.Othr) != "":
				rep.Account = strings.TrimSpace(a.Othr)
			default:
				return nil, errors.New("Acct/Id names no account")
			}
			rep.AccountCcy = a.Ccy
		case "Bal":
			var b xBalance
			if err := r.d.DecodeElement(&b, el); err != nil {
				return nil, err
			}
			bal, err := r.balance(b)
			if err != nil {
				return nil, fmt.Errorf("balance (Bal) %d: %w", len(rep.Balances)+1, err)
			}
			rep.Balances = append(rep.Balances, bal)
		case "TxsSummry":
			var s xSummary
			if err := r.d.DecodeElement(&s, el); err != nil {
				return nil, err
			}
			if rep.Summary, err = summary(s); err != nil {
				return nil, fmt.Errorf("TxsSummry: %w", err)
			}
		case "Ntry":
			var x xEntry
			if err := r.d.DecodeElement(&x, el); err != nil {
				return nil, err
			}
			e, booked, err := r.entry(x)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %w", len(rep.Entries)+rep.NotBookedCount+1, err)
			}
			if !booked {
				rep.NotBookedCount++
				continue
			}
			rep.Entries = append(rep.Entries, e)
		default:
			if err := r.d.Skip(); err != nil {
				return nil, err
			}
		}
	}
	if rep.Account == "" {
		return nil, errors.New("no Acct")
	}
	created := rep.CreatedAt
	if created.IsZero() {
		created = r.st.CreatedAt
	}
	rep.From, rep.To = created.In(r.loc).Format(time.DateOnly), created.In(r.loc).Format(time.DateOnly)
	if !from.IsZero() {
		rep.From, rep.To = from.In(r.loc).Format(time.DateOnly), to.In(r.loc).Format(time.DateOnly)
	}
	for i := range rep.Entries {
		if rep.Entries[i].BookingDate == "" { // neither BookgDt nor ValDt: the statement's day
			rep.Entries[i].BookingDate = rep.To
		}
	}
	payd.EntryKeys(rep)
	return rep, nil
}

// dateTime reads an ISODateTime; one without an offset is the bank's
// local time.
func (r *statementReader) dateTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, r.loc); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date and time", s)
}

// date is a date choice (Dt, or DtTm) as a date of the bank's calendar.
func (r *statementReader) date(d *xDate) (string, error) {
	switch {
	case d == nil:
		return "", nil
	case strings.TrimSpace(d.Dt) != "":
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(d.Dt))
		if err != nil {
			return "", fmt.Errorf("%q is not a date", d.Dt)
		}
		return t.Format(time.DateOnly), nil
	case strings.TrimSpace(d.DtTm) != "":
		t, err := r.dateTime(d.DtTm)
		if err != nil {
			return "", err
		}
		return t.In(r.loc).Format(time.DateOnly), nil
	}
	return "", errors.New("neither Dt nor DtTm")
}

func (r *statementReader) balance(b xBalance) (payd.Balance, error) {
	m, err := amount(b.Amt)
	if err != nil {
		return payd.Balance{}, err
	}
	switch b.CdtDbtInd {
	case "CRDT":
	case "DBIT":
		m = -m
	default:
		return payd.Balance{}, fmt.Errorf("CdtDbtInd %q is neither CRDT nor DBIT", b.CdtDbtInd)
	}
	date, err := r.date(&b.Dt)
	if err != nil {
		return payd.Balance{}, fmt.Errorf("date (Dt): %w", err)
	}
	typ := b.Tp
	if typ == "" {
		typ = b.Prtry
	}
	return payd.Balance{Type: typ, Amount: m, Currency: b.Amt.Ccy, Date: date}, nil
}

// entry reads a Ntry; booked false for an entry pending or for
// information.
func (r *statementReader) entry(x xEntry) (payd.StatementEntry, bool, error) {
	var e payd.StatementEntry
	switch x.Sts.code() {
	case "BOOK":
	case "PDNG", "INFO", "FUTR":
		return e, false, nil
	default:
		return e, false, fmt.Errorf("status (Sts) %q is not one (BOOK, PDNG, INFO, FUTR)", x.Sts.code())
	}
	dir, err := direction(x.CdtDbtInd)
	if err != nil {
		return e, false, err
	}
	m, err := amount(x.Amt)
	if err != nil {
		return e, false, err
	}
	e = payd.StatementEntry{Direction: dir, Amount: m, Currency: x.Amt.Ccy, EntryRef: strings.TrimSpace(x.NtryRef),
		BankRef: strings.TrimSpace(x.AcctSvcrRef), Code: code(x.BkTxCd), Info: x.Info}
	switch strings.TrimSpace(x.RvslInd) {
	case "", "false", "0":
	case "true", "1":
		e.Reversal = true
	default:
		return e, false, fmt.Errorf("RvslInd %q is not a boolean", x.RvslInd)
	}
	if e.BookingDate, err = r.date(x.BookgDt); err != nil {
		return e, false, fmt.Errorf("BookgDt: %w", err)
	}
	if e.ValueDate, err = r.date(x.ValDt); err != nil {
		return e, false, fmt.Errorf("ValDt: %w", err)
	}
	if e.BookingDate == "" {
		e.BookingDate = e.ValueDate
	}
	for _, d := range x.NtryDtls {
		if d.Btch != nil {
			if n := strings.TrimSpace(d.Btch.NbOfTxs); n != "" {
				if e.BatchCount, err = strconv.Atoi(n); err != nil || e.BatchCount < 0 {
					return e, false, fmt.Errorf("Btch/NbOfTxs %q is not a number", n)
				}
			}
			if d.Btch.TtlAmt != nil {
				t, err := amount(*d.Btch.TtlAmt)
				if err != nil {
					return e, false, fmt.Errorf("Btch/TtlAmt: %w", err)
				}
				e.BatchTotal = &t
			}
		}
		for _, tx := range d.TxDtls {
			t, err := transaction(tx, e)
			if err != nil {
				return e, false, fmt.Errorf("transaction %d: %w", len(e.Txs)+1, err)
			}
			e.Txs = append(e.Txs, t)
		}
	}
	if e.BatchCount == 0 && len(e.Txs) > 1 {
		e.BatchCount = len(e.Txs)
	}
	if len(e.Txs) == 1 && e.Txs[0].NoAmount {
		e.Txs[0].Amount, e.Txs[0].Currency, e.Txs[0].NoAmount = e.Amount, e.Currency, false
	}
	return e, true, nil
}

// transaction reads a TxDtls of entry e: its own amount (Amt, else
// AmtDtls/TxAmt, else the entry's when it is the entry's one
// transaction), its references and remittance.
func transaction(x xTx, e payd.StatementEntry) (payd.StatementTx, error) {
	t := payd.StatementTx{Direction: e.Direction, Currency: e.Currency,
		EndToEndID: payd.NormalizeRef(x.Refs.EndToEndID), TxID: payd.NormalizeRef(x.Refs.TxID), InstrID: strings.TrimSpace(x.Refs.InstrID),
		UETR: strings.TrimSpace(x.Refs.UETR), BankRef: strings.TrimSpace(x.Refs.AcctSvcrRef), ReturnReason: x.RtrRsn, Code: code(x.BkTxCd)}
	switch a := x.Amt; {
	case a != nil:
		m, err := amount(*a)
		if err != nil {
			return t, err
		}
		t.Amount, t.Currency = m, a.Ccy
	case x.AmtDtls.TxAmt != nil:
		m, err := amount(*x.AmtDtls.TxAmt)
		if err != nil {
			return t, fmt.Errorf("AmtDtls/TxAmt: %w", err)
		}
		t.Amount, t.Currency = m, x.AmtDtls.TxAmt.Ccy
	default:
		t.NoAmount = true // not given: the entry's, when it books one (entry)
	}
	if x.CdtDbtInd != "" {
		d, err := direction(x.CdtDbtInd)
		if err != nil {
			return t, err
		}
		t.Direction = d
	}
	t.Remittance = append(t.Remittance, x.RmtInf.Ustrd...)
	for _, s := range x.RmtInf.Strd {
		if s.Ref != "" {
			t.Remittance = append(t.Remittance, s.Ref)
		}
		t.Remittance = append(t.Remittance, s.Addl...)
	}
	if e.Direction == payd.DirCredit {
		t.Party = x.RltdPties.Dbtr.name()
	} else {
		t.Party = x.RltdPties.Cdtr.name()
	}
	return t, nil
}

func code(c xCode) payd.BankTxCode {
	return payd.BankTxCode{Domain: strings.TrimSpace(c.Domain), Family: strings.TrimSpace(c.Family),
		SubFamily: strings.TrimSpace(c.SubFamily), Proprietary: strings.TrimSpace(c.Prtry)}
}

func direction(ind string) (string, error) {
	switch strings.TrimSpace(ind) {
	case "CRDT":
		return payd.DirCredit, nil
	case "DBIT":
		return payd.DirDebit, nil
	}
	return "", fmt.Errorf("CdtDbtInd %q is neither CRDT nor DBIT", ind)
}

// amount reads an amount with its currency: zero or more, at most two
// decimals.
func amount(a xAmount) (payd.Money, error) {
	if !ccyRE.MatchString(a.Ccy) {
		return 0, fmt.Errorf("Amt needs its Ccy, not %q", a.Ccy)
	}
	m, err := payd.ParseMoney(strings.TrimSpace(a.Value))
	if err != nil || m < 0 {
		return 0, fmt.Errorf("Amt %q is not an amount of zero or more with at most two decimals", a.Value)
	}
	return m, nil
}

func page(p *xPage) (int, bool, error) {
	n, err := strconv.Atoi(strings.TrimSpace(p.PgNb))
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("PgNb %q is not a page number", p.PgNb)
	}
	switch strings.TrimSpace(p.LastPgInd) {
	case "true", "1":
		return n, true, nil
	case "false", "0":
		return n, false, nil
	}
	return 0, false, fmt.Errorf("LastPgInd %q is not a boolean", p.LastPgInd)
}

func summary(s xSummary) (*payd.TxSummary, error) {
	out := &payd.TxSummary{}
	num := func(v string) (*int, error) {
		if v = strings.TrimSpace(v); v == "" {
			return nil, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number of entries", v)
		}
		return &n, nil
	}
	money := func(v string) (*payd.Money, error) {
		if v = strings.TrimSpace(v); v == "" {
			return nil, nil
		}
		m, err := payd.ParseMoney(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not an amount", v)
		}
		return &m, nil
	}
	var err error
	if out.Count, err = num(s.Ttl.Nb); err != nil {
		return nil, err
	}
	if out.Sum, err = money(s.Ttl.Sum); err != nil {
		return nil, err
	}
	netAmt, netInd := s.Ttl.NetAmt, s.Ttl.NetCdt
	if s.Ttl.Net != nil {
		netAmt, netInd = s.Ttl.Net.Amt, s.Ttl.Net.CdtDbtInd
	}
	if out.Net, err = money(netAmt); err != nil {
		return nil, err
	}
	if out.Net != nil && strings.TrimSpace(netInd) == "DBIT" {
		*out.Net = -*out.Net
	}
	if s.Cdt != nil {
		if out.Credits, err = num(s.Cdt.Nb); err != nil {
			return nil, err
		}
		if out.CreditSum, err = money(s.Cdt.Sum); err != nil {
			return nil, err
		}
	}
	if s.Dbt != nil {
		if out.Debits, err = num(s.Dbt.Nb); err != nil {
			return nil, err
		}
		if out.DebitSum, err = money(s.Dbt.Sum); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Inbound messages other than statements are bounded by MessageLimit.
const MessageLimit = 256 << 10

// bigReads bounds the statements past MessageLimit read at once: a body
// is read whole before its signature is checked, and nobody may make payd
// hold many of StatementLimit at a time.
var bigReads = make(chan struct{}, 2)

// readBody reads an inbound message: a statement up to StatementLimit,
// anything else up to MessageLimit (its namespace is read from the first
// bytes).
//
// The first MessageLimit+1 bytes are read as they come, not into a buffer
// of that size: a pacs.008 is a few KiB, and zeroing 256 KiB for each one
// was a fifth of payd's CPU under rails-credit on SQLite (BENCHMARKS.md).
func readBody(ctx context.Context, rd io.Reader) ([]byte, error) {
	head, err := io.ReadAll(io.LimitReader(rd, MessageLimit+1))
	if err != nil {
		return nil, err
	}
	if len(head) <= MessageLimit {
		return head, nil
	}
	ns, nerr := Namespace(head)
	if nerr != nil || !IsStatement(ns) {
		return nil, fmt.Errorf("message larger than %d bytes", MessageLimit)
	}
	select {
	case bigReads <- struct{}{}:
		defer func() { <-bigReads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rest, err := io.ReadAll(io.LimitReader(rd, StatementLimit-int64(len(head))+1))
	if err != nil {
		return nil, err
	}
	body := append(head, rest...)
	if len(body) > StatementLimit {
		return nil, fmt.Errorf("statement larger than %d bytes", StatementLimit)
	}
	return body, nil
}
