package iso20022

import (
	"encoding/xml"
	"fmt"
	"time"

	"payd"
)

// WriteStatement writes a statement of payd's model as the camt.053 or
// camt.054 of version ("001.02", "001.04" or "001.08"), in the element
// order and forms of that version's schema: what payd-bank sends, and
// what tests write from the public guides for what real files lack. Every
// document it writes validates against its XSD (TestWriteStatementValidates).
func WriteStatement(st *payd.Statement, version string) ([]byte, error) {
	ns := "urn:iso:std:iso:20022:tech:xsd:" + st.Kind + "." + version
	if v, ok := statementNS[ns]; !ok || v.kind != st.Kind {
		return nil, fmt.Errorf("payd writes no %s.%s", st.Kind, version)
	}
	v08, v02 := version == "001.08", version == "001.02"
	w := &xmlWriter{b: append(make([]byte, 0, 4096), xml.Header...)}
	w.document(ns)
	msg, rep := "BkToCstmrStmt", "Stmt"
	if st.Kind == payd.KindCamt054 {
		msg, rep = "BkToCstmrDbtCdtNtfctn", "Ntfctn"
	}
	w.start(msg)
	w.start("GrpHdr")
	w.leaf("MsgId", st.MsgID)
	w.leaf("CreDtTm", Time(st.CreatedAt))
	if st.Page > 0 && !(st.Page == 1 && st.LastPage) {
		w.start("MsgPgntn")
		w.leaf("PgNb", fmt.Sprint(st.Page))
		w.leaf("LastPgInd", fmt.Sprint(st.LastPage))
		w.end("MsgPgntn")
	}
	w.end("GrpHdr")
	for _, r := range st.Reports {
		w.start(rep)
		w.leaf("Id", r.ID)
		if r.Page > 0 && !v02 && (st.Kind == payd.KindCamt053 || v08) {
			name := "StmtPgntn"
			if st.Kind == payd.KindCamt054 {
				name = "NtfctnPgntn"
			}
			w.start(name)
			w.leaf("PgNb", fmt.Sprint(r.Page))
			w.leaf("LastPgInd", fmt.Sprint(r.LastPage))
			w.end(name)
		}
		w.opt("ElctrncSeqNb", r.ElectronicSeq)
		w.opt("LglSeqNb", r.LegalSeq)
		created := r.CreatedAt
		if created.IsZero() {
			created = st.CreatedAt
		}
		w.leaf("CreDtTm", Time(created))
		if r.From != "" {
			from, _ := time.Parse(time.DateOnly, r.From)
			to, _ := time.Parse(time.DateOnly, r.To)
			w.start("FrToDt")
			w.leaf("FrDtTm", from.Format("2006-01-02T15:04:05"))
			w.leaf("ToDtTm", to.Add(24*time.Hour-time.Second).Format("2006-01-02T15:04:05"))
			w.end("FrToDt")
		}
		w.start("Acct")
		w.start("Id")
		if r.AccountIsIBAN {
			w.leaf("IBAN", r.Account)
		} else {
			w.wrapped("Othr", "Id", r.Account)
		}
		w.end("Id")
		w.opt("Ccy", r.AccountCcy)
		w.end("Acct")
		if st.Kind == payd.KindCamt053 {
			for _, b := range r.Balances {
				w.start("Bal")
				w.start("Tp")
				w.wrapped("CdOrPrtry", "Cd", b.Type)
				w.end("Tp")
				writeAmount(w, "Amt", b.Amount, b.Currency)
				w.leaf("CdtDbtInd", indicator(b.Amount))
				w.wrapped("Dt", "Dt", b.Date)
				w.end("Bal")
			}
		}
		if s := r.Summary; s != nil {
			w.start("TxsSummry")
			w.start("TtlNtries")
			if s.Count != nil {
				w.leaf("NbOfNtries", fmt.Sprint(*s.Count))
			}
			if s.Sum != nil {
				w.leaf("Sum", s.Sum.String())
			}
			if s.Net != nil {
				net := *s.Net
				if net < 0 {
					net = -net
				}
				if v02 {
					w.leaf("TtlNetNtryAmt", net.String())
					w.leaf("CdtDbtInd", indicator(*s.Net))
				} else {
					w.start("TtlNetNtry")
					w.leaf("Amt", net.String())
					w.leaf("CdtDbtInd", indicator(*s.Net))
					w.end("TtlNetNtry")
				}
			}
			w.end("TtlNtries")
			for _, side := range []struct {
				name string
				n    *int
				sum  *payd.Money
			}{{"TtlCdtNtries", s.Credits, s.CreditSum}, {"TtlDbtNtries", s.Debits, s.DebitSum}} {
				if side.n == nil && side.sum == nil {
					continue
				}
				w.start(side.name)
				if side.n != nil {
					w.leaf("NbOfNtries", fmt.Sprint(*side.n))
				}
				if side.sum != nil {
					w.leaf("Sum", side.sum.String())
				}
				w.end(side.name)
			}
			w.end("TxsSummry")
		}
		for _, e := range r.Entries {
			writeEntry(w, e, version)
		}
		w.end(rep)
	}
	w.end(msg)
	w.end("Document")
	return append(w.b, '\n'), nil
}

