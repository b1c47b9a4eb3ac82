// Command payd is the payd payments service: one binary that serves the
// merchant API and the hosted pages, runs the background work, and carries
// the operator's commands.
//
//	payd [serve] [flags]           serve the API (the default)
//	payd migrate                   apply database migrations
//	payd merchant create --name N  provision a merchant (prints JSON credentials)
//	payd callbacks list|resend     the callback log
//	payd keys rotate               re-seal secrets under a new operator key
//	payd backup PATH               copy a SQLite database with its key file
//	payd --version
//
// cli.go lists every command with its flags. Configuration comes from
// flags, then PAYD_* environment variables, then defaults that work on a
// laptop.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // the bank's time zone in a container without zoneinfo (FROM scratch)
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
	switch {
	case len(args) > 0 && isHelp(args[0]):
		usage(stdout)
		return 0
	case len(args) > 0 && (args[0] == "--version" || args[0] == "-version"):
		cmd, args = "version", args[1:]
	case len(args) > 0 && args[0] != "" && args[0][0] != '-':
		cmd, args = args[0], args[1:]
	}
	if isGroup(cmd) && (len(args) == 0 || isHelp(args[0])) {
		if len(args) == 0 {
			groupUsage(stderr, cmd)
			return 2
		}
		groupUsage(stdout, cmd)
		return 0
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
	case "reconcile":
		err = reconcileCmd(ctx, args, getenv, stdout, stderr)
	case "healthcheck":
		err = healthcheck(ctx, args, getenv, stdout)
	case "keys":
		err = keysCmd(ctx, args, getenv, stdout, stderr)
	case "version":
		if _, _, err = loadConfig("version", args, getenv, stdout, nil); err == nil {
			fmt.Fprintln(stdout, versionLine())
		}
	default:
		fmt.Fprintf(stderr, "payd: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case err == errHelp:
		return 0
	case err == errUsage:
		return 2
	}
	fmt.Fprintln(stderr, "payd:", redact(err.Error()))
	return 1
}
