package iso20022

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"payd"
)

// Signature headers, on every message both ways.
const (
	HeaderTimestamp = "X-Payd-Rails-Timestamp" // Unix milliseconds
	HeaderSignature = "X-Payd-Rails-Signature" // Base64(HMAC-SHA256(key, body + "." + timestamp))
	// MaxSkew is how old (or how far ahead) a message's timestamp may be.
	MaxSkew = 5 * time.Minute
)

// Sign sets the signature headers of a message body sent at now.
func Sign(h http.Header, key string, body []byte, now time.Time) {
	ts, sig := signature(key, body, now)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, sig)
}

// signature is the two signature headers' values.
func signature(key string, body []byte, now time.Time) (ts, sig string) {
	ms := now.UnixMilli()
	return strconv.FormatInt(ms, 10), payd.HMACSignature(key, body, ms)
}

// Verify checks a message's signature headers against its body at now:
// present, well-formed, within MaxSkew, and matching (constant time).
func Verify(h http.Header, key string, body []byte, now time.Time) error {
	return VerifyValues(h.Get(HeaderTimestamp), h.Get(HeaderSignature), key, body, now)
}

// VerifyValues is Verify given the two headers' values.
func VerifyValues(raw, sig, key string, body []byte, now time.Time) error {
	if raw == "" || sig == "" {
		return fmt.Errorf("unsigned message")
	}
	ts, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return fmt.Errorf("bad %s", HeaderTimestamp)
	}
	if d := now.Sub(time.UnixMilli(ts)); d > MaxSkew || d < -MaxSkew {
		return fmt.Errorf("message timestamp outside ±%s", MaxSkew)
	}
	// The canonical standard Base64 text only, compared as text: a
	// decoder would also take the URL-safe alphabet's twin, other padding
	// bits or line breaks, and one signature must have one spelling.
	if want := payd.HMACSignature(key, body, ts); subtle.ConstantTimeCompare([]byte(sig), []byte(want)) != 1 {
		return fmt.Errorf("signature mismatch")
	}
	return nil
}

// Name is the network's name (PAYD_RAILS=iso20022), which its payments
// and orders record.
const Name = "iso20022"

// Rails is the adapter: outbound orders to the connector, and (Inbound)
// the endpoint the connector posts to.
type Rails struct {
	URL string // the connector's endpoint, operator-set
	Key string // the shared secret of the signatures
	BIC string // the operator's bank: the creditor's agent of every message
	// Client posts the messages, keeping its connections to the
	// connector alive (NewClient); nil: defaultClient.
	Client *fasthttp.Client
	Clock  payd.Clock
}

var defaultClient = NewClient(64)

// Timeout is how long a delivery waits for the connector's answer before
// it counts as a failure (docs/rails.md: no answer within 10 s).
const Timeout = 10 * time.Second

// NewClient is the client that posts payd's messages to the connector,
// with up to conns connections kept alive (one per delivery running at
// once). It is fasthttp's rather than net/http's: at the rate RTPs are
// created, net/http's client took twice the CPU a message
// (BENCHMARKS.md). It speaks HTTP/1.1, over TLS for an https URL, sends
// the configured path as written and follows no redirect (a 3xx is not
// a 2xx: the message is sent again later).
func NewClient(conns int) *fasthttp.Client {
	c := &fasthttp.Client{
		Name:                   "payd",
		MaxConnsPerHost:        conns,
		MaxConnWaitTimeout:     Timeout,
		MaxIdleConnDuration:    90 * time.Second,
		ReadTimeout:            Timeout,
		WriteTimeout:           Timeout,
		MaxResponseBodySize:    64 << 10,
		DisablePathNormalizing: true,
	}
	c.RetryIfErr = func(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
		if attempts != 1 || !closedConn(err) {
			return false, false
		}
		// Sent again at once, once; the schedule takes any other
		// failure. A connector that did read it takes it twice as once
		// (it deduplicates on MsgId, as for every redelivery). One that
		// closed one kept-alive connection has most likely closed them
		// all (it restarted, or its idle timeout passed for each): the
		// retry dials afresh instead of taking the next of them.
		c.CloseIdleConnections()
		return false, true
	}
	return c
}

// closedConn reports whether err is the failure of a kept-alive
// connection the connector had closed while it was idle: fasthttp notices
// that only when it uses the connection, where net/http's client watched
// its idle ones.
func closedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

var _ payd.Rails = (*Rails)(nil)

// Deliver renders an order as its message and POSTs it; the connector has
// taken it when it answers 2xx. The message is rendered from the order
// alone, so every attempt sends the same bytes (only the signature's
// timestamp is fresh).
func (r *Rails) Deliver(ctx context.Context, o *payd.RailsOrder) (payd.Taken, error) {
	return payd.Taken{}, r.deliver(ctx, o)
}

