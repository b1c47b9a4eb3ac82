package iso20022

import (
	"encoding/xml"
	"unicode/utf8"
)

// The messages payd writes (pain.013, camt.055, pacs.004 and its pacs.002
// answers) are written field by field instead of through encoding/xml's
// reflection: BENCHMARKS.md's production profile had encoding/xml at 16% of
// payd's CPU while it created RTPs, and BenchmarkRender measures the
// difference. The structs stay the one description of each message: the
// writer produces the same bytes encoding/xml's MarshalIndent(v, "", "  ")
// produces from them, which TestWriterMatchesEncodingXML checks on every
// field of every message, set and unset (a field added to a struct and not
// here fails it).

// message is a message payd writes without reflection.
type message interface {
	writeXML(w *xmlWriter)
}

// xmlWriter appends elements indented two spaces a level, as MarshalIndent
// does: a start tag on its own line, an end tag on the start's line when
// the element held only text.
type xmlWriter struct {
	b          []byte
	depth      int
	started    bool
	indentedIn bool // the last tag written was a start tag
}

func (w *xmlWriter) indent(delta int) {
	if delta < 0 {
		w.depth--
		if w.indentedIn {
			w.indentedIn = false
			return
		}
	}
	if w.started {
		w.b = append(w.b, '\n')
	}
	w.started = true
	for range w.depth {
		w.b = append(w.b, "  "...)
	}
	if delta > 0 {
		w.depth++
		w.indentedIn = true
	}
}

func (w *xmlWriter) start(name string) {
	w.indent(1)
	w.b = append(w.b, '<')
	w.b = append(w.b, name...)
	w.b = append(w.b, '>')
}

// startAttr is a start tag with one attribute.
func (w *xmlWriter) startAttr(name, attr, value string) {
	w.indent(1)
	w.b = append(w.b, '<')
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, attr...)
	w.b = append(w.b, `="`...)
	w.text(value)
	w.b = append(w.b, `">`...)
}

func (w *xmlWriter) end(name string) {
	w.indent(-1)
	w.b = append(w.b, "</"...)
	w.b = append(w.b, name...)
	w.b = append(w.b, '>')
}

// leaf is an element holding s (empty or not).
func (w *xmlWriter) leaf(name, s string) {
	w.start(name)
	w.text(s)
	w.end(name)
}

// wrapped is an element holding one leaf, as a path "outer>inner" writes.
func (w *xmlWriter) wrapped(outer, inner, s string) {
	w.start(outer)
	w.leaf(inner, s)
	w.end(outer)
}

// opt is a leaf left out when s is empty (",omitempty").
func (w *xmlWriter) opt(name, s string) {
	if s != "" {
		w.leaf(name, s)
	}
}

// text appends s escaped: printable ASCII without markup characters as it
// is, anything else through encoding/xml's own escaping.
func (w *xmlWriter) text(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' || c == '"' || c == '\'' {
			xml.EscapeText(w, []byte(s))
			return
		}
	}
	w.b = append(w.b, s...)
}

// Write lets xml.EscapeText append to the message.
func (w *xmlWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *xmlWriter) document(ns string) {
	w.startAttr("Document", "xmlns", ns)
}

func (h *GroupHeader) write(w *xmlWriter) {
	w.start("GrpHdr")
	w.leaf("MsgId", h.MsgID)
	w.leaf("CreDtTm", h.CreDtTm)
	w.opt("NbOfTxs", h.NbOfTxs)
	if h.InitgPty != nil {
		h.InitgPty.write(w, "InitgPty")
	}
	if h.DbtrAgt != nil {
		h.DbtrAgt.write(w, "DbtrAgt")
	}
	if h.CdtrAgt != nil {
		h.CdtrAgt.write(w, "CdtrAgt")
	}
	if h.SttlmInf != nil {
		w.wrapped("SttlmInf", "SttlmMtd", h.SttlmInf.Mtd)
	}
	if h.InstgAgt != nil {
		h.InstgAgt.write(w, "InstgAgt")
	}
	if h.InstdAgt != nil {
		h.InstdAgt.write(w, "InstdAgt")
	}
	w.end("GrpHdr")
}

