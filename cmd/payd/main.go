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
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…"; without
// it the module version from the build info is used.
var version = "dev"

// versionLine is "payd VERSION (commit COMMIT, built DATE)" from the build
// info Go records (the VCS revision and time of the checkout it was built
// from; "+dirty" when it had uncommitted changes).
func versionLine() string {
	v, commit, date := version, "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		dirty := ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		commit += dirty
	}
	return fmt.Sprintf("payd %s (commit %s, built %s)", v, commit, date)
}

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
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		cmd = "help"
	} else if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx, args, getenv, stdout, stderr)
	case "migrate":
		err = migrate(ctx, args, getenv, stdout)
	case "merchant":
		err = merchant(ctx, args, getenv, stdout, stderr)
	case "callbacks":
		err = callbacks(ctx, args, getenv, stdout, stderr)
	case "backup":
		err = backup(ctx, args, getenv, stdout, stderr)
	case "keys":
		err = keysCmd(ctx, args, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionLine())
	case "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "payd: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintln(stderr, "payd:", redact(err.Error()))
		return 1
	}
	return 0
}

const usage = `Usage:
  payd [serve] [flags]             serve the API and the hosted pages (default)
  payd migrate [flags]             apply database migrations
  payd merchant create --name NAME [--commission BP] [--iban IBAN] [--mcc MCC]
  payd merchant list [--json]
  payd merchant rotate-secret MERCHANT_OR_CLIENT_ID
  payd callbacks list [--state pending|delivered|failed] [--limit N] [--json]
  payd callbacks resend CALLBACK_ID
  payd keys rotate --old-key BASE64 | --old-key-file FILE   re-seal every signature key under PAYD_SECRET_KEY
  payd backup PATH                 a consistent copy of a SQLite database while it serves (PostgreSQL: pg_dump)
  payd version

Run "payd serve -h" for the settings; each flag has a PAYD_* variable.
`
