package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"payd"
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &server{done: make(chan int, 1), stop: cancel}
	getenv := func(k string) string { return env[k] }
	go func() {
		code := run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, getenv, pw, io.Discard)
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

func runCmd(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	if code != 0 {
		t.Logf("payd %v: exit %d, stderr: %s", args, code, errOut.String())
	}
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
