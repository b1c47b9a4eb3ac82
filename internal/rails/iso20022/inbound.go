package iso20022

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"payd"
)

// Inbound serves POST /rails/iso20022: the messages the connector sends.
//
// Answers: 401 for an unsigned, mis-signed or stale message (nothing is
// read further); 400 for a document payd cannot read as its schema and
// docs/rails.md say (strict.go); 200 once the message is applied, refused
// by the rules, or recognised as a repeat (with the first answer, byte for
// byte); 503 when payd cannot record it now (the connector sends it
// again). A pacs.008 is answered with a signed pacs.002 in the body.
type Inbound struct {
	Ledger payd.Ledger
	Inbox  payd.Inbox // the record that makes every message apply once
	Key    string
	BIC    string // the operator's bank, the instructing agent of payd's answers
	// Statements takes the bank's camt.053 and camt.054 (nil: refused),
	// their dates in the bank's time zone Location (UTC when nil).
	Statements payd.StatementBook
	Location   *time.Location
	// Refused, when set, is told of every statement refused, and why (a
	// metric: a day's statement refused is a day unreconciled).
	Refused func(reason string)
	Clock   payd.Clock
	Log     *slog.Logger
}

func (in *Inbound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r.Context(), r.Body)
	if err != nil {
		in.Log.Warn("rails message refused", "err", err, "remote", r.RemoteAddr)
		http.Error(w, "message too large or unreadable: "+err.Error(), http.StatusBadRequest)
		return
	}
	now := in.Clock.Now()
	if err := Verify(r.Header, in.Key, body, now); err != nil {
		in.Log.Warn("rails message refused", "err", err, "remote", r.RemoteAddr)
		http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	ns, err := Namespace(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := payd.WithCause(r.Context(), payd.CauseBank)
	var answer []byte
	var note string
	switch ns {
	case NSPacs008:
		answer, err = in.credit(ctx, body, now)
	case NSPain014:
		err = in.rtpStatus(ctx, body, now)
	case NSPacs002:
		note, err = in.refundStatus(ctx, body, now)
	default:
		if IsStatement(ns) {
			err = in.statement(ctx, body, now)
		} else {
			err = fmt.Errorf("%w: %s", ErrUnknownMessage, ns)
		}
	}
	var bad *badMessage
	switch {
	case errors.As(err, &bad) || errors.Is(err, ErrUnknownMessage):
		if IsStatement(ns) || strings.HasPrefix(ns, "urn:iso:std:iso:20022:tech:xsd:camt.05") { // a statement, or one of a version payd does not read
			// A statement refused is a day unreconciled: said loudly.
			in.Log.Warn("bank statement refused", "namespace", ns, "err", err)
			if in.Refused != nil {
				in.Refused(refusalReason(err))
			}
		} else {
			in.Log.Info("rails message unreadable", "namespace", ns, "err", err)
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil && r.Context().Err() != nil:
		// The connector went away: nothing was committed, and it sends again.
		in.Log.Info("rails message not applied: the connector went away", "namespace", ns)
		return
	case err != nil:
		in.Log.Error("rails message not applied", "namespace", ns, "err", err)
		http.Error(w, "not applied; send it again", http.StatusServiceUnavailable)
		return
	}
	if answer == nil {
		if note != "" {
			// Signed like every answer with a body, so that the connector
			// can trust what it says.
			body := []byte(note + "\n")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			Sign(w.Header(), in.Key, body, in.Clock.Now())
			w.WriteHeader(http.StatusOK)
			w.Write(body)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	Sign(w.Header(), in.Key, answer, in.Clock.Now())
	w.Write(answer)
}

// badMessage is a document payd cannot apply as written.
type badMessage struct{ msg string }

func (b *badMessage) Error() string { return b.msg }

func bad(format string, args ...any) error { return &badMessage{fmt.Sprintf(format, args...)} }

// once runs apply with the Ledger that records msg in the transaction of
// the use case it runs: the message and its effect commit together. A
// repeat returns the message as first recorded without applying anything.
// apply returns the outcome to record when it applied nothing (a refusal,
// a status without effect), "" when it applied.
func (in *Inbound) once(ctx context.Context, msg payd.Message, apply func(l payd.Ledger) (refused string, err error)) (payd.Message, error) {
	// The use case records the message first in its transaction: a repeat
	// ends there (ErrDuplicate) and gets the first outcome.
	refused, err := apply(in.Inbox.Once(msg))
	switch {
	case errors.Is(err, payd.ErrDuplicate):
		rec, _, err := in.Inbox.Recorded(ctx, msg.ID)
		return rec, err
	case err != nil:
		return payd.Message{}, err
	case refused == "":
		return msg, nil
	}
	msg.Outcome = refused
	if _, err := in.Inbox.Record(ctx, msg); err != nil {
		return payd.Message{}, err
	}
	// Another instance may have recorded the same message meanwhile.
	rec, _, err := in.Inbox.Recorded(ctx, msg.ID)
	return rec, err
}

// credit applies a pacs.008: one credit for a QR, an extension or an RTP,
// paid to the account it reached. The answer is a pacs.002 made from the
// message and its recorded outcome only, so that a repeat gets the first
// answer byte for byte.
func (in *Inbound) credit(ctx context.Context, body []byte, now time.Time) ([]byte, error) {
	var m Pacs008
	if err := decodeStrict(body, &m); err != nil {
		return nil, bad("pacs.008: %v", err)
	}
	if err := checkCredit(&m); err != nil {
		return nil, bad("pacs.008: %v", err)
	}
	tx := m.Msg.Txs[0]
	rec, err := in.once(ctx, payd.Message{ID: m.Msg.GrpHdr.MsgID, Kind: "pacs.008", Outcome: StatusCredited, At: now},
		func(l payd.Ledger) (string, error) { return in.applyCredit(ctx, l, tx, now) })
	if err != nil {
		return nil, err
	}
	return CreditAnswer(rec, tx, in.BIC)
}

// CreditAnswer is payd's pacs.002 to the pacs.008 recorded as rec (its
// MsgId, outcome and arrival) carrying tx: made from them only, so that a
// repeat is answered with the same bytes.
func CreditAnswer(rec payd.Message, tx CreditTx, bic string) ([]byte, error) {
	status, reason, _ := strings.Cut(rec.Outcome, ":")
	return Marshal(&Pacs002{Rpt: Pacs002Rpt{
		GrpHdr:  GroupHeader{MsgID: answerID(rec.ID), CreDtTm: Time(rec.At), InstgAgt: instgAgt(bic)},
		OrgnlGr: &OriginalGroup{OrgnlMsgID: rec.ID, OrgnlMsgNmID: "pacs.008.001.08"},
		Txs: []StatusTx{{OrgnlEndToEndID: tx.PmtID.EndToEndID, OrgnlTxID: tx.PmtID.TxID, TxSts: status,
			StsRsnInf: ReasonWith(reason, reasonText(reason))}},
	}})
}

func instgAgt(bic string) *Agent {
	if bic == "" {
		return nil
	}
	return AgentBIC(bic)
}

// answerID is the MsgId of payd's answer to a message: derived from the
// message's, so that the answer to a repeat is the same message.
func answerID(msgID string) string {
	h := sha256.Sum256([]byte("payd answer\x00" + msgID))
	return hex.EncodeToString(h[:16])
}

func rejected(code string) string { return StatusRejected + ":" + code }

func (in *Inbound) applyCredit(ctx context.Context, l payd.Ledger, tx CreditTx, now time.Time) (string, error) {
	c := payd.Credit{Network: Name, Currency: tx.Amt.Ccy, PayerName: tx.Dbtr.Name, PayerIBAN: tx.DbtrAcct.IBANValue(), Reference: tx.PmtID.TxID,
		Routed: true, CreditorIBAN: payd.NormalizeIBAN(tx.CdtrAcct.IBANValue())}
	target, ok := ParseMsgID(tx.PmtID.EndToEndID)
	if !ok {
		// The network's reference names nothing of payd's (NOTPROVIDED):
		// the payer's free text may, among the account's merchant's objects.
		target, ok = referenceIn(tx.Ustrd())
		c.ByRemittance = true
	}
	if !ok {
		return rejected(ReasonCode(payd.RefusedUnknown)), nil
	}
	c.TargetID = target
	amount, err := tx.Amt.Money()
	if err != nil || amount <= 0 {
		return rejected("AM12"), nil // InvalidAmount: not positive, or past the currency's two decimals
	}
	c.Amount = &amount
	if tx.AccptncDtTm != "" {
		if at, err := ParseTimeValue(tx.AccptncDtTm); err == nil {
			c.At = at
		}
	}
	_, err = l.Credit(ctx, c, now)
	return refusal(err)
}

// referenceIn finds the one payd id (hyphenated, or the 32 hex digits of
// payd's ISO ids) in a payer's free text, such as "Payment <qrId> thanks".
// Text naming two different ids names none: payd does not guess.
func referenceIn(text string) (string, bool) {
	found := ""
	for _, word := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	}) {
		id, ok := ParseMsgID(strings.ToLower(word))
		if !ok {
			continue
		}
		if found != "" && found != id {
			return "", false
		}
		found = id
	}
	return found, found != ""
}

// refusal maps a credit's error: nil applied; a rule's refusal becomes the
// RJCT outcome with its reason; anything else is an error (503, sent again).
func refusal(err error) (string, error) {
	return outcome(err, func(err error) string { return rejected(ReasonCode(payd.Refusal(err))) })
}

// ignored maps the error of a status report that cannot apply (the object
// is unknown or already past that state): it is acknowledged, recorded as
// ignored, and changes nothing.
func ignored(err error) (string, error) {
	return outcome(err, func(error) string { return "IGNORED" })
}

// outcome sorts a use case's error: nil is "" (applied); a domain answer
// (a payd error, not found, a lost race) is what answer makes of it;
// anything else (the database) stays an error.
func outcome(err error, answer func(error) string) (string, error) {
	var pe *payd.Error
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, payd.ErrDuplicate):
		return "", err
	case errors.As(err, &pe), errors.Is(err, payd.ErrNotFound), errors.Is(err, payd.ErrConflict):
		return answer(err), nil
	}
	return "", err
}