func (r *Rails) deliver(ctx context.Context, o *payd.RailsOrder) error {
	render, mediaType := func() ([]byte, error) { return Render(o, r.BIC) }, "application/xml; charset=utf-8"
	if o.Kind == payd.OrderRegisterQR {
		render, mediaType = func() ([]byte, error) { return RenderRegistration(o) }, RegistryMediaType
	}
	body, err := render()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	client := r.Client
	if client == nil {
		client = defaultClient
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer func() { fasthttp.ReleaseRequest(req); fasthttp.ReleaseResponse(resp) }()
	req.SetRequestURI(r.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType(mediaType)
	ts, sig := signature(r.Key, body, r.Clock.Now())
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	req.SetBodyRaw(body)
	// The answer is waited for Timeout at most, or until ctx's deadline
	// if that comes first. A cancelled ctx does not cut a POST short:
	// it ends within Timeout.
	deadline := time.Now().Add(Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// An answer whose body is over MaxResponseBodySize still has its
	// status, which is all payd reads of it.
	if err := client.DoDeadline(req, resp, deadline); err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return fmt.Errorf("post to the connector: %w (%w)", err, payd.ErrRailsUnavailable)
	}
	switch code := resp.StatusCode(); {
	case code >= 200 && code <= 299 && o.Kind == payd.OrderRegisterQR:
		// payd reads this answer's body: it must be the connector's.
		if err := VerifyValues(string(resp.Header.Peek(HeaderTimestamp)), string(resp.Header.Peek(HeaderSignature)), r.Key, resp.Body(), r.Clock.Now()); err != nil {
			return fmt.Errorf("the registry's answer to %s: %w", o.ID, err)
		}
		return checkRegistryAnswer(o, resp.Body())
	case code >= 200 && code <= 299:
		return nil
	case code >= 500 || code == fasthttp.StatusRequestTimeout || code == fasthttp.StatusTooManyRequests:
		return fmt.Errorf("connector answered %d (%w)", code, payd.ErrRailsUnavailable)
	default:
		return fmt.Errorf("connector answered %d", code)
	}
}

// Render is the message an order is sent as, with bic the operator's bank
// (the merchants' agent). Texts longer than their ISO field are cut
// (docs/rails.md says where); what payd does not know is left out.
func Render(o *payd.RailsOrder, bic string) ([]byte, error) {
	d := o.Data
	hdr := GroupHeader{MsgID: ID(o.ID), CreDtTm: Time(o.CreatedAt), NbOfTxs: "1"}
	obj := ID(o.ObjectID)
	creditor := Party{Name: Text(d.CreditorName, MaxName)}
	switch o.Kind {
	case payd.OrderSendRTP:
		// The merchant initiates the request, identified by its payd id.
		hdr.InitgPty = &Party{Name: creditor.Name, ID: &PartyID{OrgOther: &GenericID{ID: ID(o.MerchantID)}}}
		return Marshal(&Pain013{Req: Pain013Req{GrpHdr: hdr, PmtInf: Pain013PmtInf{
			PmtInfID: obj, PmtMtd: PaymentTransfer,
			ReqdExctnDt: DateTime{DtTm: Time(o.CreatedAt)}, XpryDt: &DateTime{DtTm: Time(d.ExpiresAt)},
			// The payer is known by the phone alias only: no name, no
			// account, and its bank is the one the alias resolves to.
			Dbtr:    Party{CtctDtls: &Contact{MobNb: Mobile(d.Alias)}},
			DbtrAgt: *AgentBIC(""),
			ChrgBr:  ChargesShared,
			Tx: Pain013Tx{PmtID: PaymentID{EndToEndID: obj}, Amt: Amt(d.Amount, d.Currency), ChrgBr: ChargesShared,
				CdtrAgt: *AgentBIC(bic), Cdtr: creditor, CdtrAcct: IBAN(d.CreditorIBAN), RmtInf: RemittanceText(d.Description)},
		}}})
	case payd.OrderCancelRTP:
		return Marshal(&Camt055{Req: Camt055Req{
			Assgnmt: Assignment{ID: hdr.MsgID, Assgnr: PartyOrAgent{Agt: AgentBIC(bic)}, Assgne: PartyOrAgent{Agt: AgentBIC("")},
				CreDtTm: Time(o.CreatedAt)},
			CtrlData: &ControlData{NbOfTxs: "1"},
			Undrlyg: Camt055Undrl{PmtInf: Camt055PmtInf{OrgnlPmtInfID: obj, Tx: Camt055Tx{
				CxlID: hdr.MsgID, OrgnlEndToEndID: obj, OrgnlInstdAmt: Amt(d.Amount, d.Currency),
				CxlRsnInf: ReasonWith(ReasonCustomer, d.Reason),
			}}},
		}})
	case payd.OrderRefund:
		hdr.SttlmInf = Clearing()
		hdr.InstgAgt = AgentBIC(bic)
		ref := &OriginalTxRef{Dbtr: PartyNamed(d.DebtorName), DbtrAcct: IBAN(d.DebtorIBAN),
			CdtrAgt: AgentBIC(bic), Cdtr: PartyNamed(d.CreditorName), CdtrAcct: IBAN(d.CreditorIBAN)}
		return Marshal(&Pacs004{Msg: Pacs004Msg{GrpHdr: hdr, Tx: ReturnTx{
			RtrID: obj, OrgnlEndToEndID: ID(d.OriginalID), OrgnlTxID: Text(d.OriginalRef, MaxID),
			OrgnlAmt: AmtP(d.OriginalTotal, d.Currency), RtrdAmt: Amt(d.Amount, d.Currency), ChrgBr: ChargesShared,
			RtrRsnInf: ReasonWith(ReasonCustomer, d.Reason), OrgnlTxRef: ref,
		}}})
	}
	return nil, fmt.Errorf("rails order %s: unknown kind %q", o.ID, o.Kind)
}

// ID is a payd id as written in messages: the GUID's 32 hex digits without
// hyphens, so that it fits ISO 20022's Max35Text identifiers.
func ID(id string) string { return strings.ReplaceAll(id, "-", "") }

// ParseMsgID reads an id from a message: 32 hex digits, or a hyphenated
// GUID, in any letter case. It returns payd's canonical form.
func ParseMsgID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 32 {
		s = s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
	}
	return payd.ParseID(s)
}
