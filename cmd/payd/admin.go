package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"payd"
	"payd/internal/sqlstore"
)

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c, _, err := loadConfig("migrate", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(c.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	applied, err := store.Migrate(ctx, payd.SystemClock{}.Now())
	for _, name := range applied {
		fmt.Fprintln(stdout, "applied", name)
	}
	if err == nil && len(applied) == 0 {
		fmt.Fprintln(stdout, "database is up to date")
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printList writes a list as JSON (with --json, or when the output is not
// a terminal, so scripts read JSON) or as a table for a person.
func printList(w io.Writer, asJSON bool, v any, header []string, rows [][]string) error {
	return writeList(w, asJSON || !isTerminal(w), v, header, rows)
}

func writeList(w io.Writer, asJSON bool, v any, header []string, rows [][]string) error {
	if asJSON {
		return printJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

type merchantView struct {
	MerchantID   string `json:"merchantId"`
	Name         string `json:"name"`
	ClientID     string `json:"clientId"`
	Active       bool   `json:"active"`
	CommissionBP int    `json:"commissionBp"`
	IBAN         string `json:"iban,omitempty"`
	MCC          string `json:"mcc"`
	CreatedAt    string `json:"createdAt"`
}

func merchant(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, args := args[0], args[1:]
	if findCommand("merchant "+sub) == nil {
		groupUsage(stderr, "merchant")
		return errUsage
	}
	var name, iban, mcc string
	var commission int
	var asJSON bool
	extra := func(fs *flag.FlagSet) {
		if sub == "list" {
			fs.BoolVar(&asJSON, "json", false, "print JSON (the default when the output is not a terminal)")
		}
		if sub == "create" {
			fs.StringVar(&name, "name", "", "display name (required)")
			fs.IntVar(&commission, "commission", 0, "commission rate in basis points (0–10000)")
			fs.StringVar(&iban, "iban", "", "IBAN reported as recipientIban")
			fs.StringVar(&mcc, "mcc", "NONE", "merchant category code")
		}
	}
	c, fs, err := loadConfig("merchant "+sub, args, getenv, stdout, extra)
	if err != nil {
		return err
	}
	// The arguments are checked before the database is opened: a mistyped
	// command creates and migrates nothing.
	switch sub {
	case "create":
		if name == "" || commission < 0 || commission > 10000 {
			return errors.New("merchant create needs --name, and --commission between 0 and 10000")
		}
		iban = payd.NormalizeIBAN(iban)
		if iban != "" && !payd.ValidIBAN(iban) {
			return fmt.Errorf("--iban %q is not an IBAN (two letters, two check digits, up to 30 letters and digits, with a valid checksum)", iban)
		}
		if iban == "" && !c.sandbox() {
			return errors.New("merchant create needs --iban in production: a payer's credit is applied only when it reached the merchant's own account")
		}
	case "rotate-secret", "activate", "deactivate":
		if fs.NArg() != 1 {
			return fmt.Errorf("merchant %s needs one merchant id or client id", sub)
		}
	}
	clock := payd.SystemClock{}
	store, err := openStore(ctx, c, clock, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "create":
		cr, err := store.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: name, CommissionBP: commission, IBAN: iban, MCC: mcc}, clock.Now())
		if err != nil {
			return err
		}
		return printJSON(stdout, cr)
	case "list":
		ms, err := store.Merchants(ctx)
		if err != nil {
			return err
		}
		out := make([]merchantView, len(ms))
		rows := make([][]string, len(ms))
		for i, m := range ms {
			out[i] = merchantView{MerchantID: m.ID, Name: m.Name, ClientID: m.ClientID, Active: m.Active,
				CommissionBP: m.CommissionBP, IBAN: m.IBAN, MCC: m.MCC, CreatedAt: payd.FormatTime(m.CreatedAt)}
			rows[i] = []string{m.ID, m.Name, m.ClientID, strconv.FormatBool(m.Active), strconv.Itoa(m.CommissionBP), m.IBAN, out[i].CreatedAt}
		}
		return printList(stdout, asJSON, out, []string{"MERCHANT", "NAME", "CLIENT ID", "ACTIVE", "COMMISSION BP", "IBAN", "CREATED"}, rows)
	case "rotate-secret", "activate", "deactivate":
		id := fs.Arg(0)
		if sub == "rotate-secret" {
			cr, err := store.RotateSecret(ctx, id, clock.Now())
			if errors.Is(err, payd.ErrNotFound) {
				return fmt.Errorf("no merchant %s", id)
			}
			if err != nil {
				return err
			}
			return printJSON(stdout, cr)
		}
		if err := store.SetMerchantActive(ctx, id, sub == "activate"); err != nil {
			if errors.Is(err, payd.ErrNotFound) {
				return fmt.Errorf("no merchant %s", id)
			}
			return err
		}
		fmt.Fprintln(stdout, sub+"d", id)
		return nil
	}
	return fmt.Errorf("unknown merchant command %q", sub)
}

type callbackView struct {
	ID          string `json:"id"`
	MerchantID  string `json:"merchantId"`
	Event       string `json:"event"`
	SubjectID   string `json:"subjectId"`
	URL         string `json:"url"`
	State       string `json:"state"`
	Attempts    int    `json:"attempts"`
	NextAttempt string `json:"nextAttemptAt,omitempty"`
	CreatedAt   string `json:"createdAt"`
	DeliveredAt string `json:"deliveredAt,omitempty"`
	LastStatus  int    `json:"lastStatus,omitempty"`
	LastError   string `json:"lastError,omitempty"`
}

func callbacks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sub, args := args[0], args[1:]
	if findCommand("callbacks "+sub) == nil {
		groupUsage(stderr, "callbacks")
		return errUsage
	}
	var state string
	var limit int
	var asJSON bool
	extra := func(fs *flag.FlagSet) {
		if sub == "list" {
			fs.StringVar(&state, "state", "", "pending, delivered or failed")
			fs.IntVar(&limit, "limit", 100, "how many, newest first")
			fs.BoolVar(&asJSON, "json", false, "print JSON (the default when the output is not a terminal)")
		}
	}
	c, fs, err := loadConfig("callbacks "+sub, args, getenv, stdout, extra)
	if err != nil {
		return err
	}
	switch sub { // before the database is opened
	case "list":
		switch payd.CallbackState(state) {
		case "", payd.CallbackPending, payd.CallbackDelivered, payd.CallbackFailed:
		default:
			return fmt.Errorf("--state must be pending, delivered or failed")
		}
	case "resend":
		if fs.NArg() != 1 {
			return errors.New("callbacks resend needs one callback id")
		}
	}
	clock := payd.SystemClock{}
	store, err := openStore(ctx, c, clock, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "list":
		cbs, err := store.Callbacks(ctx, payd.CallbackState(state), limit)
		if err != nil {
			return err
		}
		out := make([]callbackView, len(cbs))
		rows := make([][]string, len(cbs))
		for i, cb := range cbs {
			v := callbackView{ID: cb.ID, MerchantID: cb.MerchantID, Event: string(cb.Event), SubjectID: cb.SubjectID,
				URL: cb.URL, State: string(cb.State), Attempts: cb.Attempts, CreatedAt: payd.FormatTime(cb.CreatedAt),
				LastStatus: cb.LastStatus, LastError: cb.LastError}
			if cb.State == payd.CallbackPending {
				v.NextAttempt = payd.FormatTime(cb.NextAttemptAt)
			}
			if !cb.DeliveredAt.IsZero() {
				v.DeliveredAt = payd.FormatTime(cb.DeliveredAt)
			}
			out[i] = v
			rows[i] = []string{v.ID, v.Event, v.SubjectID, v.State, strconv.Itoa(v.Attempts), strconv.Itoa(v.LastStatus), v.CreatedAt}
		}
		return printList(stdout, asJSON, out, []string{"CALLBACK", "EVENT", "SUBJECT", "STATE", "ATTEMPTS", "LAST STATUS", "CREATED"}, rows)
	case "resend":
		err := store.ResendCallback(ctx, fs.Arg(0), clock.Now())
		switch {
		case errors.Is(err, payd.ErrNotFound):
			return fmt.Errorf("no callback %s", fs.Arg(0))
		case errors.Is(err, payd.ErrConflict):
			return fmt.Errorf("callback %s has not failed; only failed callbacks can be resent", fs.Arg(0))
		case err != nil:
			return err
		}
		fmt.Fprintln(stdout, "resending", fs.Arg(0))
		return nil
	}
	return fmt.Errorf("unknown callbacks command %q", sub)
}

// keysCmd is "payd keys rotate": every sealed secret is opened with the old
// operator key (given once, here) and sealed again under the new one
// (PAYD_SECRET_KEY or PAYD_SECRET_KEY_FILE), in one transaction. It
// refuses while an instance serves the database: stop every instance
// first, then start them with the new key.
func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if args[0] != "rotate" {
		groupUsage(stderr, "keys")
		return errUsage
	}
	var oldKey, oldFile string
	c, _, err := loadConfig("keys rotate", args[1:], getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&oldKey, "old-key", "", "the previous PAYD_SECRET_KEY (Base64)")
		fs.StringVar(&oldFile, "old-key-file", "", "a file holding the previous key")
	})
	if err != nil {
		return err
	}
	if oldKey == "" && oldFile == "" {
		return errors.New("keys rotate needs --old-key or --old-key-file")
	}
	if c.SecretKey == "" {
		return errors.New("keys rotate needs the new key in PAYD_SECRET_KEY or PAYD_SECRET_KEY_FILE")
	}
	old, _, err := sqlstore.LoadSecretKey(c.DatabaseURL, oldKey, oldFile, false)
	if err != nil {
		return fmt.Errorf("old key: %w", err)
	}
	newKey, _, err := sqlstore.LoadSecretKey(c.DatabaseURL, c.SecretKey, "", false)
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(c.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.SetSecretKey(newKey); err != nil {
		return err
	}
	if _, err := store.Migrate(ctx, payd.SystemClock{}.Now()); err != nil {
		return err
	}
	// An instance serving the database keeps the old key: re-sealed under
	// the new one, nothing it reads would open, and every merchant would be
	// locked out. Serving instances renew a row of theirs every few
	// seconds (sqlstore.Serving); one that was killed counts until its row
	// runs out.
	serving, err := store.ServingInstances(ctx, payd.SystemClock{}.Now())
	if err != nil {
		return err
	}
	if len(serving) > 0 {
		return fmt.Errorf("keys rotate: the database is being served (instances: %s; each renews its row every %s, a killed one's "+
			"counts for %s more): stop every instance first, then start them with the new key", strings.Join(serving, ", "),
			sqlstore.InstanceBeat, sqlstore.InstanceTTL)
	}
	n, err := store.RotateSecretKey(ctx, old)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed %d secrets under the new key\n", n)
	return nil
}

// backup is "payd backup PATH": a consistent online copy of the SQLite
// database, and beside it (PATH.key) the sandbox's key file the copy's
// sealed values need. A key given in PAYD_SECRET_KEY(_FILE) is the
// operator's to keep, apart from the copy; payd says so. It never creates
// a database, and both files are readable by their owner only.
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, fs, err := loadConfig("backup", args, getenv, stderr, nil)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: payd backup PATH")
	}
	dst := fs.Arg(0)
	src, isSQLite := sqlstore.SQLitePath(c.DatabaseURL)
	if !isSQLite {
		return errors.New("payd backup copies SQLite databases; back PostgreSQL up with pg_dump (docs/operations.md)")
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("no database to back up at %s (set PAYD_DATABASE_URL to the database payd serves): %w", src, err)
	}
	key, err := os.ReadFile(sqlstore.KeyFile(src))
	switch {
	case c.SecretKey != "":
		key = nil // the operator's key: not copied
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("the key file %s of %s is missing, and no PAYD_SECRET_KEY is set: a copy without its key cannot be restored", sqlstore.KeyFile(src), src)
	case err != nil:
		return err
	}
	if _, err := os.Stat(sqlstore.KeyFile(dst)); err == nil && key != nil {
		return fmt.Errorf("backup: %s exists", sqlstore.KeyFile(dst))
	}
	store, err := sqlstore.Open(c.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Backup(ctx, dst); err != nil {
		return err
	}
	if key == nil {
		fmt.Fprintf(stdout, "backed up %s to %s (readable by its owner only). Its signature keys are sealed under your PAYD_SECRET_KEY: "+
			"a restore needs that key, so keep it too, apart from the copy\n", src, dst)
		return nil
	}
	if err := os.WriteFile(sqlstore.KeyFile(dst), key, 0o600); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup: the key file: %w", err)
	}
	fmt.Fprintf(stdout, "backed up %s to %s and its key file to %s (both readable by their owner only); restore them together, "+
		"as the database and its .key file\n", src, dst, sqlstore.KeyFile(dst))
	return nil
}
