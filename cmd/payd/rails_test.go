package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"payd"
	"payd/internal/rails/iso20022"
	"payd/internal/rails/iso20022/xsdtest"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

const (
	railsKey = "rails-shared-secret-0123456789"
	paydBIC  = "PAYDMD22"                 // the operator's bank in the rails tests
	shopIBAN = "MD24AG000225100013104168" // the merchant the rails tests create
)

// bankProc is a payd-bank process.
type bankProc struct {
	base string
	cmd  *exec.Cmd
	logs *syncBuffer // written by the process while a test reads it
}

var (
	bankOnce sync.Once
	bankPath string
	bankErr  error
)

func startBank(t *testing.T, addr, paydURL string, extra ...string) *bankProc {
	t.Helper()
	bankOnce.Do(func() {
		dir, err := os.MkdirTemp("", "payd-bank")
		if err != nil {
			bankErr = err
			return
		}
		bankPath = filepath.Join(dir, "payd-bank")
		if out, err := exec.Command("go", "build", "-o", bankPath, "../payd-bank").CombinedOutput(); err != nil {
			bankErr = fmt.Errorf("go build payd-bank: %v\n%s", err, out)
		}
	})
	if bankErr != nil {
		t.Fatal(bankErr)
	}
	// The address was free when freeAddr looked; another process may have
	// taken it since (packages test in parallel). A bank that could not
	// listen exits: it is started again on a fresh address, and only its own
	// answer counts as ready.
	var logs []string
	for try := 0; try < 3; try++ {
		if try > 0 {
			addr = freeAddr(t)
		}
		b := &bankProc{base: "http://" + addr, logs: &syncBuffer{}}
		b.cmd = exec.Command(bankPath, append([]string{"-addr", addr, "-payd", paydURL, "-key", railsKey}, extra...)...)
		b.cmd.Stdout, b.cmd.Stderr = b.logs, b.logs
		if err := b.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { b.cmd.Wait(); close(exited) }()
		t.Cleanup(func() { b.cmd.Process.Kill(); <-exited })
	wait:
		for i := 0; i < 200; i++ {
			res, err := http.Get(b.base + "/healthz")
			if err == nil {
				res.Body.Close()
			}
			select {
			case <-exited:
				break wait // it could not listen: another address
			default:
			}
			if err == nil && res.StatusCode == http.StatusOK {
				return b
			}
			time.Sleep(20 * time.Millisecond)
		}
		logs = append(logs, b.logs.String())
	}
	t.Fatalf("payd-bank did not start:\n%s", strings.Join(logs, "\n"))
	return nil
}

func (b *bankProc) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, b.base+path, rd)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// exchange is a message payd-bank sent payd, with payd's answer.
type exchange struct {
	Kind, Body, Answer string
	Status             int
}

func (b *bankProc) sent(t *testing.T) []exchange {
	t.Helper()
	res, err := http.Get(b.base + "/sent")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []exchange
	json.NewDecoder(res.Body).Decode(&out)
	return out
}

type bankMessage struct {
	Kind, MsgID, ObjectID, Alias, Amount, Currency, Creditor, Body string
	Copies                                                         int
}

func (b *bankProc) messages(t *testing.T, kind string) []bankMessage {
	t.Helper()
	res, err := http.Get(b.base + "/messages?kind=" + kind)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []bankMessage
	json.NewDecoder(res.Body).Decode(&out)
	return out
}