func (p *Party) write(w *xmlWriter, name string) {
	w.start(name)
	w.opt("Nm", p.Name)
	if p.ID != nil {
		w.start("Id")
		if p.ID.OrgOther != nil {
			w.start("OrgId")
			p.ID.OrgOther.write(w, "Othr")
			w.end("OrgId")
		}
		w.end("Id")
	}
	if p.CtctDtls != nil {
		w.start("CtctDtls")
		w.opt("MobNb", p.CtctDtls.MobNb)
		w.end("CtctDtls")
	}
	w.end(name)
}

func (g *GenericID) write(w *xmlWriter, name string) {
	w.wrapped(name, "Id", g.ID)
}

func (a *Agent) write(w *xmlWriter, name string) {
	w.start(name)
	// encoding/xml opens a path's parents for every field but a nil pointer.
	w.start("FinInstnId")
	w.opt("BICFI", a.BICFI)
	if a.Other != nil {
		a.Other.write(w, "Othr")
	}
	w.end("FinInstnId")
	w.end(name)
}

func (a *Account) write(w *xmlWriter, name string) {
	w.start(name)
	w.wrapped("Id", "IBAN", a.IBAN)
	w.end(name)
}

func (a *Amount) write(w *xmlWriter, name string) {
	w.startAttr(name, "Ccy", a.Ccy)
	w.text(a.Value)
	w.end(name)
}

func (d *DateTime) write(w *xmlWriter, name string) {
	w.wrapped(name, "DtTm", d.DtTm)
}

func (p *PartyOrAgent) write(w *xmlWriter, name string) {
	w.start(name)
	if p.Pty != nil {
		p.Pty.write(w, "Pty")
	}
	if p.Agt != nil {
		p.Agt.write(w, "Agt")
	}
	w.end(name)
}

func (p *PaymentID) write(w *xmlWriter) {
	w.start("PmtId")
	w.opt("InstrId", p.InstrID)
	w.leaf("EndToEndId", p.EndToEndID)
	w.opt("TxId", p.TxID)
	w.end("PmtId")
}

func (r *Remittance) write(w *xmlWriter) {
	w.start("RmtInf")
	for _, s := range r.Ustrd {
		w.leaf("Ustrd", s)
	}
	w.end("RmtInf")
}

func (r *ReasonInfo) write(w *xmlWriter, name string) {
	w.start(name)
	if r.Rsn != nil {
		w.wrapped("Rsn", "Cd", r.Rsn.Cd)
	}
	for _, s := range r.AddtlInf {
		w.opt("AddtlInf", s) // omitempty leaves out each empty line
	}
	w.end(name)
}

func (s *StatusTx) write(w *xmlWriter) {
	w.start("TxInfAndSts")
	w.opt("OrgnlEndToEndId", s.OrgnlEndToEndID)
	w.opt("OrgnlTxId", s.OrgnlTxID)
	w.opt("TxSts", s.TxSts)
	if s.StsRsnInf != nil {
		s.StsRsnInf.write(w, "StsRsnInf")
	}
	w.end("TxInfAndSts")
}

func (m *Pain013) writeXML(w *xmlWriter) {
	w.document(NSPain013)
	w.start("CdtrPmtActvtnReq")
	m.Req.GrpHdr.write(w)
	p := &m.Req.PmtInf
	w.start("PmtInf")
	w.leaf("PmtInfId", p.PmtInfID)
	w.leaf("PmtMtd", p.PmtMtd)
	p.ReqdExctnDt.write(w, "ReqdExctnDt")
	if p.XpryDt != nil {
		p.XpryDt.write(w, "XpryDt")
	}
	p.Dbtr.write(w, "Dbtr")
	if p.DbtrAcct != nil {
		p.DbtrAcct.write(w, "DbtrAcct")
	}
	p.DbtrAgt.write(w, "DbtrAgt")
	w.opt("ChrgBr", p.ChrgBr)
	tx := &p.Tx
	w.start("CdtTrfTx")
	tx.PmtID.write(w)
	w.start("Amt")
	tx.Amt.write(w, "InstdAmt")
	w.end("Amt")
	w.leaf("ChrgBr", tx.ChrgBr)
	tx.CdtrAgt.write(w, "CdtrAgt")
	tx.Cdtr.write(w, "Cdtr")
	if tx.CdtrAcct != nil {
		tx.CdtrAcct.write(w, "CdtrAcct")
	}
	if tx.RmtInf != nil {
		tx.RmtInf.write(w)
	}
	w.end("CdtTrfTx")
	w.end("PmtInf")
	w.end("CdtrPmtActvtnReq")
	w.end("Document")
}