func writeEntry(w *xmlWriter, e payd.StatementEntry, version string) {
	v02, v08 := version == "001.02", version == "001.08"
	w.start("Ntry")
	w.opt("NtryRef", e.EntryRef)
	writeAmount(w, "Amt", e.Amount, e.Currency)
	w.leaf("CdtDbtInd", direction2(e.Direction))
	if e.Reversal {
		w.leaf("RvslInd", "true")
	}
	if v08 {
		w.wrapped("Sts", "Cd", "BOOK")
	} else {
		w.leaf("Sts", "BOOK")
	}
	w.wrapped("BookgDt", "Dt", e.BookingDate)
	if e.ValueDate != "" {
		w.wrapped("ValDt", "Dt", e.ValueDate)
	}
	w.opt("AcctSvcrRef", e.BankRef)
	writeCode(w, e.Code, true)
	if len(e.Txs) > 0 || e.BatchCount > 0 {
		w.start("NtryDtls")
		if e.BatchCount > 1 {
			w.start("Btch")
			w.leaf("NbOfTxs", fmt.Sprint(e.BatchCount))
			if e.BatchTotal != nil {
				writeAmount(w, "TtlAmt", *e.BatchTotal, e.Currency)
				w.leaf("CdtDbtInd", direction2(e.Direction))
			}
			w.end("Btch")
		}
		for _, t := range e.Txs {
			w.start("TxDtls")
			w.start("Refs")
			w.opt("AcctSvcrRef", t.BankRef)
			w.opt("InstrId", t.InstrID)
			w.opt("EndToEndId", refID(t.EndToEndID))
			if v08 {
				w.opt("UETR", t.UETR)
			}
			w.opt("TxId", refID(t.TxID))
			w.end("Refs")
			dir := t.Direction
			if dir == "" {
				dir = e.Direction
			}
			if v02 {
				if !t.NoAmount {
					w.start("AmtDtls")
					w.start("TxAmt")
					writeAmount(w, "Amt", t.Amount, t.Currency)
					w.end("TxAmt")
					w.end("AmtDtls")
				}
			} else if !t.NoAmount || !v08 {
				writeAmount(w, "Amt", t.Amount, t.Currency)
				w.leaf("CdtDbtInd", direction2(dir))
			}
			if t.Code != (payd.BankTxCode{}) {
				writeCode(w, t.Code, false)
			}
			if t.Party != "" {
				w.start("RltdPties")
				party := "Dbtr"
				if e.Direction == payd.DirDebit {
					party = "Cdtr"
				}
				w.start(party)
				if v08 {
					w.wrapped("Pty", "Nm", t.Party)
				} else {
					w.leaf("Nm", t.Party)
				}
				w.end(party)
				w.end("RltdPties")
			}
			if len(t.Remittance) > 0 {
				w.start("RmtInf")
				for _, u := range t.Remittance {
					w.leaf("Ustrd", u)
				}
				w.end("RmtInf")
			}
			if t.ReturnReason != "" {
				w.start("RtrInf")
				w.wrapped("Rsn", "Cd", t.ReturnReason)
				w.end("RtrInf")
			}
			w.end("TxDtls")
		}
		w.end("NtryDtls")
	}
	w.opt("AddtlNtryInf", e.Info)
	w.end("Ntry")
}

// writeCode writes BkTxCd; an entry's is required (empty, it says
// nothing: Prtry "NOTPROVIDED").
func writeCode(w *xmlWriter, c payd.BankTxCode, required bool) {
	w.start("BkTxCd")
	if c.Domain != "" {
		w.start("Domn")
		w.leaf("Cd", c.Domain)
		w.start("Fmly")
		w.leaf("Cd", c.Family)
		w.leaf("SubFmlyCd", c.SubFamily)
		w.end("Fmly")
		w.end("Domn")
	}
	if c.Proprietary != "" || c.Domain == "" && required {
		p := c.Proprietary
		if p == "" {
			p = payd.NotProvidedRef
		}
		w.start("Prtry")
		w.leaf("Cd", p)
		w.end("Prtry")
	}
	w.end("BkTxCd")
}

func writeAmount(w *xmlWriter, name string, m payd.Money, ccy string) {
	if m < 0 {
		m = -m
	}
	w.startAttr(name, "Ccy", ccy)
	w.text(m.String())
	w.end(name)
}

func indicator(m payd.Money) string {
	if m < 0 {
		return "DBIT"
	}
	return "CRDT"
}

func direction2(dir string) string {
	if dir == payd.DirDebit {
		return "DBIT"
	}
	return "CRDT"
}

// refID writes one of payd's ids as its ISO messages carry it (32 hex
// digits), anything else as it is.
func refID(s string) string {
	if id, ok := payd.ParseID(s); ok {
		return ID(id)
	}
	return s
}
