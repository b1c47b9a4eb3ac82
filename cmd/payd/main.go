// Command payd is the payd payments service: one binary that serves the
// merchant API and the hosted pages, runs the background work, and carries
// the operator's commands.
//
//	payd [serve] [flags]           serve the API (the default)
//	payd migrate                   apply database migrations
//	payd merchant create --name N  provision a merchant (prints JSON credentials)
//	payd merchant list             list merchants (JSON)
//	payd merchant rotate-secret ID issue a new client secret (prints JSON)
//	payd callbacks list [--state S]
//	payd callbacks resend ID
//	payd version
//
// Configuration comes from flags, then PAYD_* environment variables, then
// defaults that work on a laptop.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; main only supplies the process's context,
// arguments, environment and streams, so tests can run it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, args, getenv, stdout, stderr)
	case "migrate":
		err = migrate(ctx, args, getenv, stdout)
	case "merchant":
		err = merchant(ctx, args, getenv, stdout)
	case "callbacks":
		err = callbacks(ctx, args, getenv, stdout)
	case "version":
		fmt.Fprintln(stdout, "payd", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "payd: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintln(stderr, "payd:", err)
		return 1
	}
	return 0
}

const usage = `Usage:
  payd [serve] [flags]             serve the API and the hosted pages (default)
  payd migrate [flags]             apply database migrations
  payd merchant create --name NAME [--commission BP] [--iban IBAN] [--mcc MCC]
  payd merchant list
  payd merchant rotate-secret MERCHANT_OR_CLIENT_ID
  payd callbacks list [--state pending|delivered|failed] [--limit N]
  payd callbacks resend CALLBACK_ID
  payd version

Run "payd serve -h" for the settings; each flag has a PAYD_* variable.
`