// waitMessage waits until the bank holds a message of kind about objectID.
func (b *bankProc) waitMessage(t *testing.T, kind, objectID string, within time.Duration) bankMessage {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, m := range b.messages(t, kind) {
			if m.ObjectID == objectID {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the bank received no %s for %s", kind, objectID)
	return bankMessage{}
}

// creditBody is a payer's pacs.008 to the rails tests' merchant, as a
// connector writes it.
func creditBody(msgID, txID, e2e, amount, payer string) []byte {
	body, err := iso20022.Marshal(&iso20022.Pacs008{Msg: iso20022.Pacs008Msg{
		GrpHdr: iso20022.GroupHeader{MsgID: msgID, CreDtTm: iso20022.Time(time.Now()), NbOfTxs: "1", SttlmInf: iso20022.Clearing()},
		Txs: []iso20022.CreditTx{{PmtID: iso20022.PaymentID{EndToEndID: e2e, TxID: txID}, Amt: iso20022.Amount{Ccy: "MDL", Value: amount},
			ChrgBr: iso20022.ChargesShared, Dbtr: iso20022.Party{Name: payer}, DbtrAcct: iso20022.IBAN(payd.TestIBAN),
			DbtrAgt: *iso20022.AgentBIC("BANKMD22"), CdtrAgt: *iso20022.AgentBIC(paydBIC), Cdtr: iso20022.Party{Name: "Shop"},
			CdtrAcct: iso20022.IBAN(shopIBAN)}},
	}})
	if err != nil {
		panic(err)
	}
	return body
}

// signedReceiver is a merchant's callback endpoint that checks the
// X-Signature of every delivery with the merchant's key.
type signedReceiver struct {
	key string
	mu  sync.Mutex
	got map[string][]map[string]any // payId/refundId/checkoutId → bodies
	bad int
}

func (r *signedReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts, _ := strconv.ParseInt(req.Header.Get("X-Signature-Timestamp"), 10, 64)
	var v struct {
		Result map[string]any `json:"result"`
	}
	json.Unmarshal(body, &v)
	if v.Result == nil { // a checkout's callback is the record itself
		json.Unmarshal(body, &v.Result)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Header.Get("X-Signature") != "sha256="+payd.HMACSignature(r.key, body, ts) {
		r.bad++
		w.WriteHeader(400)
		return
	}
	subject := str(v.Result, "refundId")
	if subject == "" {
		subject = str(v.Result, "payId")
	}
	if subject == "" {
		subject = str(v.Result, "paymentId") // a checkout's callback
	}
	r.got[subject] = append(r.got[subject], v.Result)
}

func (r *signedReceiver) wait(t *testing.T, subject string) map[string]any {
	t.Helper()
	for i := 0; i < 200; i++ {
		r.mu.Lock()
		got := r.got[subject]
		r.mu.Unlock()
		if len(got) > 0 {
			return got[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no signed callback about %s", subject)
	return nil
}

// railsEnv starts payd-bank and the environment of a production payd on
// PostgreSQL using it.
func railsEnv(t *testing.T) (env map[string]string, paydAddr string, bank *bankProc) {
	_, dbURL := storetest.Postgres(t)
	paydAddr = freeAddr(t)
	bank = startBank(t, freeAddr(t), "http://"+paydAddr+"/rails/iso20022")
	env = map[string]string{
		"PAYD_DATABASE_URL": dbURL, "PAYD_MODE": "production", "PAYD_PUBLIC_URL": "https://payd.example",
		"PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": bank.base + "/iso20022", "PAYD_RAILS_KEY": railsKey, "PAYD_RAILS_BIC": paydBIC,
		"PAYD_ALLOW_HTTP_URLS": "true", "PAYD_CALLBACK_ALLOW": "127.0.0.0/8", "PAYD_CALLBACK_SCHEDULE": "200ms,500ms,1s",
	}
	return env, paydAddr, bank
}

// TestRails_postgres runs payd in production mode on PostgreSQL with the
// iso20022 rails against payd-bank: RTPs, QR and extension credits, a
// refund, the bank down and back, duplicates and forgeries.
func TestRails_postgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	env, paydAddr, bank := railsEnv(t)
	out, code := runCmd(t, env, "merchant", "create", "--name", "Shop", "--iban", shopIBAN, "--commission", "150")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	recv := &signedReceiver{key: cr.SignatureKey, got: map[string][]map[string]any{}}
	hook := httptest.NewServer(recv)
	defer hook.Close()
	p := startProc(t, env, paydAddr)
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, token: token(t, p.base, cr)}
	exp := payd.FormatTime(time.Now().Add(time.Hour))
	newRTP := func() string {
		s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 50, "currency": "MDL",
			"description": "Order 42", "expiresAt": exp, "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("create rtp: %d %v", s, v)
		}
		return str(result(v), "rtpId")
	}

	// The sandbox's test endpoints are refused in production.
	if s, _ := c.do("POST", p.base+"/v2/instant/test-pay", map[string]any{}); s != 403 {
		t.Errorf("test-pay in production: %d", s)
	}

	var payID string
	t.Run("rtp accepted and paid", func(t *testing.T) {
		id := newRTP()
		m := bank.waitMessage(t, "pain.013", id, 10*time.Second)
		if m.Alias != "37369112221" || m.Amount != "50.00" || m.Creditor != "Shop" || !strings.Contains(m.Body, "<IBAN>MD24AG000225100013104168</IBAN>") {
			t.Errorf("pain.013: %+v", m)
		}
		s, v := bank.call(t, "POST", "/rtp/"+id+"/accept", map[string]any{"payerName": "ION POPESCU", "iban": "MD24AG000225100013104169"})
		if s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("bank accept: %d %v", s, v)
		}
		_, g := c.do("GET", p.base+"/v2/rtp/"+id, nil)
		if st := str(result(g), "status"); st != "Accepted" {
			t.Fatalf("rtp after the credit: %s", st)
		}
		_, l := c.do("GET", p.base+"/v2/payments?paymentIntentId="+id+"&count=10&offset=0", nil)
		items, _ := result(l)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("rtp payments: %v", l)
		}
		payID = str(items[0].(map[string]any), "paymentId")
		cb := recv.wait(t, payID)
		if cb["rtpStatus"] != "Accepted" || cb["payerName"] != "ION POPESCU" || cb["amount"] != 50.0 || cb["commission"] != 0.75 {
			t.Errorf("rtp callback: %v", cb)
		}
		// The RTP paid, another credit for it is refused.
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": id, "amount": "50.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != "RJCT" || v["reason"] != "DUPL" {
			t.Errorf("second credit for a paid RTP: %d %v", s, v)
		}
	})

	t.Run("rtp rejected and cancelled", func(t *testing.T) {
		id := newRTP()
		bank.waitMessage(t, "pain.013", id, 10*time.Second)
		if s, _ := bank.call(t, "POST", "/rtp/"+id+"/reject", nil); s != 200 {
			t.Fatalf("bank reject: %d", s)
		}
		if _, g := c.do("GET", p.base+"/v2/rtp/"+id, nil); str(result(g), "status") != "Rejected" {
			t.Errorf("rtp after pain.014 RJCT: %v", g)
		}
		id2 := newRTP()
		if s, v := c.do("POST", p.base+"/v2/rtp/"+id2+"/cancel", map[string]any{"reason": "changed my mind"}); s != 200 {
			t.Fatalf("cancel: %d %v", s, v)
		}
		if m := bank.waitMessage(t, "camt.055", id2, 10*time.Second); m.Amount != "50.00" {
			t.Errorf("camt.055: %+v", m)
		}
	})

	t.Run("qr and hybrid extension credits", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 100,
			"currency": "MDL", "description": "Table 4", "expiresAt": exp, "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": qrID, "amount": "99.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != "RJCT" || v["reason"] != "AM09" {
			t.Errorf("wrong amount: %d %v", s, v)
		}
		if _, q := c.do("GET", p.base+"/v2/instant/qr/"+qrID, nil); str(result(q), "status") != "Active" {
			t.Errorf("a refused credit changed the QR: %v", q)
		}
		s, v = bank.call(t, "POST", "/pay", map[string]any{"target": qrID, "amount": "100.00", "payerName": "MARIA RUSU", "creditorIban": shopIBAN})
		if s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("qr credit: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID+"&count=10&offset=0", nil)
		items, _ := result(l)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("qr payments: %v", l)
		}
		qrPay := str(items[0].(map[string]any), "payId")
		if cb := recv.wait(t, qrPay); cb["payerName"] != "MARIA RUSU" || cb["qrStatus"] != "Paid" {
			t.Errorf("qr callback: %v", cb)
		}
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": "01a1fd38-56fa-7f9d-ba9b-1038a64df444", "amount": "1.00", "creditorIban": shopIBAN}); v["status"] != "RJCT" || v["reason"] != "NARR" {
			t.Errorf("unknown target: %d %v", s, v)
		}

		s, v = c.do("POST", p.base+"/v2/instant/qr/hybrid", map[string]any{"amountType": "Fixed", "currency": "MDL"})
		if s != 200 {
			t.Fatalf("hybrid: %d %v", s, v)
		}
		hyb := str(result(v), "qrId")
		s, v = c.do("POST", p.base+"/v2/instant/qr/"+hyb+"/extension", map[string]any{"amount": 30, "description": "Coffee",
			"expiresAt": exp, "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("extension: %d %v", s, v)
		}
		ext := str(result(v), "extensionId")
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": ext, "amount": "30.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("extension credit: %d %v", s, v)
		}
		_, l = c.do("GET", p.base+"/v2/instant/payments?qrId="+hyb+"&count=10&offset=0", nil)
		items, _ = result(l)["items"].([]any)
		if len(items) != 1 || str(items[0].(map[string]any), "extensionId") != ext {
			t.Fatalf("extension payments: %v", l)
		}
		recv.wait(t, str(items[0].(map[string]any), "payId"))
	})

	t.Run("refund returned and settled", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/payments/"+payID+"/refund", map[string]any{"reason": "returned goods", "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("refund: %d %v", s, v)
		}
		refundID := str(result(v), "refundId")
		m := bank.waitMessage(t, "pacs.004", refundID, 10*time.Second)
		if m.Amount != "50.00" || !strings.Contains(m.Body, "<OrgnlEndToEndId>") || !strings.Contains(m.Body, "ION POPESCU") {
			t.Errorf("pacs.004: %+v", m)
		}
		if s, v := bank.call(t, "POST", "/refund/"+refundID+"/settle", nil); s != 200 {
			t.Fatalf("settle: %d %v", s, v)
		}
		_, g := c.do("GET", p.base+"/v2/payments/refunds/"+refundID, nil)
		if str(result(g), "status") != "Accepted" {
			t.Fatalf("refund after pacs.002 ACSC: %v", g)
		}
		if cb := recv.wait(t, refundID); cb["status"] != "Accepted" {
			t.Errorf("refund callback: %v", cb)
		}
	})

	t.Run("bank down, then back", func(t *testing.T) {
		_, before := bank.call(t, "GET", "/down", nil)
		bank.call(t, "POST", "/down", nil)
		var ids []string
		for i := 0; i < 5; i++ {
			ids = append(ids, newRTP())
		}
		// payd has tried the bank while it was down, and been refused.
		waitUntil(t, 10*time.Second, "payd to try the bank while it is down", func() bool {
			_, now := bank.call(t, "GET", "/down", nil)
			return now["refused"].(float64) > before["refused"].(float64)
		})
		for _, m := range bank.messages(t, "pain.013") {
			for _, id := range ids {
				if m.ObjectID == id {
					t.Fatalf("a message reached a bank that was down")
				}
			}
		}
		bank.call(t, "POST", "/up", nil)
		for _, id := range ids {
			bank.waitMessage(t, "pain.013", id, 30*time.Second)
		}
	})

	t.Run("duplicates apply once", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL",
			"description": "Tips"})
		if s != 200 {
			t.Fatalf("static qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		bank.call(t, "POST", "/duplicates?on=true", nil)
		defer bank.call(t, "POST", "/duplicates?on=false", nil)
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": qrID, "amount": "10.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("duplicated credit: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID+"&count=10&offset=0", nil)
		if n := result(l)["totalCount"]; n != 1.0 {
			t.Errorf("a credit sent twice made %v payments", n)
		}
	})

	t.Run("forged messages are refused", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL",
			"description": "Forgery target"})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		body := creditBody("FORGED1", "X", iso20022.ID(qrID), "500.00", "MALLORY")
		send := func(h http.Header) int {
			req, _ := http.NewRequest("POST", p.base+"/rails/iso20022", bytes.NewReader(body))
			for k, vs := range h {
				req.Header[k] = vs
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		wrong := http.Header{}
		iso20022.Sign(wrong, "not-the-shared-secret", body, time.Now())
		stale := http.Header{}
		iso20022.Sign(stale, railsKey, body, time.Now().Add(-6*time.Minute))
		for name, h := range map[string]http.Header{"unsigned": {}, "mis-signed": wrong, "stale": stale} {
			if s := send(h); s != 401 {
				t.Errorf("%s message: %d, want 401", name, s)
			}
		}
		_, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID+"&count=10&offset=0", nil)
		if n := result(l)["totalCount"]; n != 0.0 {
			t.Errorf("a forged message made %v payments", n)
		}
		good := http.Header{}
		iso20022.Sign(good, railsKey, body, time.Now())
		if s := send(good); s != 200 {
			t.Errorf("the same message signed: %d", s)
		}
		// payd-bank refuses what payd would not have signed.
		for name, h := range map[string]http.Header{"unsigned": {}, "mis-signed": wrong} {
			req, _ := http.NewRequest("POST", bank.base+"/iso20022", bytes.NewReader(body))
			for k, vs := range h {
				req.Header[k] = vs
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 401 {
				t.Errorf("payd-bank took a %s message: %d", name, res.StatusCode)
			}
		}
	})
	t.Run("money reaches only its merchant's account", func(t *testing.T) {
		const otherIBAN = "MD91AG000225100013104999"
		out, code := runCmd(t, env, "merchant", "create", "--name", "Other Shop", "--iban", otherIBAN)
		var cr2 payd.Credentials
		if code != 0 || json.Unmarshal([]byte(out), &cr2) != nil {
			t.Fatalf("merchant create: %d %s", code, out)
		}
		c2 := &client{http: c.http, token: token(t, p.base, cr2)}
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Dynamic", "amountType": "Fixed", "amount": 20,
			"currency": "MDL", "description": "Table 7", "expiresAt": exp})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		mine := str(result(v), "qrId")
		s, v = c2.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Tips"})
		if s != 200 {
			t.Fatalf("qr of the other merchant: %d %v", s, v)
		}
		theirs := str(result(v), "qrId")
		for name, order := range map[string]map[string]any{
			"another merchant's account": {"target": mine, "amount": "20.00", "creditorIban": otherIBAN},
			"no creditor account":        {"target": mine, "amount": "20.00", "noCreditorAccount": true},
		} {
			if s, v := bank.call(t, "POST", "/pay", order); s != 200 || v["status"] != "RJCT" || v["reason"] != "AC03" {
				t.Errorf("credit to %s: %d %v", name, s, v)
			}
		}
		if _, q := c.do("GET", p.base+"/v2/instant/qr/"+mine, nil); str(result(q), "status") != "Active" {
			t.Errorf("a misrouted credit changed the QR: %v", q)
		}
		// Without the network's reference payd reads the payer's text, among
		// the objects of the account's merchant only.
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"endToEndId": iso20022.NotProvided, "remittance": theirs,
			"amount": "5.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != "RJCT" || v["reason"] != "NARR" {
			t.Errorf("another merchant's QR named in the text of a credit to this account: %d %v", s, v)
		}
		if _, l := c2.do("GET", p.base+"/v2/instant/payments?qrId="+theirs, nil); result(l)["totalCount"] != 0.0 {
			t.Errorf("a credit to another account paid the QR: %v", l)
		}
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"endToEndId": iso20022.NotProvided, "remittance": "Payment " + theirs + " thanks",
			"amount": "5.00", "creditorIban": otherIBAN}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Errorf("a credit naming the QR in its text, to its merchant's account: %d %v", s, v)
		}
		if _, l := c2.do("GET", p.base+"/v2/instant/payments?qrId="+theirs, nil); result(l)["totalCount"] != 1.0 {
			t.Errorf("the credit by remittance: %v", l)
		}
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": mine, "amount": "20.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Errorf("the credit to the right account: %d %v", s, v)
		}
	})

	t.Run("a refund's status waits for its return", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Early status"})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": qrID, "amount": "12.00", "creditorIban": shopIBAN}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("credit: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID, nil)
		items, _ := result(l)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("payments: %v", l)
		}
		bank.call(t, "POST", "/down", nil)
		s, v = c.do("POST", p.base+"/v2/payments/"+str(items[0].(map[string]any), "payId")+"/refund", map[string]any{"reason": "early", "amount": 2})
		if s != 200 {
			bank.call(t, "POST", "/up", nil)
			t.Fatalf("refund: %d %v", s, v)
		}
		refundID := str(result(v), "refundId")
		// The bank reports a settlement of a return payd has not sent.
		s, v = bank.call(t, "POST", "/refund/"+refundID+"/settle?force=true", nil)
		if s != 200 || !strings.Contains(str(v, "paydAnswer"), "not been acknowledged") {
			t.Errorf("status before the return: %d %v", s, v)
		}
		if _, g := c.do("GET", p.base+"/v2/payments/refunds/"+refundID, nil); str(result(g), "status") == "Accepted" {
			t.Errorf("a status before its return settled the refund: %v", g)
		}
		bank.call(t, "POST", "/up", nil)
		m := bank.waitMessage(t, "pacs.004", refundID, 30*time.Second)
		if m.Amount != "2.00" {
			t.Errorf("the partial refund's pacs.004: %+v", m)
		}
		if s, v := bank.call(t, "POST", "/refund/"+refundID+"/settle", nil); s != 200 {
			t.Fatalf("settle: %d %v", s, v)
		}
		if _, g := c.do("GET", p.base+"/v2/payments/refunds/"+refundID, nil); str(result(g), "status") != "Accepted" {
			t.Errorf("the status after the return: %v", g)
		}
	})

	t.Run("a message with a repeated element is refused", func(t *testing.T) {
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "Strict"})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		body := string(creditBody("DOUBLEACCT1", "DOUBLETX1", iso20022.ID(qrID), "3.00", "PAYER"))
		// A second creditor account, to another merchant's IBAN: which one
		// a lax reader takes is up to chance.
		acct := regexp.MustCompile(`(?s)<CdtrAcct>.*</CdtrAcct>`).FindString(body)
		if !strings.Contains(acct, shopIBAN) {
			t.Fatalf("no CdtrAcct to repeat in:\n%s", body)
		}
		body = strings.Replace(body, acct, acct+strings.Replace(acct, shopIBAN, "MD91AG000225100013104999", 1), 1)
		req, _ := http.NewRequest("POST", bank.base+"/send", strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var sent struct {
			PaydStatus int    `json:"paydStatus"`
			PaydAnswer string `json:"paydAnswer"`
		}
		json.NewDecoder(res.Body).Decode(&sent)
		res.Body.Close()
		if sent.PaydStatus != 400 || !strings.Contains(sent.PaydAnswer, "CdtrAcct") {
			t.Errorf("a pacs.008 with two CdtrAcct: %d %s", sent.PaydStatus, sent.PaydAnswer)
		}
		if _, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID, nil); result(l)["totalCount"] != 0.0 {
			t.Errorf("the refused message made a payment: %v", l)
		}
	})

	t.Run("the longest texts", func(t *testing.T) {
		long := ""
		for len([]rune(long)) < 500 {
			long += "Comandă — заказ №42; "
		}
		long = string([]rune(long)[:500])
		s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 7.5, "currency": "MDL",
			"description": long, "expiresAt": exp, "callbackUrl": hook.URL})
		if s != 200 {
			t.Fatalf("rtp: %d %v", s, v)
		}
		id := str(result(v), "rtpId")
		m := bank.waitMessage(t, "pain.013", id, 10*time.Second)
		if !strings.Contains(m.Body, "<Ustrd>"+iso20022.Text(long, iso20022.MaxRemittance)+"</Ustrd>") {
			t.Errorf("the description is not cut to 140 characters:\n%s", m.Body)
		}
		if s, v := c.do("POST", p.base+"/v2/rtp/"+id+"/cancel", map[string]any{"reason": long}); s != 200 {
			t.Fatalf("cancel: %d %v", s, v)
		}
		if m := bank.waitMessage(t, "camt.055", id, 10*time.Second); !strings.Contains(m.Body, "<AddtlInf>"+iso20022.Text(long, iso20022.MaxAdditionalInfo)+"</AddtlInf>") {
			t.Errorf("the cancel reason is not cut to 105 characters:\n%s", m.Body)
		}
		s, v = c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": long})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")
		if s, v := bank.call(t, "POST", "/pay", map[string]any{"target": qrID, "amount": "9.00", "creditorIban": shopIBAN,
			"payerName": strings.Repeat("PAYER NAME ", 20)}); s != 200 || v["status"] != iso20022.StatusCredited {
			t.Fatalf("credit: %d %v", s, v)
		}
		_, l := c.do("GET", p.base+"/v2/instant/payments?qrId="+qrID, nil)
		items, _ := result(l)["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("payments: %v", l)
		}
		s, v = c.do("POST", p.base+"/v2/payments/"+str(items[0].(map[string]any), "payId")+"/refund", map[string]any{"reason": long})
		if s != 200 {
			t.Fatalf("refund: %d %v", s, v)
		}
		refundID := str(result(v), "refundId")
		if m := bank.waitMessage(t, "pacs.004", refundID, 10*time.Second); !strings.Contains(m.Body, "<AddtlInf>"+iso20022.Text(long, iso20022.MaxAdditionalInfo)+"</AddtlInf>") {
			t.Errorf("the refund reason is not cut to 105 characters:\n%s", m.Body)
		}
		if _, g := c.do("GET", p.base+"/v2/payments/refunds/"+refundID, nil); str(result(g), "refundReason") != long {
			t.Errorf("payd did not keep the whole reason: %v", g)
		}
	})

	t.Run("every message validates against its XSD", func(t *testing.T) {
		xsdtest.Available(t)
		n := 0
		for _, m := range bank.messages(t, "") {
			xsdtest.Validate(t, m.Kind+" from payd", []byte(m.Body))
			n++
		}
		for _, x := range bank.sent(t) {
			if strings.Contains(x.Body, "DOUBLEACCT1") {
				continue // built invalid on purpose
			}
			xsdtest.Validate(t, x.Kind+" from the bank", []byte(x.Body))
			if x.Status == 200 && strings.HasPrefix(x.Answer, "<?xml") {
				xsdtest.Validate(t, "payd's answer to a "+x.Kind, []byte(x.Answer))
			}
			n++
		}
		if n < 30 {
			t.Errorf("only %d messages to validate", n)
		}
		t.Logf("%d messages and their answers validate", n)
	})

	recv.mu.Lock()
	if recv.bad != 0 {
		t.Errorf("%d callbacks had a bad signature", recv.bad)
	}
	recv.mu.Unlock()
}

