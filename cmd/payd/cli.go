package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// command describes one of payd's commands for its help: how it is
// called, what it does, an example, and which settings it takes as flags.
// Every setting can still be given as its PAYD_* variable; a command's
// flags are only those it reads, so its -h shows what it needs.
type command struct {
	name    string   // "merchant create"
	args    string   // what follows the name
	summary string   // one line
	example string   // one line
	flags   []string // the settings offered as flags; nil: every setting (serve)
}

// storeFlags are the settings of the commands that work on the database.
var storeFlags = []string{"database-url", "mode", "secret-key-file"}

var commands = []command{
	{"serve", "[flags]", "serve the API, the hosted pages and the background work (the default command)",
		"PAYD_DATABASE_URL=postgres://payd@db/payd PAYD_MODE=production PAYD_PUBLIC_URL=https://pay.example.com payd serve", nil},
	{"migrate", "", "apply the database migrations (serve applies them too)", "payd migrate --database-url postgres://payd@db/payd", storeFlags},
	{"merchant create", "--name NAME [--commission BP] [--iban IBAN] [--mcc MCC]", "provision a merchant; prints its credentials as JSON (the secret is shown once)",
		`payd merchant create --name "My shop" --iban MD24AG000225100013104168`, storeFlags},
	{"merchant list", "[--json]", "list the merchants (a table on a terminal, JSON otherwise)", "payd merchant list --json", storeFlags},
	{"merchant rotate-secret", "MERCHANT_OR_CLIENT_ID", "issue a new client secret; the old one and all its tokens stop working",
		"payd merchant rotate-secret 01a1fd38-56fa-7f9d-ba9b-1038a64df444", storeFlags},
	{"merchant activate", "MERCHANT_OR_CLIENT_ID", "let a deactivated merchant take payments again", "payd merchant activate 01a1fd38-56fa-7f9d-ba9b-1038a64df444", storeFlags},
	{"merchant deactivate", "MERCHANT_OR_CLIENT_ID", "stop a merchant: its tokens and pages refuse every payment (403)", "payd merchant deactivate 01a1fd38-56fa-7f9d-ba9b-1038a64df444", storeFlags},
	{"callbacks list", "[--state pending|delivered|failed] [--limit N] [--json]", "list callbacks, newest first", "payd callbacks list --state failed", storeFlags},
	{"callbacks resend", "CALLBACK_ID", "queue a failed callback again, with a fresh schedule", "payd callbacks resend 01a1fd38-56fa-7f9d-ba9b-1038a64df444", storeFlags},
	{"keys rotate", "--old-key-file FILE", "re-seal every sealed secret under the new key in PAYD_SECRET_KEY(_FILE); stop every instance first",
		"PAYD_SECRET_KEY_FILE=new.key payd keys rotate --old-key-file old.key", []string{"database-url", "secret-key-file"}},
	{"backup", "PATH", "a consistent copy of a SQLite database while it serves, with its key file (PostgreSQL: pg_dump)",
		"payd backup /var/backups/payd-$(date +%F).db", []string{"database-url", "secret-key-file"}},
	{"reconcile import", "FILE", "take a bank statement (camt.053 or camt.054 XML, .001.02, .001.04 or .001.08) and reconcile it; the same document again changes nothing",
		"payd reconcile import statement-2026-11-25.xml", reconFlags},
	{"reconcile report", "--date YYYY-MM-DD | --from D --to D [--account IBAN] [--merchant ID] [--outcome O] [--json | --csv]",
		"the reconciliation of booking dates: every line's outcome, what no statement booked, the sums that do not hold, totals",
		"payd reconcile report --date 2026-11-25", reconFlags},
	{"reconcile explain", "ENTRY_ID [--seq N] --note TEXT [--by NAME]", "explain a line: it asks nothing more (audited)",
		`payd reconcile explain 8f3e… --note "the bank's monthly fee" --by ana`, reconFlags},
	{"reconcile match", "--from D --to D [--by NAME]", "match again the open lines of booking dates: what arrived late resolves (audited)",
		"payd reconcile match --from 2026-11-20 --to 2026-11-25", reconFlags},
	{"healthcheck", "[--url URL]", "exit 0 when payd answers /readyz with 200 (a container's health check; no curl needed)",
		"payd healthcheck --url http://127.0.0.1:8080/readyz", []string{}},
	{"version", "", "print the version, commit and build time", "payd version", []string{}},
}

// reconFlags are the store's flags and the bank's time zone.
var reconFlags = append(append([]string{}, storeFlags...), "bank-timezone")

// groups are the commands that take a subcommand.
var groups = []string{"merchant", "callbacks", "keys", "reconcile"}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// isGroup reports whether name is a command that takes a subcommand.
func isGroup(name string) bool {
	for _, g := range groups {
		if g == name {
			return true
		}
	}
	return false
}

// groupUsage lists the subcommands of a group ("payd merchant -h").
func groupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage: payd %s COMMAND [flags]\n\nCommands:\n", group)
	for _, c := range commands {
		if strings.HasPrefix(c.name, group+" ") {
			fmt.Fprintf(w, "  payd %s\n      %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun \"payd %s COMMAND -h\" for a command's flags.\n", group)
}

// usage is payd -h: every command, one line each.
func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  payd %s\n      %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	fmt.Fprint(w, `
Every setting is a flag of the commands that read it and a PAYD_* variable (a flag wins);
every secret can also come from a file (PAYD_*_FILE, --*-file). Run "payd COMMAND -h" for a
command's own flags, "payd serve -h" for every setting, "payd --version" for the version.
`)
}

// commandUsage is a command's -h: how it is called, what it does, an
// example, and its flags.
func commandUsage(fs *flag.FlagSet, c *command) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: payd %s\n\n%s.\n\nExample:\n  %s\n", strings.TrimSpace(c.name+" "+c.args), capitalize(c.summary), c.example)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags (each setting also reads its PAYD_* variable):")
			fs.PrintDefaults()
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
