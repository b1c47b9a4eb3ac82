package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

// The crash and multi-instance tests run the real binary, built once.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func payBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "payd-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "payd")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is one payd process.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	env  []string
	addr string
	logs *syncBuffer // written by the process while a test reads it
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc runs "payd serve" with env on a fixed address and waits until
// it is ready.
func startProc(t *testing.T, env map[string]string, addr string) *proc {
	t.Helper()
	p := &proc{t: t, addr: addr, base: "http://" + addr, logs: &syncBuffer{}}
	p.env = append(os.Environ(), "PAYD_ADDR="+addr, "PAYD_LOG_FORMAT=json", "PAYD_SECRET_KEY="+storetest.SecretKeyB64)
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	p.start()
	return p
}

func (p *proc) start() {
	p.t.Helper()
	p.cmd = exec.Command(payBinary(p.t), "serve")
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(p.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill() // not left running when the test ends
	p.t.Fatalf("payd did not become ready; logs:\n%s", p.logs.String())
}

// kill sends SIGKILL and reaps the process.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

// client is a merchant's HTTP client with a token.
type client struct {
	http  *http.Client
	token string
}

func (c *client) do(method, url string, body any) (int, map[string]any) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

func result(v map[string]any) map[string]any {
	r, _ := v["result"].(map[string]any)
	return r
}

func str(v map[string]any, k string) string {
	s, _ := v[k].(string)
	return s
}

// hookLog is a callback receiver that keeps every delivery.
type hookLog struct {
	mu         sync.Mutex
	byCallback map[string]map[string]bool // X-Callback-Id → X-Signature values seen
	bySubject  map[string]int             // payId/refundId/checkoutId → deliveries
	attempts   map[string]int             // "callbackId/attempt" → times seen
	answer     func(r *http.Request) int
}

func newHookLog() *hookLog {
	return &hookLog{byCallback: map[string]map[string]bool{}, bySubject: map[string]int{}, attempts: map[string]int{},
		answer: func(*http.Request) int { return 200 }}
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Result map[string]any `json:"result"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	subject := str(body.Result, "refundId")
	if subject == "" {
		subject = str(body.Result, "payId")
	}
	id := r.Header.Get("X-Callback-Id")
	h.mu.Lock()
	if h.byCallback[id] == nil {
		h.byCallback[id] = map[string]bool{}
	}
	h.byCallback[id][r.Header.Get("X-Signature")] = true
	h.bySubject[subject]++
	h.attempts[id+"/"+r.Header.Get("X-Callback-Attempt")]++
	h.mu.Unlock()
	w.WriteHeader(h.answer(r))
}

func newMerchantCreds(t *testing.T, env map[string]string) payd.Credentials {
	t.Helper()
	out, code := runCmd(t, env, "merchant", "create", "--name", "Shop", "--commission", "150", "--iban", "MD24AG000225100013104168")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	return cr
}

// load runs op in n goroutines until the returned stop is called; stop
// waits for them to finish. op gets a channel closed at stop.
func load(n int, op func(stop <-chan struct{})) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				op(done)
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// refundRecent asks a refund (body) of one of the merchant's 20 newest
// payments, chosen at random, and returns its id: "" when none was made.
func refundRecent(c *client, base string, body map[string]any) string {
	s, v := c.do("GET", base+"/v2/payments?count=20&offset=0&sortBy=executedAt&order=desc", nil)
	items, _ := result(v)["items"].([]any)
	if s != 200 || len(items) == 0 {
		return ""
	}
	pay := str(items[rand.IntN(len(items))].(map[string]any), "paymentId")
	if s, v = c.do("POST", base+"/v2/payments/"+pay+"/refund", body); s != 200 {
		return ""
	}
	return str(result(v), "refundId")
}

// killRestart SIGKILLs p and starts it again n times, each after a pause
// of at least least and at most least+spread.
func killRestart(p *proc, n int, least, spread time.Duration) {
	for range n {
		time.Sleep(least + rand.N(spread))
		p.kill()
		p.start()
	}
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