// TestRailsConfig: production refuses to start without real rails, and the
// sandbox refuses the production adapter, each saying why.
func TestRailsConfig(t *testing.T) {
	dir := t.TempDir()
	base := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db"), "PAYD_PUBLIC_URL": "https://payd.example"}
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PAYD_MODE": "production"}, "production needs real rails"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_RAILS": "sandbox"}, "refused in production"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_RAILS": "iso20022", "PAYD_RAILS_KEY": railsKey}, "PAYD_RAILS_URL"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/x"}, "PAYD_RAILS_KEY"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/x", "PAYD_RAILS_KEY": railsKey}, "PAYD_RAILS_BIC"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/x", "PAYD_RAILS_KEY": railsKey,
			"PAYD_RAILS_BIC": "paydmd2"}, "is not a BIC"},
		{map[string]string{"PAYD_RAILS": "iso20022"}, "sandbox mode uses the sandbox rails only"},
		{map[string]string{"PAYD_RAILS": "swift"}, "rails must be sandbox or iso20022"},
		{map[string]string{"PAYD_CARD_ACQUIRER": "maib-ecomm"}, "the sandbox takes its test cards on its own form"},
		{map[string]string{"PAYD_CARD_ACQUIRER": "stripe"}, "the card acquirer must be maib-ecomm"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_CARD_ACQUIRER": "maib-ecomm"}, "PAYD_ACQUIRER_URL"},
		{map[string]string{"PAYD_MODE": "production", "PAYD_CARD_ACQUIRER": "maib-ecomm", "PAYD_ACQUIRER_URL": "https://api.example",
			"PAYD_ACQUIRER_PROJECT_ID": "p", "PAYD_ACQUIRER_PROJECT_SECRET": "s"}, "PAYD_ACQUIRER_SIGNATURE_KEY"},
	}
	for _, tc := range cases {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tc.env {
			env[k] = v
		}
		var stderr bytes.Buffer
		code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to say %q", tc.env, code, stderr.String(), tc.want)
		}
	}
	// Operator commands that only touch the database need no rails.
	env := map[string]string{"PAYD_MODE": "production"}
	for k, v := range base {
		env[k] = v
	}
	if out, code := runCmd(t, env, "migrate"); code != 0 {
		t.Errorf("production migrate without rails: %d %s", code, out)
	}
}

