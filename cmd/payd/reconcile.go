package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"payd"
	"payd/internal/httpapi"
	"payd/internal/rails/iso20022"
)

// reconcileCmd is "payd reconcile import|report|explain|match": the
// operator's side of reconciliation (docs/reconciliation.md).
func reconcileCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, args := args[0], args[1:]
	if findCommand("reconcile "+sub) == nil {
		groupUsage(stderr, "reconcile")
		return errUsage
	}
	var date, from, to, account, merchant, outcome, note, by string
	var seq int
	var asJSON, asCSV bool
	extra := func(fs *flag.FlagSet) {
		switch sub {
		case "report":
			fs.StringVar(&date, "date", "", "one booking date, YYYY-MM-DD (the bank's calendar)")
			fs.StringVar(&from, "from", "", "the first booking date")
			fs.StringVar(&to, "to", "", "the last booking date")
			fs.StringVar(&account, "account", "", "one account (IBAN)")
			fs.StringVar(&merchant, "merchant", "", "one merchant's id")
			fs.StringVar(&outcome, "outcome", "", "one outcome (missing_in_payd, missing_in_bank, …)")
			fs.BoolVar(&asJSON, "json", false, "print JSON, as GET /v2/reports/reconciliation (the default when the output is not a terminal)")
			fs.BoolVar(&asCSV, "csv", false, "print the lines as CSV")
		case "explain":
			fs.IntVar(&seq, "seq", 0, "the line's place in its entry (0 for an entry of one)")
			fs.StringVar(&note, "note", "", "why the line needs nothing more (required)")
			fs.StringVar(&by, "by", "", "who explains it (default: the user running the command)")
		case "match":
			fs.StringVar(&from, "from", "", "the first booking date")
			fs.StringVar(&to, "to", "", "the last booking date")
			fs.StringVar(&by, "by", "", "who runs it (default: the user running the command)")
		}
	}
	c, fs, err := loadConfig("reconcile "+sub, args, getenv, stdout, extra)
	if err != nil {
		return err
	}
	loc := c.BankLocation
	if loc == nil {
		loc = time.UTC
	}
	if by == "" {
		by = getenv("USER")
	}
	if by == "" {
		by = "operator"
	}
	// The arguments are checked before the database is opened.
	var st *payd.Statement
	var f payd.ReconFilter
	switch sub {
	case "import":
		if fs.NArg() != 1 {
			return errors.New("usage: payd reconcile import FILE")
		}
		body, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return err
		}
		if len(body) > iso20022.StatementLimit {
			return fmt.Errorf("%s: larger than %d bytes", fs.Arg(0), iso20022.StatementLimit)
		}
		if st, err = iso20022.ReadStatement(body, loc); err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
	case "report":
		if date != "" {
			from, to = date, date
		}
		if from == "" || to == "" {
			return errors.New("--date YYYY-MM-DD, or --from and --to, is required")
		}
		f = payd.ReconFilter{From: from, To: to, Account: payd.NormalizeIBAN(account), MerchantID: merchant, Outcome: outcome}
		if asJSON && asCSV {
			return errors.New("--json or --csv, not both")
		}
	case "explain":
		if fs.NArg() != 1 || strings.TrimSpace(note) == "" {
			return errors.New("usage: payd reconcile explain ENTRY_ID [--seq N] --note TEXT [--by NAME]")
		}
	case "match":
		if _, err := time.Parse(time.DateOnly, from); err != nil {
			return errors.New("--from YYYY-MM-DD is required")
		}
		if _, err := time.Parse(time.DateOnly, to); err != nil {
			return errors.New("--to YYYY-MM-DD is required")
		}
	}
	clock := payd.SystemClock{}
	store, err := openStore(ctx, c, clock, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "import":
		taken, err := store.ImportStatement(ctx, st, "file", clock.Now())
		if errors.Is(err, payd.ErrStatementReused) {
			return fmt.Errorf("%s %s page %d: MsgId taken before for other content; a correction needs a MsgId of its own", st.Kind, st.MsgID, st.Page)
		}
		if err != nil {
			return err
		}
		if !taken.Fresh {
			fmt.Fprintf(stdout, "%s %s was taken before: nothing changed\n", st.Kind, st.MsgID)
			return nil
		}
		fmt.Fprintf(stdout, "%s.%s %s taken: %d account(s), %d booked entries (%d new)", st.Kind, st.Version, st.MsgID, len(st.Reports),
			taken.Entries, taken.New)
		if len(taken.Superseded) > 0 {
			fmt.Fprintf(stdout, "; it corrects %s", strings.Join(taken.Superseded, ", "))
		}
		fmt.Fprintln(stdout)
		return nil
	case "explain":
		if err := store.Explain(ctx, fs.Arg(0), seq, note, by, clock.Now()); errors.Is(err, payd.ErrNotFound) {
			return fmt.Errorf("no line %s/%d", fs.Arg(0), seq)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "explained %s/%d\n", fs.Arg(0), seq)
		return nil
	case "match":
		n, err := store.MatchAgain(ctx, from, to, by, clock.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "matched %d lines of %s to %s\n", n, from, to)
		return nil
	}
	r, err := store.ReconReport(ctx, f)
	if err != nil {
		return err
	}
	if asCSV {
		return httpapi.WriteReconCSV(stdout, r)
	}
	rep := httpapi.NewReconReport(r)
	if asJSON || !isTerminal(stdout) {
		return printJSON(stdout, rep)
	}
	closed := "open: the bank's end-of-day statement (camt.053) has not closed every account's day, so not every payment is looked for"
	if rep.Closed {
		closed = "closed by the bank's end-of-day statements"
	}
	fmt.Fprintf(stdout, "Reconciliation of %s to %s (%s)\n", r.From, r.To, closed)
	for _, t := range r.Totals() {
		fmt.Fprintf(stdout, "  %-17s %5d  %s %s\n", t.Outcome, t.Count, t.Amount, t.Currency)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DATE\tOUTCOME\tACCOUNT\tDIRECTION\tAMOUNT\tPAYD\tEND-TO-END\tTX\tPAYMENT\tREFUND\tNOTE")
	for _, l := range r.Lines {
		paydAmt := ""
		if l.PaydAmount != nil {
			paydAmt = l.PaydAmount.String()
		}
		what := l.Outcome
		if l.Class != "" {
			what += " (" + l.Class + ")"
		}
		if l.Review {
			what += " review"
		}
		note := l.Detail
		if l.Explained != nil {
			note = "explained: " + l.Explained.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.BookingDate, what, l.Account, l.Direction, l.Amount, l.Currency, paydAmt,
			l.EndToEndID, l.TxID, l.PaymentID, l.RefundID, note)
	}
	if len(r.Lines) == 0 {
		fmt.Fprintln(tw, "(nothing booked or expected on these dates)")
	}
	return tw.Flush()
}
