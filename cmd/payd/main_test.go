package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore/storetest"
)

// server is payd's run() serving on port 0 in the background.
type server struct {
	base   string
	stdout string
	done   chan int
	stop   context.CancelFunc
}

// startServer runs "payd serve" with env on a random port and waits until
// it listens.
func startServer(t *testing.T, env map[string]string) *server {
	t.Helper()
	return startServerLogging(t, env, io.Discard)
}

// startServerLogging is startServer with the server's log going to stderr,
// complete once the server has shut down.
func startServerLogging(t *testing.T, env map[string]string, stderr io.Writer) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &server{done: make(chan int, 1), stop: cancel}
	getenv := withTestKey(env)
	go func() {
		code := run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, getenv, pw, stderr)
		pw.Close()
		s.done <- code
	}()
	sc := bufio.NewScanner(pr)
	var out strings.Builder
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if i := strings.Index(line, "listening on "); i >= 0 {
			s.base = strings.TrimSpace(line[i+len("listening on "):])
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if s.base == "" {
		t.Fatalf("server did not start; output:\n%s", out.String())
	}
	s.stdout = out.String()
	t.Cleanup(func() { s.shutdown(t) })
	return s
}

func (s *server) shutdown(t *testing.T) {
	t.Helper()
	if s.stop == nil {
		return
	}
	s.stop()
	s.stop = nil
	select {
	case code := <-s.done:
		if code != 0 {
			t.Errorf("serve exited with %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Error("serve did not shut down")
	}
}

func post(t *testing.T, url, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func get(t *testing.T, url, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v
}

// withTestKey is env with the test operator key, unless it names one.
func withTestKey(env map[string]string) func(string) string {
	return func(k string) string {
		if k == "PAYD_SECRET_KEY" && env["PAYD_SECRET_KEY"] == "" && env["PAYD_SECRET_KEY_FILE"] == "" && env["NO_TEST_KEY"] == "" {
			return storetest.SecretKeyB64
		}
		return env[k]
	}
}

func runCmd(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, withTestKey(env), &out, &errOut)
	if code != 0 {
		t.Logf("payd %v: exit %d, stderr: %s", args, code, errOut.String())
	}
	return out.String(), code
}

// runAll is runCmd returning stdout and stderr together.
func runAll(env map[string]string, args ...string) (string, int) {
	var out bytes.Buffer
	code := run(context.Background(), args, withTestKey(env), &out, &out)
	return out.String(), code
}

func TestSmoke(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db")}
	out, code := runCmd(t, env, "merchant", "create", "--name", "Smoke shop")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || cr.ClientSecret == "" || cr.SignatureKey == "" {
		t.Fatalf("merchant create = %d %q", code, out)
	}
	s := startServer(t, env)
	if strings.Contains(s.stdout, "created a demo merchant") {
		t.Error("a demo merchant was created although the database had one")
	}
	status, body := post(t, s.base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret})
	tok, _ := body["result"].(map[string]any)["accessToken"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("token: %d %v", status, body)
	}
	if status, body := get(t, s.base+"/v2/rtp?count=10&offset=0", tok); status != 200 || body["ok"] != true {
		t.Errorf("authenticated call: %d %v", status, body)
	}
	if status, _ := get(t, s.base+"/v2/rtp?count=10&offset=0", "bad-token"); status != 401 {
		t.Errorf("bad token: %d, want 401", status)
	}
	// A second instance on the same database accepts the token, and so
	// does a restarted one.
	s2 := startServer(t, env)
	if status, body := get(t, s2.base+"/v2/rtp?count=10&offset=0", tok); status != 200 {
		t.Errorf("token on a second instance: %d %v", status, body)
	}
	s.shutdown(t)
	s2.shutdown(t)
	s3 := startServer(t, env)
	if status, body := get(t, s3.base+"/v2/rtp?count=10&offset=0", tok); status != 200 {
		t.Errorf("token after restart: %d %v", status, body)
	}
	s3.shutdown(t)
}

func TestFirstRunCreatesDemoMerchant(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": filepath.Join(t.TempDir(), "sub", "payd.db")}
	s := startServer(t, env)
	if !strings.Contains(s.stdout, "created a demo merchant") || !strings.Contains(s.stdout, "curl -s -X POST "+s.base+"/v2/auth/token") {
		t.Fatalf("first run output:\n%s", s.stdout)
	}
	// The printed curl line's body works as printed.
	i := strings.Index(s.stdout, "-d '")
	j := strings.LastIndex(s.stdout, "'")
	var creds map[string]string
	if i < 0 || json.Unmarshal([]byte(s.stdout[i+4:j]), &creds) != nil {
		t.Fatalf("no curl body in:\n%s", s.stdout)
	}
	if status, body := post(t, s.base+"/v2/auth/token", "", creds); status != 200 {
		t.Errorf("printed credentials: %d %v", status, body)
	}
	s.shutdown(t)
	s2 := startServer(t, env)
	if strings.Contains(s2.stdout, "created a demo merchant") {
		t.Error("second run created another demo merchant")
	}
}

func TestCommands(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db")}
	if out, code := runCmd(t, env, "migrate"); code != 0 || !strings.Contains(out, "applied 001_core.sql") {
		t.Errorf("migrate = %d %q", code, out)
	}
	if out, code := runCmd(t, env, "migrate"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second migrate = %d %q", code, out)
	}
	if out, code := runCmd(t, env, "version"); code != 0 || !strings.HasPrefix(out, "payd ") {
		t.Errorf("version = %d %q", code, out)
	}
	out, _ := runCmd(t, env, "merchant", "create", "--name", "A", "--commission", "150")
	var cr payd.Credentials
	json.Unmarshal([]byte(out), &cr)
	out, code := runCmd(t, env, "merchant", "list")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0]["clientId"] != cr.ClientID || list[0]["commissionBp"] != 150.0 {
		t.Errorf("merchant list = %d %q", code, out)
	}
	if strings.Contains(out, cr.ClientSecret) {
		t.Error("merchant list shows the secret")
	}
	out, code = runCmd(t, env, "merchant", "rotate-secret", cr.ClientID)
	var rot payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &rot) != nil || rot.ClientSecret == cr.ClientSecret || rot.ClientID != cr.ClientID {
		t.Errorf("rotate-secret = %d %q", code, out)
	}
	if _, code := runCmd(t, env, "merchant", "rotate-secret", "nobody"); code != 1 {
		t.Errorf("rotate-secret of unknown merchant exited %d", code)
	}
	if _, code := runCmd(t, env, "frobnicate"); code != 2 {
		t.Errorf("unknown command exited %d", code)
	}
	if _, code := runCmd(t, map[string]string{"PAYD_MODE": "staging"}, "migrate"); code != 1 {
		t.Errorf("bad PAYD_MODE exited %d", code)
	}
	if out, code := runCmd(t, env, "callbacks", "list", "--state", "failed"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("callbacks list = %d %q", code, out)
	}
}