// TestCrashRecoveryRails: payd in production with the iso20022 rails is
// SIGKILLed while messages flow both ways. The bank side resends each
// credit (same MsgId) until payd answers 200, as a connector must. Then
// every credit payd accepted is one payment, no credit is two, every
// acknowledged RTP reached the bank as pain.013 and every acknowledged
// refund as pacs.004.
func TestCrashRecoveryRails(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the binary many times")
	}
	kills := envInt("PAYD_CRASH_KILLS", 20) / 2
	storetest.Databases(t, func(t *testing.T, _ *sqlstore.Store, dbURL string) {
		paydAddr := freeAddr(t)
		bank := startBank(t, freeAddr(t), "http://"+paydAddr+"/rails/iso20022")
		env := map[string]string{
			"PAYD_DATABASE_URL": dbURL, "PAYD_MODE": "production", "PAYD_PUBLIC_URL": "https://payd.example",
			"PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": bank.base + "/iso20022", "PAYD_RAILS_KEY": railsKey, "PAYD_RAILS_BIC": paydBIC,
			"PAYD_CALLBACK_LEASE": "1s", "PAYD_TOKEN_TTL": "1h",
		}
		cr := newMerchantCreds(t, env)
		p := startProc(t, env, paydAddr)
		defer p.stop()
		c := &client{http: &http.Client{Timeout: 3 * time.Second}, token: token(t, p.base, cr)}
		s, v := c.do("POST", p.base+"/v2/instant/qr", map[string]any{"type": "Static", "amountType": "Free", "currency": "MDL", "description": "crash"})
		if s != 200 {
			t.Fatalf("qr: %d %v", s, v)
		}
		qrID := str(result(v), "qrId")

		var mu sync.Mutex
		var rtps, refunds []string
		credits := map[string]string{} // TxId → the outcome payd answered
		var seq atomic.Int64
		httpc := &http.Client{Timeout: 3 * time.Second}
		// credit sends one pacs.008 until payd answers it, as a connector does.
		credit := func(stop <-chan struct{}) {
			n := seq.Add(1)
			txID := fmt.Sprintf("CRASHTX%08d", n)
			body := creditBody(fmt.Sprintf("CRASHMSG%08d", n), txID, iso20022.ID(qrID), "1.00", "CRASH PAYER")
			for {
				req, _ := http.NewRequest("POST", p.base+"/rails/iso20022", bytes.NewReader(body))
				iso20022.Sign(req.Header, railsKey, body, time.Now())
				res, err := httpc.Do(req)
				if err == nil {
					ans, _ := io.ReadAll(res.Body)
					res.Body.Close()
					var st iso20022.Pacs002
					if res.StatusCode == 200 && xml.Unmarshal(ans, &st) == nil && len(st.Rpt.Txs) == 1 {
						mu.Lock()
						credits[txID] = st.Rpt.Txs[0].TxSts
						mu.Unlock()
						return
					}
				}
				select {
				case <-stop:
					return // given up: not counted either way
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
		ops := []func(stop <-chan struct{}){
			credit,
			func(<-chan struct{}) {
				s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 10, "currency": "MDL",
					"description": "crash", "expiresAt": payd.FormatTime(time.Now().Add(time.Hour))})
				if s == 200 {
					mu.Lock()
					rtps = append(rtps, str(result(v), "rtpId"))
					mu.Unlock()
				}
			},
			func(<-chan struct{}) {
				if id := refundRecent(c, p.base, map[string]any{"reason": "crash"}); id != "" {
					mu.Lock()
					refunds = append(refunds, id)
					mu.Unlock()
				}
			},
		}
		stop := load(4, func(stop <-chan struct{}) { ops[rand.IntN(len(ops))](stop) })
		killRestart(p, kills, 200*time.Millisecond, 600*time.Millisecond)
		stop()

		db := openDB(t, dbURL)
		defer db.Close()
		// Every credit payd answered ACCC is exactly one payment; no credit is two.
		accepted := 0
		for tx, st := range credits {
			var n int
			db.QueryRow("SELECT COUNT(*) FROM payments WHERE network_ref = "+map[bool]string{true: "$1", false: "?"}[strings.HasPrefix(dbURL, "postgres")], tx).Scan(&n)
			if st == iso20022.StatusCredited {
				accepted++
				if n != 1 {
					t.Errorf("credit %s answered ACCC has %d payments", tx, n)
				}
			} else if n != 0 {
				t.Errorf("credit %s answered %s has %d payments", tx, st, n)
			}
		}
		if bad := ids(t, db, "SELECT network_ref FROM payments WHERE network_ref IS NOT NULL GROUP BY network_ref HAVING COUNT(*) > 1"); len(bad) > 0 {
			t.Errorf("%d credits applied twice", len(bad))
		}
		// Every acknowledged RTP and refund reached the bank.
		deadline := time.Now().Add(60 * time.Second)
		missing := func() (n int) {
			seen := map[string]bool{}
			for _, k := range []string{"pain.013", "pacs.004"} {
				for _, m := range bank.messages(t, k) {
					seen[m.ObjectID] = true
				}
			}
			for _, id := range append(append([]string{}, rtps...), refunds...) {
				if !seen[id] {
					n++
				}
			}
			return n
		}
		for missing() > 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if n := missing(); n > 0 {
			t.Errorf("%d acknowledged RTPs or refunds never reached the bank", n)
		}
		if accepted == 0 || len(rtps) == 0 || len(refunds) == 0 {
			t.Errorf("too little traffic to show anything: %d credits, %d RTPs, %d refunds", accepted, len(rtps), len(refunds))
		}
		t.Logf("%d kills; %d credits answered (%d ACCC), %d RTPs, %d refunds; each applied once and sent", kills, len(credits), accepted, len(rtps), len(refunds))
	})
}

// TestStartBankOnTakenAddress: a bank whose address was taken meanwhile
// (by a server that answers /healthz with something else) starts on
// another one, rather than the test talking to the wrong server.
func TestStartBankOnTakenAddress(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	taken := strings.TrimPrefix(other.URL, "http://")
	b := startBank(t, taken, "http://127.0.0.1:1/rails/iso20022")
	if b.base == other.URL {
		t.Fatalf("the bank reports the taken address %s", b.base)
	}
	res, err := http.Get(b.base + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the bank at %s: %v %v", b.base, res, err)
	}
	res.Body.Close()
}
