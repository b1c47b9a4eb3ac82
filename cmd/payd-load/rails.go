package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"payd"
	"payd/internal/rails/iso20022"
)

// The rails-credit scenario's settings: payd must run in production with
// PAYD_RAILS=iso20022 and the same key.
var (
	railsKey string
	railsBIC = "PAYDMD22"
	railsQRs = 256 // the Static QRs the credits go round
)

// loadIBAN is the account of payd-load's merchant: the credits it sends
// name it as their CdtrAcct, as a payer's bank does.
const loadIBAN = "MD24AG000225100013104168"

// railsKeyFrom reads the rails key: the flag's file, else PAYD_RAILS_KEY.
func railsKeyFrom(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		return strings.TrimSpace(string(b)), err
	}
	return os.Getenv("PAYD_RAILS_KEY"), nil
}

// railsCredits sends signed pacs.008 credits for Static QRs through
// /rails/iso20022, as a bank's connector does, each with its own MsgId and
// payer, and measures the answer (a pacs.002 ACCC; anything else is an
// error) and the delay from the bank's POST to the merchant's callback.
func (r *runner) railsCredits(ctx context.Context) (*stats, error) {
	if railsKey == "" {
		return nil, fmt.Errorf("rails-credit needs payd's rails key (-rails-key-file or PAYD_RAILS_KEY), with payd in production on PAYD_RAILS=iso20022")
	}
	rc, err := newReceiver("payerName")
	if err != nil {
		return nil, err
	}
	defer rc.close()
	// Payers pay many merchants' QRs: credits go round a pool of Static
	// QRs. (The credits of one QR serialize on its row: BENCHMARKS.md
	// gives that figure too, with -rails-qrs 1.)
	qrs := make([]string, railsQRs)
	for k := range qrs {
		b, _ := json.Marshal(map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "rails load",
			"callbackUrl": rc.url})
		s, out := do(ctx, r.hc, "POST", r.target+"/v2/instant/qr", r.token, b)
		if qrs[k] = field(out, "qrId"); s != 200 || qrs[k] == "" {
			return nil, fmt.Errorf("rails-credit: create a QR: %d %s", s, out)
		}
	}
	var run [4]byte
	rand.Read(run[:])
	prefix := "LOAD" + strings.ToUpper(hex.EncodeToString(run[:]))
	st := drive(ctx, "rails-credit", r.c, r.n, r.d, func(ctx context.Context, i int) int {
		id := fmt.Sprintf("%s%011d", prefix, i)
		payer := "PAYER " + id
		posted := time.Now()
		status, answer := r.sendCredit(ctx, creditMessage(id, qrs[i%len(qrs)], payer))
		if status != http.StatusOK {
			return status
		}
		var st iso20022.Pacs002
		if xml.Unmarshal(answer, &st) != nil || len(st.Rpt.Txs) != 1 || st.Rpt.Txs[0].TxSts != iso20022.StatusCredited {
			return http.StatusUnprocessableEntity // answered, but not applied
		}
		rc.answered(payer, posted)
		return status
	})
	st.Callbacks = rc.finish()
	st.Callbacks.From = "POST"
	return st, nil
}

// creditMessage is a payer's pacs.008 of 1.00 MDL to payd-load's merchant.
func creditMessage(id, qrID, payer string) []byte {
	body, _ := iso20022.Marshal(&iso20022.Pacs008{Msg: iso20022.Pacs008Msg{
		GrpHdr: iso20022.GroupHeader{MsgID: id, CreDtTm: iso20022.Time(time.Now()), NbOfTxs: "1", SttlmInf: iso20022.Clearing(),
			InstgAgt: iso20022.AgentBIC("BANKMD22")},
		Txs: []iso20022.CreditTx{{PmtID: iso20022.PaymentID{EndToEndID: iso20022.ID(qrID), TxID: id},
			Amt: iso20022.Amount{Ccy: "MDL", Value: "1.00"}, ChrgBr: iso20022.ChargesShared,
			Dbtr: iso20022.Party{Name: payer}, DbtrAcct: iso20022.IBAN(payd.TestIBAN), DbtrAgt: *iso20022.AgentBIC("BANKMD22"),
			CdtrAgt: *iso20022.AgentBIC(railsBIC), Cdtr: iso20022.Party{Name: "payd-load"}, CdtrAcct: iso20022.IBAN(loadIBAN)}},
	}})
	return body
}

// sendCredit posts one signed message and returns payd's status and
// answer, after checking the answer's signature (a forged answer is an
// error like any other).
func (r *runner) sendCredit(ctx context.Context, body []byte) (int, []byte) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.target+"/rails/iso20022", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/xml; charset=utf-8")
	iso20022.Sign(req.Header, railsKey, body, time.Now())
	status, answer, h := send(ctx, r.hc, req)
	if status == http.StatusOK && iso20022.Verify(h, railsKey, answer, time.Now()) != nil {
		return http.StatusBadGateway, answer
	}
	return status, answer
}

// The connector's side of RTP creation: with -rails-sink payd-load is the
// connector payd POSTs its messages to (PAYD_RAILS_URL=http://ADDR/iso20022),
// checking each signature and answering 200, and rtp-create measures the
// delay from the API's answer to the RTP's pain.013 arriving there.
var (
	railsSink string
	sink      *tracker
)

// startSink serves the connector on addr. It is fasthttp's server rather
// than net/http's because it shares the machine with payd: a bank's
// connector runs elsewhere, and the less of the two cores it takes, the
// nearer the figures come to payd's own (BENCHMARKS.md).
func startSink(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("rails sink: %w", err)
	}
	sink = newTracker("rtpId")
	srv := &fasthttp.Server{MaxRequestBodySize: 1 << 20, Handler: func(c *fasthttp.RequestCtx) {
		body, now := c.PostBody(), time.Now()
		if iso20022.VerifyValues(string(c.Request.Header.Peek(iso20022.HeaderTimestamp)),
			string(c.Request.Header.Peek(iso20022.HeaderSignature)), railsKey, body, now) != nil {
			c.Error("unsigned", fasthttp.StatusUnauthorized)
			return
		}
		if id, ok := pmtInfID(body); ok {
			sink.arrive(payd.NormalizeRef(id), now)
		}
	}}
	go srv.Serve(ln)
	return nil
}

// pmtInfID is a pain.013's PmtInfId: the RTP it requests.
func pmtInfID(body []byte) (string, bool) {
	if !bytes.Contains(body, []byte(iso20022.NSPain013)) {
		return "", false
	}
	_, rest, ok := bytes.Cut(body, []byte("<PmtInfId>"))
	id, _, closed := bytes.Cut(rest, []byte("</PmtInfId>"))
	return string(id), ok && closed && len(id) > 0
}
