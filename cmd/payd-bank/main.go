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
	"context"
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
)

const usage = `payd-bank: a reference ISO 20022 connector and payers' bank for payd.

Usage:
  payd-bank [-addr 127.0.0.1:9090] -payd URL -key-file FILE [-bic BIC]

  -addr      where to listen (default 127.0.0.1:9090)
  -payd      payd's inbound endpoint, e.g. http://127.0.0.1:8080/rails/iso20022
  -key-file  a file holding the shared secret (payd's PAYD_RAILS_KEY); or -key
             SECRET, or PAYD_RAILS_KEY in the environment
  -bic       this bank's BIC, the payers' agent (default BANKMD22)

Run payd with PAYD_RAILS=iso20022 PAYD_RAILS_URL=http://ADDR/iso20022
PAYD_RAILS_KEY=SECRET. payd-bank refuses unsigned or mis-signed messages
(401) and answers 200 to every message it keeps.

Control API (JSON answers):
  GET  /messages[?kind=pain.013]    the messages received from payd, oldest
                                    first: kind, msgId, objectId, alias,
                                    amount, currency, receivedAt, copies
  POST /rtp/{rtpId}/accept          the payer accepts: pain.014 ACCP, then a
                                    pacs.008 for the RTP's amount. Optional
                                    body {"payerName","iban"}. Answers payd's
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
  POST /refund/{refundId}/settle    pacs.002 ACSC for a refund's pacs.004
  POST /refund/{refundId}/reject    pacs.002 RJCT (?force=true: before any
                                    pacs.004 arrived)
  POST /send                        sign and send a raw document as it is;
                                    answers payd's status and body
  GET  /sent                        every message sent to payd, with payd's
                                    answers
  POST /down[?for=30s]              answer 503 to payd (for a while, or until /up)
  POST /up                          answer again
  POST /duplicates?on=true|false    send every message to payd twice
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
	if *paydURL == "" || *key == "" {
		fmt.Fprint(stderr, "payd-bank: -payd and -key are required\n\n"+usage)
		return 2
	}
	b := newBank(*paydURL, *key, *bic)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "payd-bank:", err)
		return 1
	}
	srv := &http.Server{Handler: b.routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "payd-bank listening on http://%s (connector endpoint http://%s/iso20022)\n", ln.Addr(), ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "payd-bank:", err)
		return 1
	}
	return 0
}
