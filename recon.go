package payd

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Reconciliation: payd's ledger against the bank's statements. The bank
// books every credit that reached a merchant's account and every return it
// sent back; payd records payments and refunds. Each line a statement
// books (a transaction of an entry, or an entry without details) is
// matched to the payment or refund it books, or named for what it is, so
// that money booked without a payment, or a payment without its money, is
// seen the day it happens, and what is no payment at all (a fee, the
// merchant's own transfer) is not reported as one.

// Reconciliation outcomes.
const (
	ReconMatched         = "matched"          // the line books this payment or refund, at its amount
	ReconMissingInPayd   = "missing_in_payd"  // money booked, and payd has no payment or refund for it
	ReconMissingInBank   = "missing_in_bank"  // a payment or refund payd recorded, booked by no statement of its closed day
	ReconAmountMismatch  = "amount_mismatch"  // the line books this payment or refund at another amount
	ReconDuplicate       = "duplicate"        // a second booking of what another line booked already
	ReconReversal        = "reversal"         // the bank takes back an earlier booking (RvslInd)
	ReconReversed        = "reversed"         // a booking the bank took back: its payment or refund is booked no more
	ReconNotPayment      = "not_payment"      // fees, commission, own transfers, another currency, an account of no merchant (Class)
	ReconAwaitingDetails = "awaiting_details" // a lump sum of several transactions whose details have not come (a camt.054)
	ReconZero            = "zero"             // a zero amount: kept, nothing to match
	ReconSuperseded      = "superseded"       // a booking a corrected statement no longer carries
	ReconSumMismatch     = "sum_mismatch"     // a sum of the bank's that does not hold (SumMismatch)
)

// ReconOutcomes are the outcomes in the order reports list them.
var ReconOutcomes = []string{ReconMissingInPayd, ReconMissingInBank, ReconAmountMismatch, ReconDuplicate, ReconReversal, ReconReversed,
	ReconSumMismatch, ReconAwaitingDetails, ReconNotPayment, ReconZero, ReconSuperseded, ReconMatched}

// Unresolved reports whether an outcome asks the operator to act (unless
// the line was explained).
func Unresolved(outcome string) bool {
	switch outcome {
	case ReconMissingInPayd, ReconMissingInBank, ReconAmountMismatch, ReconDuplicate, ReconSumMismatch:
		return true
	}
	return false
}

// What a line that is no payment is (ReconNotPayment), from its bank
// transaction code and references.
const (
	ClassFee            = "fee"             // a charge of the bank's (…/CHRG, …/FEES, ACMT/…)
	ClassCommission     = "commission"      // a commission (…/COMM, …/COMT): payd's, or the acquirer's
	ClassInterest       = "interest"        // interest (…/INTR)
	ClassOwnTransfer    = "own_transfer"    // the merchant's own transfer out (PMNT/ICDT/…)
	ClassOtherCurrency  = "other_currency"  // money in a currency payd takes none in
	ClassUnknownAccount = "unknown_account" // an account that is no merchant's
	ClassOther          = "other"           // another debit that is no refund's return
)

// How a line found its payment or refund.
const (
	BasisReference  = "reference"   // a reference payd gave (an id, the network's transaction id)
	BasisAmountDate = "amount_date" // no reference: the one payment of its amount near its date; to review
)

// Entry directions.
const (
	DirCredit = "credit" // money into the merchant's account: a payer's payment
	DirDebit  = "debit"  // money out of it: a refund's return
)

// ReconTolerance is how far from its booking date an item may be booked:
// a line without references finds its payment by amount within it, and a
// late booking its payment or refund.
const ReconTolerance = 48 * time.Hour

// RailsCurrencies are the currencies payd's bank payments are in.
var RailsCurrencies = map[string]bool{"MDL": true}

// ReconUnit is one line a statement books: a transaction of an entry, or
// an entry that details none.
type ReconUnit struct {
	EntryID     string
	Seq         int
	Account     string
	BookingDate string // YYYY-MM-DD, the bank's calendar
	Direction   string
	Amount      Money
	NoAmount    bool
	Currency    string
	Reversal    bool
	Lump        bool // an entry of several transactions it does not detail
	Code        BankTxCode
	EndToEndID  string
	TxID        string
	BankRef     string
	// Refs are the references of the line that may be payd's: its
	// end-to-end id, its transaction id, and ids of payd's found in its
	// remittance (a QR-bill credit's EndToEndId is NOTPROVIDED).
	Refs []string
}

