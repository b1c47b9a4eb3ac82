package main

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"payd"
	"payd/internal/rails/iso20022"
)

// The bank's books: every credit it accepted for a merchant's account and
// every return it sent from one, and the statements it writes of them
// (camt.053 at the end of a day, camt.054 as they happen), which payd
// reconciles. The /pay order's flags make the books and payd disagree on
// purpose: a credit booked but never sent to payd, sent but never booked,
// booked at another amount, twice, or on another day.

// booking is one entry on a customer's account.
type booking struct {
	Ref        string `json:"ref"` // AcctSvcrRef: the bank's reference of the booking
	Account    string `json:"account"`
	Date       string `json:"date"` // YYYY-MM-DD
	Direction  string `json:"direction"`
	Amount     string `json:"amount"`
	Currency   string `json:"currency"`
	EndToEndID string `json:"endToEndId"`
	TxID       string `json:"txId"`
	Notified   bool   `json:"notified"` // sent in a camt.054 already
}

// today is the bank's date now, in its calendar.
func (b *bank) today() string { return time.Now().In(b.loc).Format(time.DateOnly) }

func (b *bank) addBooking(bk booking) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk.Ref = fmt.Sprintf("BK%s%06d", bk.Date[2:4]+bk.Date[5:7]+bk.Date[8:10], len(b.bookings)+1)
	b.bookings = append(b.bookings, &bk)
	b.accounts[bk.Account] = true
}

// bookCredit books a payer's credit on the creditor's account as the
// order says.
func (b *bank) bookCredit(o creditOrder, txID string) {
	if o.NoCreditorAccount || o.CreditorIBAN == "" {
		return // the bank could not credit an account it was not given
	}
	date := o.BookOn
	if date == "" {
		date = b.today()
	}
	amount := o.Amount
	if o.BookedAmount != "" {
		amount = o.BookedAmount
	}
	bk := booking{Account: payd.NormalizeIBAN(o.CreditorIBAN), Date: date, Direction: "CRDT", Amount: amount, Currency: o.Currency,
		EndToEndID: o.EndToEndID, TxID: txID}
	b.addBooking(bk)
	if o.BookTwice {
		b.addBooking(bk)
	}
}

// bookReturn books a settled refund's return as a debit of the merchant's
// account, referencing the refund (TxId: the pacs.004's RtrId).
func (b *bank) bookReturn(ret *message) {
	if ret.CreditorIBAN == "" {
		return
	}
	b.addBooking(booking{Account: payd.NormalizeIBAN(ret.CreditorIBAN), Date: b.today(), Direction: "DBIT", Amount: ret.Amount,
		Currency: ret.Currency, EndToEndID: ret.EndToEndID, TxID: iso20022.ID(ret.ObjectID)})
}

func (b *bank) listBookings(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	out := []booking{}
	for _, bk := range b.bookings {
		out = append(out, *bk)
	}
	b.mu.Unlock()
	writeJSON(w, 200, out)
}