// TestSlowClientsAreCutOff: a client that never finishes its headers is
// disconnected by the server's header timeout instead of holding a
// connection forever.
func TestSlowClientsAreCutOff(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db")}
	s := startServer(t, env)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST /v2/rtp HTTP/1.1\r\nHost: x\r\n")) // and nothing more
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the server kept the slow connection open: %v", err)
	}
	t.Logf("slow client cut off after %v", time.Since(start).Round(time.Millisecond))
}

// TestConfigHardening: database URLs of unknown schemes are refused, a
// password never reaches the output, production needs an explicit https
// public URL and warns on SQLite.
func TestConfigHardening(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"mysql://x", "file:" + filepath.Join(dir, "a.db"), "redis://u:hunter2@h/0"} {
		out, code := runAll(map[string]string{"PAYD_DATABASE_URL": u}, "migrate")
		if code == 0 || !strings.Contains(out, "is not a database payd can use") {
			t.Errorf("%s: exit %d, %q", u, code, out)
		}
		if strings.Contains(out, "hunter2") {
			t.Errorf("the password was printed: %q", out)
		}
	}
	for _, u := range []string{"sqlite:" + filepath.Join(dir, "b.db"), filepath.Join(dir, "c.db")} {
		if out, code := runAll(map[string]string{"PAYD_DATABASE_URL": u}, "migrate"); code != 0 {
			t.Errorf("%s refused: %q", u, out)
		}
	}
	// A PostgreSQL URL with a password that cannot connect: the error hides it.
	out, code := runAll(map[string]string{"PAYD_DATABASE_URL": "postgres://payd:hunter2@127.0.0.1:1/payd?connect_timeout=2"}, "migrate")
	if code == 0 || strings.Contains(out, "hunter2") {
		t.Errorf("unreachable postgres: exit %d, output %q", code, out)
	}
	if got := redact("postgres://payd:hunter2@db:5432/payd and postgresql://a:b@c/d"); got != "postgres://payd:xxxxx@db:5432/payd and postgresql://a:xxxxx@c/d" {
		t.Errorf("redact = %q", got)
	}
	prod := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(dir, "p.db"), "PAYD_MODE": "production",
		"PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/x", "PAYD_RAILS_KEY": "a-shared-secret-0123", "PAYD_RAILS_BIC": "PAYDMD22"}
	var stderr bytes.Buffer
	if code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, withTestKey(prod), io.Discard, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "PAYD_PUBLIC_URL") {
		t.Errorf("production without a public URL: exit %d, %q", code, stderr.String())
	}
	prod["PAYD_PUBLIC_URL"] = "http://payd.example"
	stderr.Reset()
	if code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, withTestKey(prod), io.Discard, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "https") {
		t.Errorf("production with an http public URL: exit %d, %q", code, stderr.String())
	}
	prod["PAYD_PUBLIC_URL"] = "https://payd.example"
	ctx, cancel := context.WithCancel(t.Context())
	stderr.Reset()
	done := make(chan int, 1)
	pr, pw := io.Pipe()
	var errBuf syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, withTestKey(prod), pw, &errBuf)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	cancel()
	<-done
	if !strings.Contains(errBuf.String(), "warning: production on SQLite") {
		t.Errorf("no SQLite warning in production: %q", errBuf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestMetricsListener: in production /metrics is served on PAYD_METRICS_ADDR
// and answers the envelope 404 on the public listener.
func TestMetricsListener(t *testing.T) {
	maddr := freeAddr(t)
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "m.db"), "PAYD_MODE": "production",
		"PAYD_PUBLIC_URL": "https://payd.example", "PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/none",
		"PAYD_RAILS_KEY": "a-shared-secret-0123", "PAYD_RAILS_BIC": "PAYDMD22", "PAYD_METRICS_ADDR": maddr}
	s := startServer(t, env)
	res, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 404 || !strings.Contains(string(body), `"errorCode":"90000"`) {
		t.Errorf("public /metrics in production: %d %s", res.StatusCode, body)
	}
	res, err = http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "payd_callbacks_pending") ||
		!strings.Contains(string(body), `payd_rails_away{network="rails"} 0`) {
		t.Errorf("metrics listener: %d %.200s", res.StatusCode, body)
	}

	// Nothing listens where payd POSTs: after a few RTPs the connector is
	// away, and the gauge says so.
	out, code := runCmd(t, env, "merchant", "create", "--name", "Shop", "--iban", "MD24AG000225100013104168")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	status, tb := post(t, s.base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret})
	tok, _ := tb["result"].(map[string]any)["accessToken"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("token: %d %v", status, tb)
	}
	for range 5 {
		if status, v := post(t, s.base+"/v2/rtp", tok, map[string]any{"alias": "37369000001", "amount": 10, "currency": "MDL",
			"description": "Away", "expiresAt": payd.FormatTime(time.Now().Add(time.Hour))}); status != 200 {
			t.Fatalf("rtp: %d %v", status, v)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get("http://" + maddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), `payd_rails_away{network="rails"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connector not away 10 s after five RTPs it could not take:\n%s", grepLines(string(body), "payd_rails"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSecretKeyAtRest: the sandbox on SQLite makes its key file beside the
// database and says so; production refuses to start without a key; keys
// written in plain text before sealing are sealed at start; payd keys
// rotate re-seals every key under a new operator key.
func TestSecretKeyAtRest(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "k.db")
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + dbPath, "NO_TEST_KEY": "1"}
	out, code := runAll(env, "merchant", "create", "--name", "Keys")
	var cr payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &cr) != nil {
		t.Fatalf("merchant create: %d %s", code, out)
	}
	if !strings.Contains(out, "created the secret key file "+dbPath+".key") {
		t.Errorf("the sandbox did not say it made a key file: %q", out)
	}
	oldKey, err := os.ReadFile(dbPath + ".key")
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, "sqlite:"+dbPath)
	defer db.Close()
	var stored string
	db.QueryRow("SELECT signature_key FROM merchants").Scan(&stored)
	if !strings.HasPrefix(stored, "enc1:") || strings.Contains(stored, cr.SignatureKey) {
		t.Fatalf("signature key at rest: %q", stored)
	}
	// A key stored in plain text (before sealing existed) is sealed when serve starts.
	legacyKey := "legacy-plain-signature-key"
	if _, err := db.Exec("UPDATE merchants SET signature_key = ?", legacyKey); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, env)
	s.shutdown(t)
	db.QueryRow("SELECT signature_key FROM merchants").Scan(&stored)
	if !strings.HasPrefix(stored, "enc1:") {
		t.Errorf("the legacy key was not sealed at start: %q", stored)
	}
	// Production without a key refuses to start.
	prod := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(dir, "p.db"), "PAYD_MODE": "production", "NO_TEST_KEY": "1",
		"PAYD_PUBLIC_URL": "https://payd.example", "PAYD_RAILS": "iso20022", "PAYD_RAILS_URL": "http://127.0.0.1:1/x", "PAYD_RAILS_KEY": "a-shared-secret-0123", "PAYD_RAILS_BIC": "PAYDMD22"}
	if out, code := runAll(prod, "serve", "--addr", "127.0.0.1:0"); code == 0 || !strings.Contains(out, "PAYD_SECRET_KEY") {
		t.Errorf("production without a secret key: %d %q", code, out)
	}
	// Rotate to a new key; the merchant's signature key survives, under the new key only.
	newKey := base64.StdEncoding.EncodeToString([]byte("another-operator-key-of-32-bytes"))
	rot := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + dbPath, "PAYD_SECRET_KEY": newKey}
	if out, code := runAll(rot, "keys", "rotate", "--old-key-file", dbPath+".key"); code != 0 || !strings.Contains(out, "re-sealed 1 secrets") {
		t.Fatalf("keys rotate: %d %q", code, out)
	}
	out, code = runAll(rot, "merchant", "rotate-secret", cr.ClientID)
	var after payd.Credentials
	if code != 0 || json.Unmarshal([]byte(out), &after) != nil || after.SignatureKey != legacyKey {
		t.Errorf("after rotation the signature key reads %q (want %q): %d %s", after.SignatureKey, legacyKey, code, out)
	}
	old := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + dbPath, "PAYD_SECRET_KEY": strings.TrimSpace(string(oldKey))}
	if out, code := runAll(old, "merchant", "rotate-secret", cr.ClientID); code == 0 {
		t.Errorf("the old key still opens the stored keys: %s", out)
	}
}

// TestVersionFromBuildInfo: payd version names the commit and build time
// Go recorded from the checkout; payd -h lists the subcommands.
func TestVersionFromBuildInfo(t *testing.T) {
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout")
	}
	bin := filepath.Join(t.TempDir(), "payd")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "commit "+strings.TrimSpace(string(rev))) || strings.Contains(string(out), "built unknown") {
		t.Errorf("payd version = %q, %v; want commit %s and a build time", out, err, rev)
	}
	help, _ := runAll(nil, "-h")
	for _, sub := range []string{"serve", "migrate", "merchant create", "merchant list", "callbacks list", "keys rotate", "backup", "version"} {
		if !strings.Contains(help, "payd "+sub) {
			t.Errorf("payd -h does not list %q:\n%s", sub, help)
		}
	}
}

// TestBackupRestoreDrill backs up a SQLite database while payd serves
// writes, restores the copy into a new instance, and finds there every
// RTP acknowledged before the backup began.
func TestBackupRestoreDrill(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(dir, "live.db"), "PAYD_TOKEN_TTL": "1h"}
	cr := newMerchantCreds(t, env)
	p := startProc(t, env, freeAddr(t))
	defer p.stop()
	c := &client{http: &http.Client{Timeout: 5 * time.Second}, token: token(t, p.base, cr)}
	var mu sync.Mutex
	var acked []string
	stop := load(3, func(<-chan struct{}) {
		s, v := c.do("POST", p.base+"/v2/rtp", map[string]any{"alias": "37369112221", "amount": 10, "currency": "MDL",
			"description": "drill", "expiresAt": payd.FormatTime(time.Now().Add(time.Hour))})
		if s == 200 {
			mu.Lock()
			acked = append(acked, str(result(v), "rtpId"))
			mu.Unlock()
		}
	})
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	copyPath := filepath.Join(dir, "copy.db")
	if out, code := runAll(env, "backup", copyPath); code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup under load: %d %s", code, out)
	}
	if st, err := os.Stat(copyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the copy's mode: %v %v, want 0600", st.Mode(), err)
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	if len(before) == 0 {
		t.Fatal("no writes were acknowledged before the backup")
	}
	if out, code := runAll(env, "backup", copyPath); code == 0 {
		t.Errorf("a backup over an existing file: %s", out)
	}
	// Restore: a new instance on the copy.
	restored := startProc(t, map[string]string{"PAYD_DATABASE_URL": "sqlite:" + copyPath, "PAYD_TOKEN_TTL": "1h"}, freeAddr(t))
	defer restored.stop()
	rc := &client{http: &http.Client{Timeout: 5 * time.Second}, token: token(t, restored.base, cr)}
	for _, id := range before {
		if s, _ := rc.do("GET", restored.base+"/v2/rtp/"+id, nil); s != 200 {
			t.Errorf("RTP %s acknowledged before the backup is missing from the restore: %d", id, s)
		}
	}
	t.Logf("%d RTPs acknowledged before the backup, %d in all; every one before it restored", len(before), len(acked))
}

// TestListOutput: list commands print JSON with --json or into a pipe, and
// a table for a person.
func TestListOutput(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "l.db")}
	newMerchantCreds(t, env)
	for _, args := range [][]string{{"merchant", "list", "--json"}, {"merchant", "list"}, {"callbacks", "list", "--json"}} {
		out, code := runCmd(t, env, args...)
		var v []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Errorf("payd %v: %d %q is not a JSON list", args, code, out)
		}
	}
	var b bytes.Buffer
	rows := [][]string{{"01a1fd38", "Shop", "true"}}
	if err := writeList(&b, false, nil, []string{"MERCHANT", "NAME", "ACTIVE"}, rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "MERCHANT  NAME  ACTIVE") ||
		!strings.HasPrefix(lines[1], "01a1fd38  Shop  true") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestAccessLinesFollowLogFormat: payd serve writes each request's access
// line in the log's format, beside its other lines: with
// PAYD_LOG_FORMAT=json every line is a JSON object.
func TestAccessLinesFollowLogFormat(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var logs bytes.Buffer
			env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db"), "PAYD_LOG_FORMAT": format}
			s := startServerLogging(t, env, &logs)
			if status, _ := get(t, s.base+"/v2/rtp?count=1&offset=0", "bad-token"); status != 401 {
				t.Fatalf("bad token: %d", status)
			}
			s.shutdown(t)
			var access []string
			for _, line := range strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n") {
				if format == "json" {
					var v map[string]any
					if err := json.Unmarshal([]byte(line), &v); err != nil {
						t.Fatalf("not a JSON line: %q", line)
					}
					if v["msg"] == "request" && v["route"] == "GET /v2/rtp" && v["status"] == 401.0 {
						access = append(access, line)
					}
				} else if strings.Contains(line, ` msg=request `) && strings.Contains(line, ` route="GET /v2/rtp" client=127.0.0.1 status=401 `) {
					access = append(access, line)
				}
			}
			if len(access) != 1 {
				t.Fatalf("%d access lines for the request in:\n%s", len(access), logs.String())
			}
		})
	}
}

// TestBackupKeepsItsKey: payd backup writes the sandbox's key file beside
// the copy, both readable by their owner only (the live database too); a
// copy restored with its key serves its merchants, one restored without it
// refuses to start and makes no key, and a backup never creates a database.
func TestBackupKeepsItsKey(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + live, "NO_TEST_KEY": "1"}
	cr := newMerchantCreds(t, env)
	if st, err := os.Stat(live); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the live database's mode: %v %v, want 0600", st.Mode(), err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	if out, code := runAll(env, "backup", copyPath); code != 0 || !strings.Contains(out, copyPath+".key") {
		t.Fatalf("backup: %d %s", code, out)
	}
	for _, f := range []string{copyPath, copyPath + ".key"} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", f, st.Mode(), err)
		}
	}
	if a, b := readFile(t, live+".key"), readFile(t, copyPath+".key"); a != b {
		t.Error("the backed-up key file differs from the live one")
	}
	// Restored with its key: the merchant's token and signature key work.
	restored := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + copyPath, "NO_TEST_KEY": "1"}
	s := startServer(t, restored)
	status, body := post(t, s.base+"/v2/auth/token", "", map[string]string{"clientId": cr.ClientID, "clientSecret": cr.ClientSecret})
	if status != 200 {
		t.Errorf("token on the restored copy: %d %v", status, body)
	}
	s.shutdown(t)
	// Restored without it: refused, naming the file, and no key is made.
	os.Remove(copyPath + ".key")
	out, code := runAll(restored, "serve", "--addr", "127.0.0.1:0")
	if code == 0 || !strings.Contains(out, copyPath+".key is missing") {
		t.Errorf("a copy without its key file: %d %q", code, out)
	}
	if _, err := os.Stat(copyPath + ".key"); err == nil {
		t.Error("payd made a new key for a database holding sealed values")
	}
	// With another key: refused at start.
	other := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + copyPath, "PAYD_SECRET_KEY": storetest.SecretKeyB64}
	if out, code := runAll(other, "serve", "--addr", "127.0.0.1:0"); code == 0 || !strings.Contains(out, "not the key they were sealed with") {
		t.Errorf("a copy with another key: %d %q", code, out)
	}
	// No database: nothing is created.
	empty := filepath.Join(dir, "none", "payd.db")
	if out, code := runAll(map[string]string{"PAYD_DATABASE_URL": "sqlite:" + empty}, "backup", filepath.Join(dir, "x.db")); code == 0 || !strings.Contains(out, "no database") {
		t.Errorf("backup without a database: %d %q", code, out)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Error("backup created a database")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommandHelp: each command's -h shows its own flags and an example,
// not serve's settings; the groups list their commands; --version works.
func TestCommandHelp(t *testing.T) {
	out, code := runAll(nil, "merchant", "create", "-h")
	if code != 0 || !strings.Contains(out, "Example:") || !strings.Contains(out, "-iban") || strings.Contains(out, "-addr") ||
		strings.Contains(out, "-callback-schedule") || strings.Count(out, "\n") > 30 {
		t.Errorf("payd merchant create -h (%d):\n%s", code, out)
	}
	for _, group := range []string{"merchant", "callbacks", "keys"} {
		out, code := runAll(nil, group, "-h")
		if code != 0 || !strings.Contains(out, "payd "+group+" ") || strings.Contains(out, "unknown command") {
			t.Errorf("payd %s -h (%d):\n%s", group, code, out)
		}
	}
	if out, code := runAll(nil, "merchant", "-h"); !strings.Contains(out, "payd merchant rotate-secret") || code != 0 {
		t.Errorf("payd merchant -h lists no rotate-secret:\n%s", out)
	}
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		if out, code := runAll(nil, args...); code != 0 || !strings.HasPrefix(out, "payd ") {
			t.Errorf("payd %v: %d %q", args, code, out)
		}
	}
	if out, code := runAll(nil, "serve", "-h"); code != 0 || !strings.Contains(out, "-callback-schedule") || !strings.Contains(out, "-rails-key-file") {
		t.Errorf("payd serve -h lacks settings (%d):\n%s", code, out)
	}
	// A secret from its file.
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "rails.key")
	os.WriteFile(keyFile, []byte("a-shared-secret-from-a-file\n"), 0o600)
	c, _, err := loadConfig("serve", nil, func(k string) string {
		return map[string]string{"PAYD_RAILS_KEY_FILE": keyFile}[k]
	}, io.Discard, nil)
	if err != nil || c.Net["rails-key"] != "a-shared-secret-from-a-file" {
		t.Errorf("PAYD_RAILS_KEY_FILE: %q %v", c.Net["rails-key"], err)
	}
}
