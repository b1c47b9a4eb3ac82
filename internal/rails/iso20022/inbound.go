package iso20022

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"payd"
	"payd/internal/sqlstore"
)

// Inbound serves POST /rails/iso20022: the messages the connector sends.
//
// Answers: 401 for an unsigned, mis-signed or stale message (nothing is
// read further); 400 for a document payd cannot read; 200 once the message
// is applied, refused by the rules, or recognised as a repeat (with the
// first answer); 503 when payd cannot record it now (the connector sends
// it again). A pacs.008 is answered with a signed pacs.002 in the body.
type Inbound struct {
	Ledger payd.Ledger
	Store  *sqlstore.Store // the inbox that makes every message apply once
	Key    string
	Clock  payd.Clock
	Log    *slog.Logger
}

// maxMessage bounds an inbound message.
const maxMessage = 256 << 10

func (in *Inbound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil || len(body) > maxMessage {
		http.Error(w, "message too large or unreadable", http.StatusBadRequest)
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
	var answer []byte
	switch ns {
	case NSPacs008:
		answer, err = in.credit(r.Context(), body, now)
	case NSPain014:
		err = in.rtpStatus(r.Context(), body, now)
	case NSPacs002:
		err = in.refundStatus(r.Context(), body, now)
	default:
		err = fmt.Errorf("%w: %s", ErrUnknownMessage, ns)
	}
	var bad *badMessage
	switch {
	case errors.As(err, &bad) || errors.Is(err, ErrUnknownMessage):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		in.Log.Error("rails message not applied", "namespace", ns, "err", err)
		http.Error(w, "not applied; send it again", http.StatusServiceUnavailable)
		return
	}
	if answer == nil {
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

// once runs apply under the inbox record of msgID: the message and its
// effect commit together. A repeat returns the first outcome without
// applying anything. apply returns the outcome to record when it applied
// nothing (a refusal, a status without effect), "" when it applied.
func (in *Inbound) once(ctx context.Context, msgID, kind, success string, now time.Time,
	apply func(ctx context.Context) (refused string, err error)) (string, error) {
	if out, ok, err := in.Store.InboundOutcome(ctx, msgID); err != nil || ok {
		return out, err
	}
	refused, err := apply(sqlstore.WithInbound(payd.WithCause(ctx, payd.CauseBank), msgID, kind, success, now))
	switch {
	case errors.Is(err, sqlstore.ErrDuplicate):
		out, _, err := in.Store.InboundOutcome(ctx, msgID)
		return out, err
	case err != nil:
		return "", err
	case refused == "":
		return success, nil
	}
	if _, err := in.Store.RecordInbound(ctx, msgID, kind, refused, now); err != nil {
		return "", err
	}
	// Another instance may have recorded the same message meanwhile.
	out, _, err := in.Store.InboundOutcome(ctx, msgID)
	return out, err
}

// credit applies a pacs.008: one credit for a QR, an extension or an RTP.
func (in *Inbound) credit(ctx context.Context, body []byte, now time.Time) ([]byte, error) {
	var m Pacs008
	if err := xml.Unmarshal(body, &m); err != nil {
		return nil, bad("pacs.008: %v", err)
	}
	if m.GrpHdr.MsgID == "" || len(m.Txs) != 1 {
		return nil, bad("pacs.008: MsgId and exactly one CdtTrfTxInf are required")
	}
	tx := m.Txs[0]
	outcome, err := in.once(ctx, m.GrpHdr.MsgID, "pacs.008", StatusSettled, now, func(ctx context.Context) (string, error) {
		return in.applyCredit(ctx, tx, now)
	})
	if err != nil {
		return nil, err
	}
	status, reason, _ := strings.Cut(outcome, ":")
	return Marshal(&Pacs002{
		GrpHdr:     GroupHeader{MsgID: ID(payd.NewID(now)), CreDtTm: Time(now)},
		OrgnlMsgID: m.GrpHdr.MsgID, OrgnlMsgNmID: "pacs.008.001.08",
		Tx: StatusTx{OrgnlEndToEndID: tx.EndToEndID, OrgnlTxID: tx.TxID, TxSts: status, Rsn: reason},
	})
}

func rejected(code string) string { return StatusRejected + ":" + code }

func (in *Inbound) applyCredit(ctx context.Context, tx CreditTx, now time.Time) (string, error) {
	target, ok := ParseMsgID(tx.EndToEndID)
	if !ok {
		target, ok = ParseMsgID(tx.Ustrd)
	}
	if !ok {
		return rejected(ReasonCode(payd.RefusedUnknown)), nil
	}
	amount, err := tx.Amt.Money()
	if err != nil || amount <= 0 {
		return rejected("AM12"), nil // InvalidAmount
	}
	c := payd.Credit{TargetID: target, Amount: &amount, Currency: tx.Amt.Ccy, PayerName: tx.Dbtr.Name,
		PayerIBAN: tx.DbtrAcct.IBANValue(), Reference: tx.TxID}
	if tx.AccptncDtTm != "" {
		if at, err := ParseTimeValue(tx.AccptncDtTm); err == nil {
			c.At = at
		}
	}
	if _, err := in.Store.RTP(ctx, "", target, now); err == nil {
		_, _, err = in.Ledger.CreditRTP(ctx, "", c, now)
		return refusal(err)
	} else if !errors.Is(err, payd.ErrNotFound) {
		return "", err
	}
	_, _, err = in.Ledger.CreditQR(ctx, "", c, now)
	return refusal(err)
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
	case errors.Is(err, sqlstore.ErrDuplicate):
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
	if err := xml.Unmarshal(body, &m); err != nil {
		return bad("pain.014: %v", err)
	}
	id, ok := ParseMsgID(m.Tx.OrgnlEndToEndID)
	if m.GrpHdr.MsgID == "" || !ok {
		return bad("pain.014: MsgId and OrgnlEndToEndId (an rtpId) are required")
	}
	switch m.Tx.TxSts {
	case StatusAccepted:
		_, err := in.Store.RecordInbound(ctx, m.GrpHdr.MsgID, "pain.014", StatusAccepted, now)
		return err
	case StatusRejected:
		outcome, err := in.once(ctx, m.GrpHdr.MsgID, "pain.014", StatusRejected, now, func(ctx context.Context) (string, error) {
			_, err := in.Ledger.RejectRTP(ctx, "", id, now)
			return ignored(err)
		})
		if err == nil && outcome != StatusRejected {
			in.Log.Info("rtp rejection not applied", "rtp_id", id, "outcome", outcome)
		}
		return err
	}
	return bad("pain.014: TxSts must be ACCP or RJCT, not %q", m.Tx.TxSts)
}

// refundStatus applies a pacs.002 about a refund's return (pacs.004):
// ACSC settles it Accepted, RJCT Rejected, PDNG only notes it was taken.
func (in *Inbound) refundStatus(ctx context.Context, body []byte, now time.Time) error {
	var m Pacs002
	if err := xml.Unmarshal(body, &m); err != nil {
		return bad("pacs.002: %v", err)
	}
	id, ok := ParseMsgID(m.Tx.OrgnlTxID)
	if m.GrpHdr.MsgID == "" || !ok {
		return bad("pacs.002: MsgId and OrgnlTxId (the pacs.004's RtrId, a refundId) are required")
	}
	var outcome payd.RefundStatus
	switch m.Tx.TxSts {
	case StatusSettled:
		outcome = payd.RefundAccepted
	case StatusRejected:
		outcome = payd.RefundRejected
	case StatusPending:
		_, err := in.once(ctx, m.GrpHdr.MsgID, "pacs.002", StatusPending, now, func(ctx context.Context) (string, error) {
			return ignored(in.Ledger.RefundTaken(ctx, id, now))
		})
		return err
	default:
		return bad("pacs.002: TxSts must be ACSC, RJCT or PDNG, not %q", m.Tx.TxSts)
	}
	_, err := in.once(ctx, m.GrpHdr.MsgID, "pacs.002", m.Tx.TxSts, now, func(ctx context.Context) (string, error) {
		_, err := in.Ledger.SettleRefund(ctx, id, outcome, now)
		return ignored(err)
	})
	return err
}