// rtpStatus applies a pain.014: the payer accepted (the credit follows as
// pacs.008; nothing changes yet) or rejected an RTP.
func (in *Inbound) rtpStatus(ctx context.Context, body []byte, now time.Time) error {
	var m Pain014
	if err := decodeStrict(body, &m); err != nil {
		return bad("pain.014: %v", err)
	}
	if err := checkMsgID(m.Rpt.GrpHdr.MsgID); err != nil {
		return bad("pain.014: %v", err)
	}
	if len(m.Rpt.PmtInfs) != 1 || len(m.Rpt.PmtInfs[0].Txs) != 1 {
		return bad("pain.014: exactly one OrgnlPmtInfAndSts with one TxInfAndSts is required")
	}
	tx := m.Rpt.PmtInfs[0].Txs[0]
	id, ok := ParseMsgID(tx.OrgnlEndToEndID)
	if !ok {
		return bad("pain.014: OrgnlEndToEndId must be an rtpId")
	}
	msg := payd.Message{ID: m.Rpt.GrpHdr.MsgID, Kind: "pain.014", Outcome: tx.TxSts, At: now}
	switch tx.TxSts {
	case StatusAccepted:
		_, err := in.Inbox.Record(ctx, msg)
		return err
	case StatusRejected:
		rec, err := in.once(ctx, msg, func(l payd.Ledger) (string, error) {
			_, err := l.RejectRTP(ctx, "", id, now)
			return ignored(err)
		})
		if err == nil && rec.Outcome != StatusRejected {
			in.Log.Info("rtp rejection not applied", "rtp_id", id, "outcome", rec.Outcome)
		}
		return err
	}
	return bad("pain.014: TxSts must be ACCP or RJCT, not %q", tx.TxSts)
}

