package payd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A bank's statements as payd reads them, whatever their ISO 20022 version
// (camt.053 end-of-day statements and camt.054 notifications, .001.02,
// .001.04 and .001.08): one model, the decisions about it made here.

// Statement kinds.
const (
	KindCamt053 = "camt.053" // end of day: closes the account's booking dates it covers
	KindCamt054 = "camt.054" // intraday notification
)

// Statement is one statement message (a page of it, when paginated).
type Statement struct {
	MsgID     string // the bank's message id
	Kind      string // KindCamt053 or KindCamt054
	Version   string // "001.02", "001.04", "001.08"
	CreatedAt time.Time
	EndOfDay  bool // camt.053
	// Page and LastPage are GrpHdr/MsgPgntn: a statement of many pages is
	// several messages (one MsgId each page, or the same with PgNb).
	Page     int
	LastPage bool
	Reports  []StatementReport
}

// StatementReport is one account's part of a statement (Stmt, Ntfctn).
type StatementReport struct {
	ID             string // the bank's statement id
	ElectronicSeq  string // ElctrncSeqNb
	LegalSeq       string // LglSeqNb
	Account        string // the IBAN (normalized), else the account's other id
	AccountIsIBAN  bool
	AccountCcy     string
	From, To       string // the booking dates it covers, YYYY-MM-DD in the bank's time zone
	Page           int    // StmtPgntn (camt.053.001.08): 0 when none
	LastPage       bool
	Balances       []Balance
	Summary        *TxSummary
	Entries        []StatementEntry
	CreatedAt      time.Time
	NotBookedCount int // entries pending or for information (Sts other than BOOK): not bookings
}

// Balance is one of a report's balances, signed: a debit balance is
// negative.
type Balance struct {
	Type     string // OPBD, CLBD, PRCD, ITBD, CLAV, …
	Amount   Money
	Currency string
	Date     string
}

// TxSummary is a report's TxsSummry: what the bank says its entries add
// up to. nil fields were not given.
type TxSummary struct {
	Count               *int
	Sum                 *Money // of the entries' amounts, unsigned
	Net                 *Money // credits less debits
	Credits, Debits     *int
	CreditSum, DebitSum *Money
}

// StatementEntry is one booked entry (Ntry).
type StatementEntry struct {
	ID          string // payd's id of the booking (EntryKey)
	Account     string
	BookingDate string // YYYY-MM-DD, the bank's calendar
	ValueDate   string
	Direction   string // DirCredit or DirDebit
	Amount      Money
	Currency    string
	Reversal    bool   // RvslInd: the bank takes back an earlier booking
	EntryRef    string // NtryRef
	BankRef     string // AcctSvcrRef
	Code        BankTxCode
	// BatchCount is how many transactions the entry books, as its
	// NtryDtls/Btch says (0: not said); Txs are those it details.
	BatchCount int
	BatchTotal *Money
	Txs        []StatementTx
	Info       string // AddtlNtryInf
}

// BankTxCode is an entry's ISO bank transaction code (BkTxCd), and the
// bank's proprietary one.
type BankTxCode struct {
	Domain, Family, SubFamily string
	Proprietary               string
}

func (c BankTxCode) String() string {
	s := strings.Trim(c.Domain+"/"+c.Family+"/"+c.SubFamily, "/")
	if c.Proprietary != "" {
		if s != "" {
			s += " "
		}
		s += c.Proprietary
	}
	return s
}

// StatementTx is one transaction an entry books (TxDtls).
type StatementTx struct {
	Amount Money // the transaction's own amount; the entry's when it books one
	// NoAmount: a batch's transaction whose amount the bank did not give;
	// it is matched by its references, its amount unchecked.
	NoAmount     bool
	Currency     string
	Direction    string
	EndToEndID   string // normalized (NormalizeRef)
	TxID         string
	InstrID      string
	UETR         string
	BankRef      string   // its AcctSvcrRef
	Remittance   []string // Ustrd, and the creditor references of Strd
	ReturnReason string   // RtrInf/Rsn/Cd
	Code         BankTxCode
	Party        string // the payer of a credit, the payee of a debit
}

// Refs are the references a transaction names, for an entry's identity.
func (t StatementTx) refs() string {
	return t.EndToEndID + "/" + t.TxID + "/" + t.InstrID + "/" + t.UETR + "/" + t.BankRef
}

// TxsSum is the sum of the entry's transactions, signed as the entry is.
func (e *StatementEntry) TxsSum() Money {
	var s Money
	for _, t := range e.Txs {
		if t.NoAmount {
			continue
		}
		if t.Direction == e.Direction || t.Direction == "" {
			s += t.Amount
		} else {
			s -= t.Amount
		}
	}
	return s
}