// Key is the line's identity: its entry's id and its place in it.
func (u ReconUnit) Key() string { return u.EntryID + "/" + strconv.Itoa(u.Seq) }

// idInText finds payd's ids in free text: hyphenated, or the 32 hex
// digits of its ISO messages.
var idInText = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b`)

// UnitsOf are the lines an entry books: one for each transaction it
// details, else one for the entry.
func UnitsOf(e StatementEntry) []ReconUnit {
	base := ReconUnit{EntryID: e.ID, Account: e.Account, BookingDate: e.BookingDate, Direction: e.Direction, Amount: e.Amount,
		Currency: e.Currency, Reversal: e.Reversal, Code: e.Code, BankRef: e.BankRef}
	if len(e.Txs) <= 1 && e.BatchCount > 1 {
		base.Lump = true // several transactions, not detailed: they come in a camt.054
		return []ReconUnit{base}
	}
	if len(e.Txs) == 0 {
		return []ReconUnit{base}
	}
	out := make([]ReconUnit, 0, len(e.Txs))
	for i, t := range e.Txs {
		u := base
		if len(e.Txs) > 1 {
			// A batch's line is its transaction's amount; an entry of one
			// transaction books the entry's (a transaction's Amt may be
			// another currency's, its instructed amount).
			u.Amount, u.NoAmount, u.Currency = t.Amount, t.NoAmount, t.Currency
		}
		u.Seq = i
		if t.Direction != "" {
			u.Direction = t.Direction
		}
		if t.Code != (BankTxCode{}) {
			u.Code = t.Code
		}
		if t.BankRef != "" {
			u.BankRef = t.BankRef
		}
		u.EndToEndID, u.TxID = t.EndToEndID, t.TxID
		for _, r := range []string{t.EndToEndID, t.TxID, t.InstrID} {
			if r != "" && r != NotProvidedRef {
				u.Refs = append(u.Refs, r)
			}
		}
		for _, text := range t.Remittance {
			for _, id := range idInText.FindAllString(text, -1) {
				u.Refs = append(u.Refs, NormalizeRef(id))
			}
		}
		out = append(out, u)
	}
	return out
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

func (i ReconItem) names(id string) bool {
	if i.EndToEndID == id || i.BankRef == id || i.ID == id {
		return true
	}
	for _, t := range i.TargetIDs {
		if t == id {
			return true
		}
	}
	return false
}

// Booking is how an item is booked: by which line, and whether that line
// was taken back since (a reversal).
type Booking struct {
	Unit     string // ReconUnit.Key
	Reversed bool
	// Review: the line found it by amount and date alone; a line naming
	// it by reference takes it from that line, which is missing in payd
	// again.
	Review bool
}

// ReconMatch is what matching decided for one line.
type ReconMatch struct {
	EntryID    string
	Seq        int
	Outcome    string
	Class      string // ReconNotPayment: what it is
	Basis      string // how it found its item
	Review     bool   // found by amount and date alone: for a person to confirm
	ItemKind   string // the payment or refund it books (matched, amount_mismatch, duplicate, reversal, reversed)
	ItemID     string
	PaydAmount Money
}

// Key is the line the match is of.
func (m ReconMatch) Key() string { return m.EntryID + "/" + strconv.Itoa(m.Seq) }

// Accounts says what payd knows of an account: whether it is a
// merchant's.
type Accounts func(account string) bool

// MatchUnits matches statement lines to payd's items, in the order given
// (oldest booking first), each against the items of its account:
//
//   - a zero amount is kept and not matched; a lump sum whose details have
//     not come waits for them; an account of no merchant is no payment;
//   - a reversal (RvslInd) finds what it takes back (an item of the other
//     direction, by its references) and the line that booked it, which
//     becomes reversed: its item is booked no more;
//   - a line finds its item by a reference payd gave (its end-to-end id
//     naming a QR, an extension or an RTP, narrowed by the network's
//     transaction id; the transaction id alone; an id in its remittance);
//     the best candidate is one not booked yet, of the exact transaction
//     id, of the same amount, closest in time;
//   - a line that names nothing finds, by amount and currency within
//     ReconTolerance of its date, its item only when exactly one unbooked
//     item and no other such line of this matching fit: then it is matched
//     for review, and yields the item to a line that names it by
//     reference (it is missing in payd again);
//   - what found nothing is no payment when its code or currency says so
//     (Classify), else missing in payd.
//
// booked holds how items are booked already (item key → Booking);
// MatchUnits updates it. The matches returned include those of earlier
// lines a reversal took back (outcome reversed).
func MatchUnits(units []ReconUnit, items []ReconItem, booked map[string]Booking, known Accounts) []ReconMatch {
	type slot struct{ account, direction string }
	by := map[slot][]ReconItem{}
	for _, it := range items {
		s := slot{it.Account, it.Direction}
		by[s] = append(by[s], it)
	}
	// Lines without references, by what the fallback would look for: it
	// applies only to a line alone of its kind.
	type blind struct {
		account, direction, date, ccy string
		amount                        Money
	}
	blinds := map[blind]int{}
	for _, u := range units {
		if len(u.Refs) == 0 && !u.Reversal && !u.Lump {
			blinds[blind{u.Account, u.Direction, u.BookingDate, u.Currency, u.Amount}]++
		}
	}
	var out []ReconMatch
	for _, u := range units {
		m := ReconMatch{EntryID: u.EntryID, Seq: u.Seq}
		switch {
		case u.Amount == 0 && !u.NoAmount:
			m.Outcome = ReconZero
		case u.Lump:
			m.Outcome = ReconAwaitingDetails
		case !known(u.Account):
			m.Outcome, m.Class = ReconNotPayment, ClassUnknownAccount
		case u.Reversal:
			m.Outcome = ReconReversal
			other := DirCredit
			if u.Direction == DirCredit {
				other = DirDebit
			}
			if it, ok := bestByRefs(u, by[slot{u.Account, other}], booked); ok {
				m.ItemKind, m.ItemID, m.PaydAmount, m.Basis = it.Kind, it.ID, it.Amount, BasisReference
				if b, ok := booked[it.Key()]; ok && !b.Reversed && b.Unit != "" {
					entry, seq := splitUnit(b.Unit)
					out = append(out, ReconMatch{EntryID: entry, Seq: seq, Outcome: ReconReversed, ItemKind: it.Kind, ItemID: it.ID,
						PaydAmount: it.Amount, Basis: BasisReference})
				}
				booked[it.Key()] = Booking{Unit: u.Key(), Reversed: true}
			}
		default:
			cands := byRefs(u, by[slot{u.Account, u.Direction}])
			basis := BasisReference
			if len(u.Refs) == 0 && blinds[blind{u.Account, u.Direction, u.BookingDate, u.Currency, u.Amount}] == 1 {
				var free []ReconItem
				for _, it := range by[slot{u.Account, u.Direction}] {
					if _, taken := booked[it.Key()]; !taken && it.Amount == u.Amount && it.Currency == u.Currency && near(u.BookingDate, it.At) {
						free = append(free, it)
					}
				}
				if len(free) == 1 {
					cands, basis = free, BasisAmountDate
				}
			}
			if len(cands) == 0 {
				m.Outcome = ReconMissingInPayd
				if c := Classify(u); c != "" {
					m.Outcome, m.Class = ReconNotPayment, c
				}
				break
			}
			it := best(u, cands, booked)
			m.ItemKind, m.ItemID, m.PaydAmount, m.Basis, m.Review = it.Kind, it.ID, it.Amount, basis, basis == BasisAmountDate
			b, taken := booked[it.Key()]
			if taken && b.Review && !b.Reversed && b.Unit != u.Key() && basis == BasisReference {
				// The payment a blind line took for review is this line's:
				// it names it.
				entry, seq := splitUnit(b.Unit)
				out = append(out, ReconMatch{EntryID: entry, Seq: seq, Outcome: ReconMissingInPayd})
				taken = false
			}
			switch {
			case taken && b.Unit != u.Key():
				m.Outcome = ReconDuplicate
			case !u.NoAmount && (it.Amount != u.Amount || it.Currency != u.Currency):
				m.Outcome = ReconAmountMismatch
				booked[it.Key()] = Booking{Unit: u.Key(), Review: m.Review}
			default:
				m.Outcome = ReconMatched
				booked[it.Key()] = Booking{Unit: u.Key(), Review: m.Review}
			}
		}
		out = append(out, m)
	}
	return out
}

func splitUnit(key string) (string, int) {
	i := strings.LastIndexByte(key, '/')
	n, _ := strconv.Atoi(key[i+1:])
	return key[:i], n
}

// near reports whether an item executed at is within ReconTolerance of a
// booking date (its middle).
func near(date string, at time.Time) bool {
	booked, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return false
	}
	d := at.Sub(booked.Add(12 * time.Hour))
	return d <= ReconTolerance && d >= -ReconTolerance
}

// byRefs are the items a line's references name: its end-to-end id
// (narrowed by its transaction id, which tells a Static QR's payments
// apart), else any of its references, never an item of another network
// transaction id unless the line names the item's own id.
func byRefs(u ReconUnit, items []ReconItem) []ReconItem {
	var out []ReconItem
	if e := u.EndToEndID; e != "" && e != NotProvidedRef {
		for _, it := range items {
			if it.names(e) && (u.TxID == "" || it.BankRef == "" || it.BankRef == u.TxID) {
				out = append(out, it)
			}
		}
	}
	if len(out) == 0 {
		for _, it := range items {
			// The network's transaction id tells transactions apart: an
			// item of another one is this line's only if the line names
			// the item's own id.
			other := u.TxID != "" && it.BankRef != "" && it.BankRef != u.TxID
			for _, r := range u.Refs {
				if it.names(r) && (!other || r == it.ID) {
					out = append(out, it)
					break
				}
			}
		}
	}
	return out
}

func bestByRefs(u ReconUnit, items []ReconItem, booked map[string]Booking) (ReconItem, bool) {
	c := byRefs(u, items)
	if len(c) == 0 {
		return ReconItem{}, false
	}
	// A reversal takes back what was booked: prefer a booked item.
	sort.SliceStable(c, func(i, j int) bool {
		bi, bj := booked[c[i].Key()], booked[c[j].Key()]
		return bi.Unit != "" && !bi.Reversed && !(bj.Unit != "" && !bj.Reversed)
	})
	return c[0], true
}

// best is the candidate a line books: not booked yet, the exact
// transaction reference, the same amount, the closest in time.
func best(u ReconUnit, cands []ReconItem, booked map[string]Booking) ReconItem {
	day, _ := time.Parse(time.DateOnly, u.BookingDate)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		ba, bb := booked[a.Key()], booked[b.Key()]
		if ta, tb := ba.Unit != "" && ba.Unit != u.Key(), bb.Unit != "" && bb.Unit != u.Key(); ta != tb {
			return !ta
		}
		if ra, rb := a.BankRef == u.TxID && u.TxID != "", b.BankRef == u.TxID && u.TxID != ""; ra != rb {
			return ra
		}
		if aa, ab := a.Amount == u.Amount, b.Amount == u.Amount; aa != ab {
			return aa
		}
		return absDur(a.At.Sub(day)) < absDur(b.At.Sub(day))
	})
	return cands[0]
}

// Classify says what a line that matched no payment or refund is, from
// its bank transaction code and currency ("" when it may be a payment):
// a charge, a commission, interest, money in a currency payd's rails do
// not carry, or a debit that is no refund's return (the merchant's own
// transfer, anything else).
func Classify(u ReconUnit) string {
	c := u.Code
	for _, f := range []string{c.SubFamily, c.Family} {
		switch f {
		case "CHRG", "FEES":
			return ClassFee
		case "COMM", "COMT":
			return ClassCommission
		case "INTR":
			return ClassInterest
		}
	}
	if c.Domain == "ACMT" {
		return ClassFee
	}
	if !RailsCurrencies[u.Currency] {
		return ClassOtherCurrency
	}
	if u.Direction == DirDebit {
		if c.Family == "ICDT" && c.SubFamily != "RRTN" {
			return ClassOwnTransfer
		}
		return ClassOther
	}
	return ""
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
	h := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(h) == 32 && strings.Trim(h, "0123456789abcdef") == "" {
		h = h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	if id, ok := ParseID(h); ok {
		return id
	}
	return s
}

// ReconFilter selects a reconciliation report: booking dates (the bank's
// calendar), and optionally an account, a merchant, an outcome.
type ReconFilter struct {
	From, To   string
	Account    string
	MerchantID string
	Outcome    string
}

// ReconReport is the reconciliation of booking dates: every line booked
// in them with its outcome, every payment or refund of a closed day of its
// account that no statement booked (missing in the bank), every sum of the
// bank's that does not hold, with totals by outcome.
type ReconReport struct {
	From, To   string
	Days       []ReconAccountDay // each account's days, and whether its camt.053 closed them
	Statements []StatementInfo
	Lines      []ReconLine
}

// ReconAccountDay is one account's booking date: closed once a camt.053
// of the account covers it.
type ReconAccountDay struct {
	Account, Date string
	Closed        bool
}

// StatementInfo is a statement payd took.
type StatementInfo struct {
	MsgID, Kind, Version, StatementID, Account string
	Page                                       int
	ReceivedAt                                 time.Time
	Entries                                    int
	SupersededBy                               string // the MsgId of the correction that replaced it
}

// ReconLine is one line of a reconciliation report.
type ReconLine struct {
	Outcome     string
	Class       string
	Basis       string
	Review      bool
	Account     string
	Direction   string
	Amount      Money  // as booked; a missing_in_bank line: payd's
	PaydAmount  *Money // payd's, when an item was found
	Currency    string
	BookingDate string
	EntryID     string // "" for missing_in_bank and sum mismatches
	Seq         int
	EntryRef    string
	BankRef     string
	Code        string
	EndToEndID  string
	TxID        string
	PaymentID   string
	RefundID    string
	MerchantID  string
	Detail      string // a sum mismatch's, a reversal's
	Explained   *Explanation
}

// Explanation is an operator's note on a line: it asks nothing more.
type Explanation struct {
	Note string
	By   string
	At   time.Time
}

// ReconAction is an operator's action on the reconciliation, as audited.
type ReconAction struct {
	At      time.Time
	Actor   string
	Action  string // "explain", "match_again"
	EntryID string // explain: the line's entry and place
	Seq     int
	Note    string
}

// Total is the count and money of one outcome in one currency.
type Total struct {
	Outcome  string
	Currency string
	Count    int
	Amount   Money
}

// Totals are the report's lines by outcome and currency, in the order of
// ReconOutcomes.
func (r *ReconReport) Totals() []Total {
	at := map[[2]string]*Total{}
	for _, l := range r.Lines {
		k := [2]string{l.Outcome, l.Currency}
		t := at[k]
		if t == nil {
			t = &Total{Outcome: l.Outcome, Currency: l.Currency}
			at[k] = t
		}
		t.Count++
		t.Amount += l.Amount
	}
	rank := map[string]int{}
	for i, o := range ReconOutcomes {
		rank[o] = i
	}
	out := make([]Total, 0, len(at))
	for _, t := range at {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Outcome != out[j].Outcome {
			return rank[out[i].Outcome] < rank[out[j].Outcome]
		}
		return out[i].Currency < out[j].Currency
	})
	return out
}

// Counts are the lines by outcome (every outcome, zero or not).
func (r *ReconReport) Counts() map[string]int {
	out := map[string]int{}
	for _, o := range ReconOutcomes {
		out[o] = 0
	}
	for _, l := range r.Lines {
		out[l.Outcome]++
	}
	return out
}

// Closed reports whether every account-day of the report is closed.
func (r *ReconReport) Closed() bool {
	for _, d := range r.Days {
		if !d.Closed {
			return false
		}
	}
	return len(r.Days) > 0
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