// refundStatus applies a pacs.002 about a refund's return (pacs.004):
// ACSC (or ACCC) settles it Accepted, RJCT Rejected, PDNG only notes it
// was taken. A status about a return the connector has not acknowledged
// yet changes nothing and is not recorded (note says so): sent again after
// the acknowledgement, it applies.
func (in *Inbound) refundStatus(ctx context.Context, body []byte, now time.Time) (note string, err error) {
	var m Pacs002
	if err := decodeStrict(body, &m); err != nil {
		return "", bad("pacs.002: %v", err)
	}
	if err := checkMsgID(m.Rpt.GrpHdr.MsgID); err != nil {
		return "", bad("pacs.002: %v", err)
	}
	if len(m.Rpt.Txs) != 1 {
		return "", bad("pacs.002: exactly one TxInfAndSts is required")
	}
	tx := m.Rpt.Txs[0]
	id, ok := ParseMsgID(tx.OrgnlTxID)
	if !ok {
		return "", bad("pacs.002: OrgnlTxId (the pacs.004's RtrId, a refundId) is required")
	}
	msg := payd.Message{ID: m.Rpt.GrpHdr.MsgID, Kind: "pacs.002", Outcome: tx.TxSts, At: now}
	var outcome payd.RefundStatus
	switch tx.TxSts {
	case StatusSettled, StatusCredited:
		outcome = payd.RefundAccepted
	case StatusRejected:
		outcome = payd.RefundRejected
	case StatusPending:
		_, err := in.once(ctx, msg, func(l payd.Ledger) (string, error) { return ignored(l.RefundTaken(ctx, id, now)) })
		return "", err
	default:
		return "", bad("pacs.002: TxSts must be ACSC, ACCC, RJCT or PDNG, not %q", tx.TxSts)
	}
	if _, ok, err := in.Inbox.Recorded(ctx, msg.ID); err != nil || ok {
		return "", err // a repeat: answered as before
	}
	_, err = in.Inbox.Once(msg).SettleReturn(ctx, id, outcome, now)
	switch {
	case errors.Is(err, payd.ErrReturnNotTaken):
		in.Log.Warn("refund status before its return was acknowledged: not applied", "refund_id", id, "msg_id", msg.ID, "status", tx.TxSts)
		return "not applied: the return (pacs.004) of refund " + ID(id) + " has not been acknowledged yet; nothing changed. " +
			"Send this status again once the pacs.004 was answered 2xx.", nil
	case errors.Is(err, payd.ErrDuplicate):
		return "", nil
	}
	refusedAs, err := ignored(err)
	if err != nil || refusedAs == "" {
		return "", err
	}
	msg.Outcome = refusedAs
	_, err = in.Inbox.Record(ctx, msg)
	return "", err
}