// Signed is the entry's amount as it moves the balance.
func (e *StatementEntry) Signed() Money {
	if e.Direction == DirDebit {
		return -e.Amount
	}
	return e.Amount
}

// Lump reports whether the entry books several transactions it does not
// detail (a batch whose details come in a camt.054 of the same booking).
func (e *StatementEntry) Lump() bool { return len(e.Txs) == 0 && e.BatchCount > 1 }

// EntryKeys gives each booked entry of a report its id: the account, the
// bank's references of the booking (AcctSvcrRef, NtryRef), its booking
// date, direction, amount and currency; with no reference of the bank's,
// the references of its transactions too. The same booking carried by a
// camt.054 and the day's camt.053 has one id, so it is one entry; two
// entries of one report that share all of these are told apart by their
// place among them (the second such fee of a day is a second fee).
func EntryKeys(r *StatementReport) {
	seen := map[string]int{}
	for i := range r.Entries {
		e := &r.Entries[i]
		key := strings.Join([]string{r.Account, e.BankRef, e.EntryRef, e.BookingDate, e.Direction, strconv.FormatInt(int64(e.Amount), 10),
			e.Currency, strconv.FormatBool(e.Reversal)}, "\x00")
		if e.BankRef == "" && e.EntryRef == "" {
			for _, t := range e.Txs {
				key += "\x00" + t.refs()
			}
		}
		n := seen[key]
		seen[key] = n + 1
		if n > 0 {
			key += "\x00#" + strconv.Itoa(n)
		}
		h := sha256.Sum256([]byte(key))
		e.ID = hex.EncodeToString(h[:16])
		e.Account = r.Account
	}
}

