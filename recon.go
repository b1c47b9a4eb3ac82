package payd

import (
	"context"
	"sort"
	"strings"
	"time"
)

// Reconciliation: payd's ledger against the bank's statements. The bank
// books every credit that reached a merchant's account and every return it
// sent back; payd records payments and refunds. Each statement entry is
// matched to the payment or refund it books, and what does not match is
// named, so that money booked without a payment, or a payment without its
// money, is seen the day it happens.

// Reconciliation outcomes.
const (
	ReconMatched        = "matched"         // the entry books this payment or refund, at its amount
	ReconMissingInPayd  = "missing_in_payd" // money booked, and payd has no payment or refund for it
	ReconMissingInBank  = "missing_in_bank" // a payment or refund payd recorded, booked by no statement
	ReconAmountMismatch = "amount_mismatch" // the entry books this payment or refund at another amount
	ReconDuplicate      = "duplicate"       // a second booking of what another entry booked already
)

// ReconOutcomes are the outcomes in the order reports list them.
var ReconOutcomes = []string{ReconMissingInPayd, ReconMissingInBank, ReconAmountMismatch, ReconDuplicate, ReconMatched}

// Entry directions.
const (
	DirCredit = "credit" // money into the merchant's account: a payer's payment
	DirDebit  = "debit"  // money out of it: a refund's return
)

// ReconTolerance is how far from its booking date an entry without
// references may find its payment by amount, and a late booking its
// payment or refund at all.
const ReconTolerance = 48 * time.Hour

// Statement is a bank's statement message as payd takes it: an end-of-day
// statement (camt.053) or an intraday notification (camt.054) of one or
// more accounts.
type Statement struct {
	MsgID     string // the bank's message id: a statement is taken once
	Kind      string // camt.053 or camt.054
	EndOfDay  bool   // camt.053: the days it covers are closed
	CreatedAt time.Time
	Reports   []StatementReport
}

// StatementReport is one account's part of a statement.
type StatementReport struct {
	ID       string // the bank's statement id
	Account  string // IBAN, normalized
	From, To string // the booking dates it covers, YYYY-MM-DD
	Entries  []StatementEntry
}

// StatementBook takes the bank's statements: once each (by MsgID), its
// entries matched as they arrive. source says how it came (rails, file).
type StatementBook interface {
	ImportStatement(ctx context.Context, st *Statement, source string, now time.Time) (fresh bool, err error)
}

// StatementEntry is one booked entry of a bank statement, as payd reads it.
type StatementEntry struct {
	ID          string // payd's id of the entry
	Account     string // the account's IBAN, normalized
	BookingDate string // YYYY-MM-DD
	Direction   string // Credit or Debit
	Amount      Money
	Currency    string
	EntryRef    string // NtryRef
	BankRef     string // AcctSvcrRef: the bank's reference of the booking
	EndToEndID  string // what the payment named (a qrId, extensionId, rtpId), normalized
	TxID        string // the transaction's reference: a credit's pacs.008 TxId, a return's refundId
}

// ReconItem is a payment or refund payd expects the bank to book.
type ReconItem struct {
	Kind       string // "payment" or "refund"
	ID         string
	Account    string // the merchant's IBAN, normalized
	Direction  string
	Amount     Money
	Currency   string
	At         time.Time // executed
	EndToEndID string    // the id the payment named: its RTP, QR or extension (a refund: its payment's)
	BankRef    string    // a payment's network reference (pacs.008 TxId); a refund's id
	// TargetIDs are every id a credit for it may name (a Hybrid QR's
	// payment: the extension and the QR).
	TargetIDs []string
}

// Key is the item's identity across kinds.
func (i ReconItem) Key() string { return i.Kind + ":" + i.ID }

// ReconMatch is what matching decided for one entry.
type ReconMatch struct {
	EntryID    string
	Outcome    string
	ItemKind   string // the payment or refund it books (matched, amount_mismatch, duplicate)
	ItemID     string
	PaydAmount Money // the item's amount (amount_mismatch shows both)
}

// MatchEntries matches statement entries to payd's items, in the order
// given (oldest booking first), each entry against the items of its
// account and direction: by end-to-end id first (narrowed by the
// transaction reference when several payments share it, as a Static QR's
// do), then by the transaction reference alone, then, for an entry that
// names nothing, by amount within ReconTolerance of its booking date.
// taken holds the items already booked by earlier entries (item key →
// the entry that booked it); MatchEntries adds to it. An entry that finds
// only items booked already is a duplicate; one that finds its item at
// another amount is an amount mismatch (the item counts as booked); one
// that finds nothing is missing in payd.
func MatchEntries(entries []StatementEntry, items []ReconItem, taken map[string]string) []ReconMatch {
	type slot struct{ account, direction string }
	by := map[slot][]ReconItem{}
	for _, it := range items {
		s := slot{it.Account, it.Direction}
		by[s] = append(by[s], it)
	}
	out := make([]ReconMatch, 0, len(entries))
	for _, e := range entries {
		out = append(out, matchEntry(e, by[slot{e.Account, e.Direction}], taken))
	}
	return out
}

