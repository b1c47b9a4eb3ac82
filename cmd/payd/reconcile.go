package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"payd"
	"payd/internal/httpapi"
	"payd/internal/rails/iso20022"
)

// reconcileCmd is "payd reconcile import FILE" and "payd reconcile report
// --date D": the operator's side of reconciliation (docs/reconciliation.md).
func reconcileCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, args := args[0], args[1:]
	if findCommand("reconcile "+sub) == nil {
		groupUsage(stderr, "reconcile")
		return errUsage
	}
	var date string
	var asJSON bool
	extra := func(fs *flag.FlagSet) {
		if sub == "report" {
			fs.StringVar(&date, "date", "", "the booking date, YYYY-MM-DD")
			fs.BoolVar(&asJSON, "json", false, "print JSON, as GET /v2/reports/reconciliation (the default when the output is not a terminal)")
		}
	}
	c, fs, err := loadConfig("reconcile "+sub, args, getenv, stdout, extra)
	if err != nil {
		return err
	}
	var st *payd.Statement
	switch sub {
	case "import":
		if fs.NArg() != 1 {
			return errors.New("usage: payd reconcile import FILE")
		}
		body, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return err
		}
		if st, err = iso20022.ReadStatement(body); err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
	case "report":
		if _, err := time.Parse(time.DateOnly, date); err != nil {
			return errors.New("--date YYYY-MM-DD is required")
		}
	}
	clock := payd.SystemClock{}
	store, err := openStore(ctx, c, clock, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	if sub == "import" {
		fresh, err := store.ImportStatement(ctx, st, "file", clock.Now())
		if err != nil {
			return err
		}
		n := 0
		for _, r := range st.Reports {
			n += len(r.Entries)
		}
		if !fresh {
			fmt.Fprintf(stdout, "%s %s was taken before: nothing changed\n", st.Kind, st.MsgID)
			return nil
		}
		fmt.Fprintf(stdout, "%s %s taken: %d account(s), %d booked entries\n", st.Kind, st.MsgID, len(st.Reports), n)
		return nil
	}
	d, err := store.ReconDay(ctx, date)
	if err != nil {
		return err
	}
	rep := httpapi.NewReconReport(d)
	if asJSON || !isTerminal(stdout) {
		return printJSON(stdout, rep)
	}
	closed := "open: no end-of-day statement (camt.053) yet, so nothing is reported missing in the bank"
	if d.Closed {
		closed = "closed by the bank's end-of-day statement"
	}
	fmt.Fprintf(stdout, "Reconciliation of %s (%s)\n", date, closed)
	var counts []string
	for _, o := range payd.ReconOutcomes {
		counts = append(counts, o+" "+strconv.Itoa(rep.Counts[o]))
	}
	fmt.Fprintln(stdout, strings.Join(counts, ", "))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tACCOUNT\tDIRECTION\tAMOUNT\tPAYD\tEND-TO-END\tTX\tPAYMENT\tREFUND")
	for _, l := range d.Lines {
		payd := ""
		if l.PaydAmount != nil {
			payd = l.PaydAmount.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\t%s\t%s\t%s\n", l.Outcome, l.Account, l.Direction, l.Amount, l.Currency, payd,
			l.EndToEndID, l.TxID, l.PaymentID, l.RefundID)
	}
	if len(d.Lines) == 0 {
		fmt.Fprintln(tw, "(nothing booked or expected on this date)")
	}
	return tw.Flush()
}