// statement writes the statement of a date in version (001.02, 001.04 or
// 001.08): kind camt.053 (every account the bank knows, with its
// balances, even without entries) or camt.054 (the accounts with entries
// of the date not notified yet; they count as notified after).
func (b *bank) statement(kind, date, version string) ([]byte, string, error) {
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return nil, "", fmt.Errorf("date must be YYYY-MM-DD")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stmtSeq++
	msgID := fmt.Sprintf("S%s%s%04d", kind[5:8], date[2:4]+date[5:7]+date[8:10], b.stmtSeq)
	created := time.Now()
	accounts := make([]string, 0, len(b.accounts))
	for a := range b.accounts {
		accounts = append(accounts, a)
	}
	sort.Strings(accounts)
	st := &payd.Statement{MsgID: msgID, Kind: kind, CreatedAt: created, Page: 1, LastPage: true}
	for _, acct := range accounts {
		var opening, closing payd.Money
		var entries []payd.StatementEntry
		for _, bk := range b.bookings {
			if bk.Account != acct || bk.Date > date {
				continue
			}
			m, _ := payd.ParseMoney(bk.Amount)
			if bk.Direction == "DBIT" {
				m = -m
			}
			if bk.Date < date {
				opening += m
				continue
			}
			closing += m
			if kind == payd.KindCamt054 && bk.Notified {
				continue
			}
			if kind == payd.KindCamt054 {
				bk.Notified = true
			}
			entries = append(entries, entryOf(bk))
		}
		closing += opening
		if kind == payd.KindCamt054 && len(entries) == 0 {
			continue
		}
		rep := payd.StatementReport{ID: acct[len(acct)-8:] + "-" + date, Account: acct, AccountIsIBAN: true, AccountCcy: "MDL",
			From: date, To: date, CreatedAt: created, Entries: entries}
		if kind == payd.KindCamt053 {
			rep.Balances = []payd.Balance{{Type: "OPBD", Amount: opening, Currency: "MDL", Date: date},
				{Type: "CLBD", Amount: closing, Currency: "MDL", Date: date}}
		}
		st.Reports = append(st.Reports, rep)
	}
	if len(st.Reports) == 0 {
		return nil, "", fmt.Errorf("no account to report")
	}
	body, err := iso20022.WriteStatement(st, version)
	return body, msgID, err
}

// entryOf is a booking as a statement entry: a received credit
// transfer, or a refund's return, with its references.
func entryOf(bk *booking) payd.StatementEntry {
	code := payd.BankTxCode{Domain: "PMNT", Family: "RCDT", SubFamily: "DMCT"}
	dir := payd.DirCredit
	if bk.Direction == "DBIT" {
		code, dir = payd.BankTxCode{Domain: "PMNT", Family: "ICDT", SubFamily: "RRTN"}, payd.DirDebit
	}
	m, _ := payd.ParseMoney(bk.Amount)
	return payd.StatementEntry{EntryRef: bk.Ref, BankRef: bk.Ref, BookingDate: bk.Date, ValueDate: bk.Date, Direction: dir, Amount: m,
		Currency: bk.Currency, Code: code, Txs: []payd.StatementTx{{Amount: m, Currency: bk.Currency, Direction: dir, BankRef: bk.Ref,
			EndToEndID: bk.EndToEndID, TxID: bk.TxID}}}
}

func (b *bank) statementParams(r *http.Request) (kind, date, version string, ok bool) {
	kind, date, version = r.URL.Query().Get("kind"), r.URL.Query().Get("date"), r.URL.Query().Get("version")
	if kind == "" {
		kind = payd.KindCamt053
	}
	if date == "" {
		date = b.today()
	}
	if version == "" {
		version = "001.08"
	}
	return kind, date, version, (kind == payd.KindCamt053 || kind == payd.KindCamt054) &&
		(version == "001.02" || version == "001.04" || version == "001.08")
}

// getStatement is GET /statements?date=&kind=: the statement as XML (a
// file for "payd reconcile import").
func (b *bank) getStatement(w http.ResponseWriter, r *http.Request) {
	kind, date, version, ok := b.statementParams(r)
	if !ok {
		writeJSON(w, 400, map[string]any{"error": "kind must be camt.053 or camt.054, version 001.02, 001.04 or 001.08"})
		return
	}
	body, _, err := b.statement(kind, date, version)
	if err != nil {
		writeJSON(w, 400, map[string]any{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Write(body)
}

// sendStatement is POST /statements/send?date=&kind=: the statement sent
// to payd, signed, as a connector delivers it.
func (b *bank) sendStatement(w http.ResponseWriter, r *http.Request) {
	kind, date, version, ok := b.statementParams(r)
	if !ok {
		writeJSON(w, 400, map[string]any{"error": "kind must be camt.053 or camt.054, version 001.02, 001.04 or 001.08"})
		return
	}
	body, msgID, err := b.statement(kind, date, version)
	if err != nil {
		writeJSON(w, 400, map[string]any{"error": err.Error()})
		return
	}
	status, answer, err := b.post(kind, body)
	if err != nil {
		writeJSON(w, 502, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"paydStatus": status, "paydAnswer": string(answer), "msgId": msgID, "body": string(body)})
}