func matchEntry(e StatementEntry, items []ReconItem, taken map[string]string) ReconMatch {
	booked, _ := time.Parse(time.DateOnly, e.BookingDate)
	near := func(it ReconItem) bool {
		d := it.At.Sub(booked.Add(12 * time.Hour))
		return d <= ReconTolerance && d >= -ReconTolerance
	}
	var cands []ReconItem
	switch {
	case e.EndToEndID != "" && e.EndToEndID != NotProvidedRef:
		for _, it := range items {
			if it.names(e.EndToEndID) && (e.TxID == "" || it.BankRef == "" || it.BankRef == e.TxID) {
				cands = append(cands, it)
			}
		}
	case e.TxID != "":
		for _, it := range items {
			if it.BankRef == e.TxID {
				cands = append(cands, it)
			}
		}
	default:
		for _, it := range items {
			if it.Amount == e.Amount && it.Currency == e.Currency && near(it) {
				cands = append(cands, it)
			}
		}
	}
	if len(cands) == 0 && e.TxID != "" && e.EndToEndID != "" {
		// The end-to-end id led nowhere; the transaction reference may.
		for _, it := range items {
			if it.BankRef == e.TxID {
				cands = append(cands, it)
			}
		}
	}
	// The best candidate: not booked yet, the exact reference, the same
	// amount, the closest in time.
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ta, tb := taken[a.Key()] != "", taken[b.Key()] != ""; ta != tb {
			return !ta
		}
		if ra, rb := a.BankRef == e.TxID && e.TxID != "", b.BankRef == e.TxID && e.TxID != ""; ra != rb {
			return ra
		}
		if aa, ab := a.Amount == e.Amount, b.Amount == e.Amount; aa != ab {
			return aa
		}
		return absDur(a.At.Sub(booked)) < absDur(b.At.Sub(booked))
	})
	m := ReconMatch{EntryID: e.ID, Outcome: ReconMissingInPayd}
	if len(cands) == 0 {
		return m
	}
	it := cands[0]
	m.ItemKind, m.ItemID, m.PaydAmount = it.Kind, it.ID, it.Amount
	switch {
	case taken[it.Key()] != "" && taken[it.Key()] != e.ID:
		m.Outcome = ReconDuplicate
	case it.Amount != e.Amount || it.Currency != e.Currency:
		m.Outcome = ReconAmountMismatch
		taken[it.Key()] = e.ID
	default:
		m.Outcome = ReconMatched
		taken[it.Key()] = e.ID
	}
	return m
}

func (i ReconItem) names(id string) bool {
	if i.EndToEndID == id {
		return true
	}
	for _, t := range i.TargetIDs {
		if t == id {
			return true
		}
	}
	return false
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// NotProvidedRef is the reference a bank writes when there is none.
const NotProvidedRef = "NOTPROVIDED"

// NormalizeRef writes a reference as payd compares it: one of payd's ids
// (hyphenated, or as the 32 hex digits of its ISO messages, any case) as
// its hyphenated lower-case form; anything else as given, trimmed.
func NormalizeRef(s string) string {
	s = strings.TrimSpace(s)
	h := strings.ToLower(s)
	if len(h) == 32 && strings.Trim(h, "0123456789abcdef") == "" {
		h = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	if id, ok := ParseID(h); ok {
		return id
	}
	return s
}

// ReconDay is the reconciliation of one booking date: every entry booked
// that day with its outcome, and every payment or refund of that day that
// no statement booked (missing in the bank), once the bank's end-of-day
// statement for the date has arrived.
type ReconDay struct {
	Date       string
	Closed     bool // an end-of-day statement (camt.053) for the date arrived
	Statements []StatementInfo
	Lines      []ReconLine
}

// StatementInfo is a statement payd took.
type StatementInfo struct {
	MsgID, Kind, StatementID, Account string
	ReceivedAt                        time.Time
	Entries                           int
}

// ReconLine is one line of a reconciliation report.
type ReconLine struct {
	Outcome     string
	Account     string
	Direction   string
	Amount      Money  // as booked; a missing_in_bank line: payd's
	PaydAmount  *Money // payd's, when an item was found
	Currency    string
	BookingDate string
	EntryID     string // "" for missing_in_bank
	EntryRef    string
	BankRef     string
	EndToEndID  string
	TxID        string
	PaymentID   string
	RefundID    string
	MerchantID  string
}

// Counts are the lines by outcome.
func (d *ReconDay) Counts() map[string]int {
	out := map[string]int{}
	for _, o := range ReconOutcomes {
		out[o] = 0
	}
	for _, l := range d.Lines {
		out[l.Outcome]++
	}
	return out
}

// SettlementDay is what a merchant was paid in one currency on one day
// (UTC): its payments (declined cards not counted) and their commission,
// its accepted refunds, and the net.
type SettlementDay struct {
	Date       string // YYYY-MM-DD; "" for a total
	Currency   string
	Payments   int
	Gross      Money
	Commission Money
	Refunds    int
	Refunded   Money
	Net        Money
}

// Settle computes the net: gross, less the commission and the refunds.
func (d *SettlementDay) Settle() { d.Net = d.Gross - d.Commission - d.Refunded }

// SettlementTotals sums days per currency, in the order the currencies
// first appear.
func SettlementTotals(days []SettlementDay) []SettlementDay {
	var out []SettlementDay
	at := map[string]int{}
	for _, d := range days {
		i, ok := at[d.Currency]
		if !ok {
			i = len(out)
			at[d.Currency] = i
			out = append(out, SettlementDay{Currency: d.Currency})
		}
		t := &out[i]
		t.Payments += d.Payments
		t.Gross += d.Gross
		t.Commission += d.Commission
		t.Refunds += d.Refunds
		t.Refunded += d.Refunded
	}
	for i := range out {
		out[i].Settle()
	}
	return out
}