// Digest is the identity of a statement's content: two messages with one
// MsgId and the same digest are the same statement sent twice; with
// another digest, another document under a reused MsgId.
func (st *Statement) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%t\x00", st.Kind, st.MsgID, st.Page, st.LastPage)
	for _, r := range st.Reports {
		fmt.Fprintf(h, "R\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00", r.ID, r.Account, r.From, r.To, r.ElectronicSeq, r.LegalSeq, r.Page)
		for _, b := range r.Balances {
			fmt.Fprintf(h, "B\x00%s\x00%d\x00%s\x00%s\x00", b.Type, b.Amount, b.Currency, b.Date)
		}
		for _, e := range r.Entries {
			fmt.Fprintf(h, "E\x00%s\x00%s\x00%s\x00%d\x00", e.ID, e.ValueDate, e.Code, e.BatchCount)
			for _, t := range e.Txs {
				fmt.Fprintf(h, "T\x00%s\x00%d\x00%s\x00%s\x00", t.refs(), t.Amount, t.Currency, strings.Join(t.Remittance, "\x01"))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// StatementBook takes the bank's statements (docs/reconciliation.md):
// each document once by its MsgId and content, its entries matched as
// they arrive. source says how it came (rails, file).
type StatementBook interface {
	ImportStatement(ctx context.Context, st *Statement, source string, now time.Time) (StatementTaken, error)
}

// StatementTaken is what taking a statement did.
type StatementTaken struct {
	Fresh      bool     // false: the same document was taken before; nothing changed
	Entries    int      // booked entries it carried
	New        int      // of them, bookings payd had not seen
	Superseded []string // the MsgIds of the statements it corrects
}

// ErrStatementReused: a statement with the MsgId of one taken before and
// other content. The bank must send a correction under a new MsgId.
var ErrStatementReused = E(CodeInvalidParameter, "parameter", "MsgId", "reason", "was used by another statement: a correction needs a MsgId of its own")

func anyNoAmount(txs []StatementTx) bool {
	for _, t := range txs {
		if t.NoAmount {
			return true
		}
	}
	return false
}

// Sum checks: what the bank says its numbers add up to, checked.

// Mismatch outcomes of the sums.
const (
	SumBalance = "balance"     // opening plus the entries is not the closing balance
	SumBatch   = "batch"       // a batch's transactions do not add up to its entry
	SumSummary = "txs_summary" // TxsSummry disagrees with the entries
)

// SumMismatch is one sum that does not hold, for the report.
type SumMismatch struct {
	Kind     string // SumBalance, SumBatch, SumSummary
	Account  string
	Date     string
	EntryID  string // SumBatch: the entry
	Expected Money  // what the bank's figure says
	Actual   Money  // what the entries add up to
	Currency string
	Detail   string
}

// CheckSums checks a report whose pages have all arrived (entries: every
// booked entry of all its pages; balances and summary as given): the
// opening balance (OPBD, else PRCD) plus the entries is the closing one
// (CLBD); each batch's transactions add up to its entry; TxsSummry's
// count, sum and net agree with the entries. Every disagreement is one
// SumMismatch.
func CheckSums(r *StatementReport) []SumMismatch {
	out := append(CheckBatches(r), CheckTotals(r)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// CheckBatches checks each batch entry of a report, or of one page of it:
// its transactions, and the total its batch states, equal its amount.
func CheckBatches(r *StatementReport) []SumMismatch {
	var out []SumMismatch
	for i := range r.Entries {
		e := &r.Entries[i]
		if len(e.Txs) > 1 && !anyNoAmount(e.Txs) {
			if s := e.TxsSum(); s != e.Amount && s != e.Signed() {
				out = append(out, SumMismatch{Kind: SumBatch, Account: r.Account, Date: e.BookingDate, EntryID: e.ID, Expected: e.Amount,
					Actual: s, Currency: e.Currency, Detail: fmt.Sprintf("%d transactions add up to %s, the entry books %s", len(e.Txs), s, e.Amount)})
			}
		}
		if e.BatchTotal != nil && *e.BatchTotal != e.Amount {
			out = append(out, SumMismatch{Kind: SumBatch, Account: r.Account, Date: e.BookingDate, EntryID: e.ID, Expected: e.Amount,
				Actual: *e.BatchTotal, Currency: e.Currency, Detail: "the batch's total is not its entry's amount"})
		}
	}
	return out
}

// CheckTotals checks a whole report's balances and TxsSummry against its
// entries (of every page).
func CheckTotals(r *StatementReport) []SumMismatch {
	var out []SumMismatch
	var net, sum Money
	credits, debits := 0, 0
	var creditSum, debitSum Money
	for i := range r.Entries {
		e := &r.Entries[i]
		net += e.Signed()
		sum += e.Amount
		if e.Direction == DirCredit {
			credits++
			creditSum += e.Amount
		} else {
			debits++
			debitSum += e.Amount
		}
	}
	var open, closing *Balance
	for i := range r.Balances {
		b := &r.Balances[i]
		switch b.Type {
		case "OPBD":
			open = b
		case "PRCD":
			if open == nil {
				open = b
			}
		case "CLBD":
			closing = b
		}
	}
	if open != nil && closing != nil && open.Amount+net != closing.Amount {
		out = append(out, SumMismatch{Kind: SumBalance, Account: r.Account, Date: closing.Date, Expected: closing.Amount, Actual: open.Amount + net,
			Currency: closing.Currency, Detail: fmt.Sprintf("%s %s + entries %s = %s, the bank's CLBD is %s", open.Type, open.Amount, net, open.Amount+net, closing.Amount)})
	}
	if s := r.Summary; s != nil {
		check := func(what string, expected, actual int64) {
			if expected != actual {
				out = append(out, SumMismatch{Kind: SumSummary, Account: r.Account, Date: r.To, Expected: Money(expected), Actual: Money(actual),
					Currency: r.AccountCcy, Detail: fmt.Sprintf("TxsSummry %s is %d, the entries give %d", what, expected, actual)})
			}
		}
		checkMoney := func(what string, expected, actual Money) {
			if expected != actual {
				out = append(out, SumMismatch{Kind: SumSummary, Account: r.Account, Date: r.To, Expected: expected, Actual: actual,
					Currency: r.AccountCcy, Detail: fmt.Sprintf("TxsSummry %s is %s, the entries give %s", what, expected, actual)})
			}
		}
		if s.Count != nil {
			check("NbOfNtries", int64(*s.Count), int64(len(r.Entries)+r.NotBookedCount))
		}
		if s.Sum != nil && r.NotBookedCount == 0 {
			checkMoney("Sum", *s.Sum, sum)
		}
		if s.Net != nil && r.NotBookedCount == 0 {
			checkMoney("TtlNetNtry", *s.Net, net)
		}
		if s.Credits != nil && r.NotBookedCount == 0 {
			check("TtlCdtNtries/NbOfNtries", int64(*s.Credits), int64(credits))
		}
		if s.CreditSum != nil && r.NotBookedCount == 0 {
			checkMoney("TtlCdtNtries/Sum", *s.CreditSum, creditSum)
		}
		if s.Debits != nil && r.NotBookedCount == 0 {
			check("TtlDbtNtries/NbOfNtries", int64(*s.Debits), int64(debits))
		}
		if s.DebitSum != nil && r.NotBookedCount == 0 {
			checkMoney("TtlDbtNtries/Sum", *s.DebitSum, debitSum)
		}
	}
	return out
}