func (m *Camt055) writeXML(w *xmlWriter) {
	w.document(NSCamt055)
	w.start("CstmrPmtCxlReq")
	a := &m.Req.Assgnmt
	w.start("Assgnmt")
	w.leaf("Id", a.ID)
	a.Assgnr.write(w, "Assgnr")
	a.Assgne.write(w, "Assgne")
	w.leaf("CreDtTm", a.CreDtTm)
	w.end("Assgnmt")
	if m.Req.CtrlData != nil {
		w.wrapped("CtrlData", "NbOfTxs", m.Req.CtrlData.NbOfTxs)
	}
	p := &m.Req.Undrlyg.PmtInf
	w.start("Undrlyg")
	w.start("OrgnlPmtInfAndCxl")
	w.leaf("OrgnlPmtInfId", p.OrgnlPmtInfID)
	w.start("TxInf")
	w.leaf("CxlId", p.Tx.CxlID)
	w.leaf("OrgnlEndToEndId", p.Tx.OrgnlEndToEndID)
	p.Tx.OrgnlInstdAmt.write(w, "OrgnlInstdAmt")
	if p.Tx.CxlRsnInf != nil {
		p.Tx.CxlRsnInf.write(w, "CxlRsnInf")
	}
	w.end("TxInf")
	w.end("OrgnlPmtInfAndCxl")
	w.end("Undrlyg")
	w.end("CstmrPmtCxlReq")
	w.end("Document")
}

func (m *Pacs002) writeXML(w *xmlWriter) {
	w.document(NSPacs002)
	w.start("FIToFIPmtStsRpt")
	m.Rpt.GrpHdr.write(w)
	if g := m.Rpt.OrgnlGr; g != nil {
		w.start("OrgnlGrpInfAndSts")
		w.leaf("OrgnlMsgId", g.OrgnlMsgID)
		w.leaf("OrgnlMsgNmId", g.OrgnlMsgNmID)
		w.end("OrgnlGrpInfAndSts")
	}
	for i := range m.Rpt.Txs {
		m.Rpt.Txs[i].write(w)
	}
	w.end("FIToFIPmtStsRpt")
	w.end("Document")
}

func (m *Pacs004) writeXML(w *xmlWriter) {
	w.document(NSPacs004)
	w.start("PmtRtr")
	m.Msg.GrpHdr.write(w)
	tx := &m.Msg.Tx
	w.start("TxInf")
	w.leaf("RtrId", tx.RtrID)
	w.opt("OrgnlEndToEndId", tx.OrgnlEndToEndID)
	w.opt("OrgnlTxId", tx.OrgnlTxID)
	if tx.OrgnlAmt != nil {
		tx.OrgnlAmt.write(w, "OrgnlIntrBkSttlmAmt")
	}
	tx.RtrdAmt.write(w, "RtrdIntrBkSttlmAmt")
	w.opt("ChrgBr", tx.ChrgBr)
	if tx.RtrRsnInf != nil {
		tx.RtrRsnInf.write(w, "RtrRsnInf")
	}
	if r := tx.OrgnlTxRef; r != nil {
		w.start("OrgnlTxRef")
		if r.Dbtr != nil {
			r.Dbtr.write(w, "Dbtr")
		}
		if r.DbtrAcct != nil {
			r.DbtrAcct.write(w, "DbtrAcct")
		}
		if r.CdtrAgt != nil {
			r.CdtrAgt.write(w, "CdtrAgt")
		}
		if r.Cdtr != nil {
			r.Cdtr.write(w, "Cdtr")
		}
		if r.CdtrAcct != nil {
			r.CdtrAcct.write(w, "CdtrAcct")
		}
		w.end("OrgnlTxRef")
	}
	w.end("TxInf")
	w.end("PmtRtr")
	w.end("Document")
}
