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

func today() string { return time.Now().UTC().Format(time.DateOnly) }

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
		date = today()
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
	b.addBooking(booking{Account: payd.NormalizeIBAN(ret.CreditorIBAN), Date: today(), Direction: "DBIT", Amount: ret.Amount,
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

// statement writes the statement of a date: kind camt.053 (every account
// the bank knows, with its balances, even without entries) or camt.054
// (the accounts with entries of the date not notified yet; they count as
// notified after).
func (b *bank) statement(kind, date string) ([]byte, string, error) {
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil, "", fmt.Errorf("date must be YYYY-MM-DD")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stmtSeq++
	msgID := fmt.Sprintf("S%s%s%04d", kind[5:8], date[2:4]+date[5:7]+date[8:10], b.stmtSeq)
	created := iso20022.Time(time.Now())
	accounts := make([]string, 0, len(b.accounts))
	for a := range b.accounts {
		accounts = append(accounts, a)
	}
	sort.Strings(accounts)
	var reports []iso20022.AccountReport
	for _, acct := range accounts {
		var opening, closing payd.Money
		var entries []iso20022.Entry
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
			if kind == "camt.054" && bk.Notified {
				continue
			}
			if kind == "camt.054" {
				bk.Notified = true
			}
			entries = append(entries, entryOf(bk))
		}
		closing += opening
		if kind == "camt.054" && len(entries) == 0 {
			continue
		}
		rep := iso20022.AccountReport{ID: acct[len(acct)-8:] + "-" + date, CreDtTm: created, Acct: *iso20022.IBAN(acct), Ntries: entries,
			FrToDt: &iso20022.Period{FrDtTm: iso20022.Time(day), ToDtTm: iso20022.Time(day.Add(24*time.Hour - time.Millisecond))}}
		if kind == "camt.053" {
			rep.Bal = []iso20022.Balance{balance("OPBD", opening, date), balance("CLBD", closing, date)}
		}
		reports = append(reports, rep)
	}
	hdr := iso20022.StatementHeader{MsgID: msgID, CreDtTm: created}
	var v any = &iso20022.Camt053{Body: iso20022.Camt053Body{GrpHdr: hdr, Stmts: reports}}
	if kind == "camt.054" {
		v = &iso20022.Camt054{Body: iso20022.Camt054Body{GrpHdr: hdr, Ntfctns: reports}}
	}
	if len(reports) == 0 {
		return nil, "", fmt.Errorf("no account to report")
	}
	body, err := iso20022.Marshal(v)
	return body, msgID, err
}

func entryOf(bk *booking) iso20022.Entry {
	code := iso20022.CodeReceivedCredit
	if bk.Direction == "DBIT" {
		code = iso20022.CodeReturn
	}
	refs := &iso20022.TxRefs{AcctSvcrRef: bk.Ref, EndToEndID: bk.EndToEndID, TxID: bk.TxID}
	amt := iso20022.Amount{Ccy: bk.Currency, Value: bk.Amount}
	return iso20022.Entry{NtryRef: bk.Ref, Amt: amt, CdtDbtInd: bk.Direction, Sts: "BOOK",
		BookgDt: &iso20022.DateChoice{Dt: bk.Date}, ValDt: &iso20022.DateChoice{Dt: bk.Date}, AcctSvcrRef: bk.Ref, BkTxCd: code,
		NtryDtls: []iso20022.EntryDetails{{TxDtls: []iso20022.TxDetails{{Refs: refs, Amt: &amt, CdtDbtInd: bk.Direction}}}}}
}

func balance(tp string, m payd.Money, date string) iso20022.Balance {
	ind := "CRDT"
	if m < 0 {
		ind, m = "DBIT", -m
	}
	return iso20022.Balance{Tp: tp, Amt: iso20022.Amount{Ccy: "MDL", Value: m.String()}, CdtDbtInd: ind, Dt: iso20022.DateChoice{Dt: date}}
}

func statementParams(r *http.Request) (kind, date string, ok bool) {
	kind, date = r.URL.Query().Get("kind"), r.URL.Query().Get("date")
	if kind == "" {
		kind = "camt.053"
	}
	if date == "" {
		date = today()
	}
	return kind, date, kind == "camt.053" || kind == "camt.054"
}

// getStatement is GET /statements?date=&kind=: the statement as XML (a
// file for "payd reconcile import").
func (b *bank) getStatement(w http.ResponseWriter, r *http.Request) {
	kind, date, ok := statementParams(r)
	if !ok {
		writeJSON(w, 400, map[string]any{"error": "kind must be camt.053 or camt.054"})
		return
	}
	body, _, err := b.statement(kind, date)
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
	kind, date, ok := statementParams(r)
	if !ok {
		writeJSON(w, 400, map[string]any{"error": "kind must be camt.053 or camt.054"})
		return
	}
	body, msgID, err := b.statement(kind, date)
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