// checkCredit holds a pacs.008 to what docs/rails.md says payd reads:
// one transaction, counted; identifiers within their ISO lengths; the
// amount's currency given; accounts that are IBANs.
func checkCredit(m *Pacs008) error {
	h := m.Msg.GrpHdr
	if err := checkMsgID(h.MsgID); err != nil {
		return err
	}
	if h.NbOfTxs != "1" || len(m.Msg.Txs) != 1 {
		return fmt.Errorf("NbOfTxs must be 1 with exactly one CdtTrfTxInf (NbOfTxs %q, %d transactions)", h.NbOfTxs, len(m.Msg.Txs))
	}
	tx := m.Msg.Txs[0]
	for name, v := range map[string]string{"EndToEndId": tx.PmtID.EndToEndID, "TxId": tx.PmtID.TxID, "InstrId": tx.PmtID.InstrID} {
		if len([]rune(v)) > MaxID {
			return fmt.Errorf("%s is longer than %d characters", name, MaxID)
		}
	}
	if tx.PmtID.EndToEndID == "" {
		return fmt.Errorf("EndToEndId is required (NOTPROVIDED when there is none)")
	}
	if !ccyRE.MatchString(tx.Amt.Ccy) {
		return fmt.Errorf("IntrBkSttlmAmt needs its Ccy (three capital letters), not %q", tx.Amt.Ccy)
	}
	if !decimalRE.MatchString(strings.TrimSpace(tx.Amt.Value)) {
		return fmt.Errorf("IntrBkSttlmAmt %q is not a decimal of at most 5 fraction digits", tx.Amt.Value)
	}
	for name, a := range map[string]*Account{"DbtrAcct": tx.DbtrAcct, "CdtrAcct": tx.CdtrAcct} {
		if a != nil && !ibanRE.MatchString(a.IBAN) {
			return fmt.Errorf("%s/Id/IBAN %q is not an IBAN", name, a.IBAN)
		}
	}
	if tx.AccptncDtTm != "" {
		if _, err := ParseTimeValue(tx.AccptncDtTm); err != nil {
			return err
		}
	}
	return nil
}

func checkMsgID(id string) error {
	if id == "" || len([]rune(id)) > MaxID {
		return fmt.Errorf("MsgId must be 1 to %d characters", MaxID)
	}
	return nil
}

var (
	ccyRE     = regexp.MustCompile(`^[A-Z]{3}$`)
	decimalRE = regexp.MustCompile(`^\+?([0-9]{1,13}(\.[0-9]{0,5})?|\.[0-9]{1,5})$`)
	ibanRE    = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[a-zA-Z0-9]{1,30}$`)
)

// statement takes a camt.053 or camt.054 for reconciliation: once by its
// MsgId, page and content (the same document again is acknowledged and
// changes nothing; another under its MsgId is refused).
func (in *Inbound) statement(ctx context.Context, body []byte, now time.Time) error {
	if in.Statements == nil {
		return bad("statements are not taken here")
	}
	loc := in.Location
	if loc == nil {
		loc = time.UTC
	}
	st, err := ReadStatement(body, loc)
	if err != nil {
		return bad("%v", err)
	}
	taken, err := in.Statements.ImportStatement(ctx, st, "rails", now)
	switch {
	case errors.Is(err, payd.ErrStatementReused):
		return bad("%s %s page %d: MsgId taken before for other content; a correction needs a MsgId of its own", st.Kind, st.MsgID, st.Page)
	case err == nil && taken.Fresh:
		in.Log.Info("bank statement taken", "kind", st.Kind, "version", st.Version, "msg_id", st.MsgID, "page", st.Page,
			"accounts", len(st.Reports), "entries", taken.Entries, "new", taken.New, "supersedes", taken.Superseded)
	}
	return err
}

// refusalReason is the kind of a statement's refusal, for the metric.
func refusalReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "MsgId taken before"):
		return "msgid_reused"
	case errors.Is(err, ErrUnknownMessage):
		return "unknown_version"
	case strings.Contains(msg, "schema") || strings.Contains(msg, "namespace") || strings.Contains(msg, "appears"):
		return "schema"
	}
	return "content"
}
