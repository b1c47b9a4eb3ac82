// Command payd-bank is a reference bank for payd's iso20022 rails: it plays
// the bank-side connector and the payers' banks, for tests and demos. It
// receives payd's messages (pain.013, camt.055, pacs.004), verifies their
// signatures, keeps them, and on command sends payd what a bank would:
// pain.014 (an RTP accepted or rejected), pacs.008 (a payer's credit) and
// pacs.002 (a refund settled or rejected). It can also go down (answer
// 503) and send every message twice.
//
// It keeps everything in memory and is not a bank: never point it at a
// payd that handles real money.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata"
)

const usage = `payd-bank: a reference ISO 20022 connector, payers' bank and card acquirer for payd.

Usage:
  payd-bank [-addr 127.0.0.1:9090] [-payd URL -key-file FILE [-bic BIC]]
            [-acquirer-project ID -acquirer-secret-file FILE -acquirer-signature-key-file FILE]

  -addr      where to listen (default 127.0.0.1:9090)
  -payd      payd's inbound endpoint, e.g. http://127.0.0.1:8080/rails/iso20022
  -key-file  a file holding the shared secret (payd's PAYD_RAILS_KEY); or -key
             SECRET, or PAYD_RAILS_KEY in the environment
  -bic       this bank's BIC, the payers' agent (default BANKMD22)
  -timezone  the time zone of the bank's calendar, whose dates its bookings
             and statements carry (default Europe/Chisinau; or
             PAYD_BANK_TIMEZONE in the environment, as payd reads it)
  -ca-file   PEM certificates to trust (besides the system's) for HTTPS to payd
  -acquirer-project, -acquirer-secret-file, -acquirer-signature-key-file
             play a card acquirer (maib e-Commerce API v1) for this project;
             or PAYD_ACQUIRER_PROJECT_ID, PAYD_ACQUIRER_PROJECT_SECRET and
             PAYD_ACQUIRER_SIGNATURE_KEY in the environment, as payd reads them

Rails: run payd with PAYD_RAILS=iso20022 PAYD_RAILS_URL=http://ADDR/iso20022
PAYD_RAILS_KEY=SECRET. payd-bank refuses unsigned or mis-signed messages
(401) and answers 200 to every message it keeps.

Cards: run payd with PAYD_CARD_ACQUIRER=maib-ecomm PAYD_ACQUIRER_URL=http://ADDR
and the same project id, secret and signature key.

Control API of the rails (JSON answers):
  GET  /messages[?kind=pain.013]    the messages received from payd, oldest
                                    first: kind, msgId, objectId, alias,
                                    amount, currency, receivedAt, copies, conflicts (copies whose body differed)
  POST /rtp/{rtpId}/accept          the payer accepts: pain.014 ACCP, then a
                                    pacs.008 for the RTP's amount to the
                                    account the pain.013 named. Optional body
                                    {"payerName","iban"}. Answers payd's
                                    pacs.002 status
  POST /rtp/{rtpId}/reject          the payer rejects: pain.014 RJCT
  POST /pay                         a payer pays a QR or extension: body
                                    {"target","amount","creditorIban",
                                    "payerName","iban","currency"}; amount as
                                    a decimal string; the money goes to
                                    creditorIban (the QR's merchant's). Also
                                    "endToEndId" (e.g. NOTPROVIDED) with
                                    "remittance", and "noCreditorAccount".
                                    Answers {"status","reason"} from payd's
                                    pacs.002
  POST /refund/{refundId}/settle    pacs.002 ACSC for a refund's pacs.004,
                                    sent again while payd answers that it
                                    has not taken that pacs.004 yet
  POST /refund/{refundId}/reject    pacs.002 RJCT (?force=true: before any
                                    pacs.004 arrived)
  POST /send                        sign and send a raw document as it is;
                                    answers payd's status and body
  GET  /sent                        every message sent to payd, with payd's
                                    answers
  POST /down[?for=30s]              answer 503 to payd (for a while, or until /up)
  GET  /down                        whether it is down, and how many of payd's
                                    messages it refused while down
  POST /up                          answer again
  POST /duplicates?on=true|false    send every message to payd twice
  POST /pay-link                    a payer's bank app pays a MIA QR link alone:
                                    {"link", "amount" (Free and Controlled codes),
                                    "payerName", "iban"}; the registry's terms and
                                    reference go in the pacs.008; a code that is
                                    not payable (cancelled, paid, expired,
                                    replaced) answers 409 and nothing is paid
  GET  /registry                    every code the QR registry keeps (payd
                                    registers them through the connector)
  GET  /registry/resolve?link=…     the code a link names, as a bank app reads it
  GET  /bookings                    what the bank booked on the merchants' accounts
  GET  /statements?kind=camt.053|camt.054&date=YYYY-MM-DD[&version=001.02|001.04|001.08]
                                    the statement of a date (camt.053: every account
                                    with its balances; camt.054: entries not yet notified)
  POST /statements/send?kind=…&date=…
                                    the same, sent to payd, signed
  /pay also takes "dropMessage", "unbooked", "bookedAmount", "bookTwice" and
  "bookOn" (YYYY-MM-DD): how the bank books the credit (docs/reconciliation.md);
  "txId" with "unbooked" sends a dropped credit (its txId) to payd late

The acquirer (maib e-Commerce API v1 and its card page):
  POST /v1/generate-token, POST /v1/pay, GET /v1/pay-info/{payId}, POST /v1/refund
  GET  /ecomm/pay/{payId}           the card page (test cards: 4111 1111 1111 1111
                                    approved after the 3-D Secure code 123456;
                                    4000 0000 0000 0002 declined; 4000 0000 0000
                                    0119 never completes and times out)
  GET  /acquirer/payments           every payment, with its status and refund
  GET  /acquirer/callbacks          every final response posted, and its answer
  GET  /acquirer/calls              how many API calls each endpoint had
  POST /acquirer/callbacks?mode=normal|drop|duplicate[&delay=2s]
                                    how final responses are posted
  POST /acquirer/payments/{payId}/callback[?forged=true]
                                    post a payment's final response now
                                    (forged: signed with another key)
  POST /acquirer/down, /acquirer/up the API answers 503, or again
  GET  /healthz                     200 while serving
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("payd-bank", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	addr := fs.String("addr", "127.0.0.1:9090", "listen address")
	paydURL := fs.String("payd", "", "payd's inbound rails endpoint")
	key := fs.String("key", "", "shared secret (appears in the process list: prefer -key-file)")
	keyFile := fs.String("key-file", "", "a file holding the shared secret")
	bic := fs.String("bic", "BANKMD22", "this bank's BIC, the payers' agent")
	zone := fs.String("timezone", cmp.Or(os.Getenv("PAYD_BANK_TIMEZONE"), "Europe/Chisinau"), "the time zone of the bank's calendar")
	acqProject := fs.String("acquirer-project", os.Getenv("PAYD_ACQUIRER_PROJECT_ID"), "the acquirer's project id")
	acqSecretFile := fs.String("acquirer-secret-file", "", "a file holding the acquirer project's secret")
	acqKeyFile := fs.String("acquirer-signature-key-file", "", "a file holding the acquirer's callback signature key")
	caFile := fs.String("ca-file", "", "PEM certificates to trust, besides the system's, for HTTPS to payd")
	tokenLife := fs.Duration("acquirer-token-life", 300*time.Second, "the acquirer's access token lifetime (its refresh token lives six times as long)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *key == "" && *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			fmt.Fprintln(stderr, "payd-bank:", err)
			return 2
		}
		*key = strings.TrimSpace(string(b))
	}
	if *key == "" {
		*key = os.Getenv("PAYD_RAILS_KEY")
	}
	loc, err := time.LoadLocation(*zone)
	if err != nil {
		fmt.Fprintln(stderr, "payd-bank: -timezone:", err)
		return 2
	}
	secret, err := fromFile(*acqSecretFile, "PAYD_ACQUIRER_PROJECT_SECRET")
	var signatureKey string
	if err == nil {
		signatureKey, err = fromFile(*acqKeyFile, "PAYD_ACQUIRER_SIGNATURE_KEY")
	}
	if err == nil && *acqProject != "" && (secret == "" || signatureKey == "") {
		err = errors.New("the acquirer needs its project's secret and signature key")
	}
	if err != nil {
		fmt.Fprintln(stderr, "payd-bank:", err)
		return 2
	}
	rails := *paydURL != "" && *key != ""
	if !rails && *acqProject == "" {
		fmt.Fprint(stderr, "payd-bank: -payd and -key (the rails), or -acquirer-project (the card acquirer), or both, are required\n\n"+usage)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "payd-bank:", err)
		return 1
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		pool, _ := x509.SystemCertPool()
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintln(stderr, "payd-bank: -ca-file: no certificate read", err)
			return 2
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"ok": true}) })
	if rails {
		b := newBank(*paydURL, *key, *bic)
		b.client, b.loc = client, loc
		b.routes(mux)
	}
	if *acqProject != "" {
		a := newAcquirer("http://"+ln.Addr().String(), *acqProject, secret, signatureKey)
		a.client, a.tokenLife = client, *tokenLife
		a.routes(mux)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "payd-bank listening on http://%s (connector endpoint http://%s/iso20022, acquirer API http://%s/v1)\n", ln.Addr(), ln.Addr(), ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "payd-bank:", err)
		return 1
	}
	return 0
}

// fromFile reads a secret from a file, else from the environment.
func fromFile(file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	return strings.TrimSpace(string(b)), err
}
