package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oasdiff/yaml"

	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// rssOf reads a process's resident set size from /proc, in bytes.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// tokenFloodRSS is the bound on payd's resident memory after the flood of
// TestTokenFloodKeepsNoMemory: the binary's working set (about 30 MiB on
// SQLite) plus transient request buffers, which Go's collector returns
// within GOMEMLIMIT's 128 MiB. Before clientIds were checked, the flood
// held 2 MiB a request as limiter keys: about 800 MiB.
const tokenFloodRSS = 160 << 20

// TestTokenFloodKeepsNoMemory: 400 token requests, each with a distinct
// clientId of nearly 1 MiB (the body limit), from one address whose rate
// limit would let them all in, leave the real binary's RSS under
// tokenFloodRSS.
func TestTokenFloodKeepsNoMemory(t *testing.T) {
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "flood.db"),
		"PAYD_TOKEN_RATE_ADDR": "100000", "PAYD_TOKEN_RATE_CLIENT": "100000"}
	p := startProc(t, env, freeAddr(t))
	defer p.stop()
	before := rssOf(t, p.cmd.Process.Pid)
	pad := strings.Repeat("x", 1<<20-200)
	hc := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 400; i += 4 {
				body := fmt.Sprintf(`{"clientId":"%d%s","clientSecret":"s"}`, i, pad)
				res, err := hc.Post(p.base+"/v2/auth/token", "application/json", bytes.NewReader([]byte(body)))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				statuses[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if statuses[401] != 400 {
		t.Errorf("answers %v, want 400 × 401", statuses)
	}
	after := rssOf(t, p.cmd.Process.Pid)
	t.Logf("RSS %d MiB before the flood, %d MiB after (bound %d MiB)", before>>20, after>>20, tokenFloodRSS>>20)
	if after > tokenFloodRSS {
		t.Errorf("RSS after 400 × 1 MiB clientIds is %d MiB, bound %d MiB", after>>20, tokenFloodRSS>>20)
	}
}

// TestCommandsCheckArgumentsFirst: a command missing its argument, or
// given a wrong one, says so and creates no database.
func TestCommandsCheckArgumentsFirst(t *testing.T) {
	for _, args := range [][]string{
		{"callbacks", "resend"}, {"callbacks", "resend", "a", "b"}, {"callbacks", "list", "--state", "lost"},
		{"merchant", "rotate-secret"}, {"merchant", "activate"}, {"merchant", "deactivate"}, {"merchant", "create"},
		{"merchant", "create", "--name", "x", "--iban", "NOPE"}, {"reconcile", "import"}, {"reconcile", "report"}, {"backup"},
	} {
		dir := t.TempDir()
		db := filepath.Join(dir, "payd.db")
		out, code := runAll(map[string]string{"PAYD_DATABASE_URL": "sqlite:" + db}, args...)
		if code == 0 {
			t.Errorf("payd %v succeeded: %s", args, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("payd %v left %d files in its directory (%s): %s", args, len(entries), entries[0].Name(), out)
		}
	}
}

// TestComposeKeepsCallbacksOffTheBank: in the demo compose, payd's
// callbacks may reach only the merchants' network: no range of
// PAYD_CALLBACK_ALLOW holds a network of payd-bank (whose control API pays
// and steers) or of the database.
func TestComposeKeepsCallbacksOffTheBank(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Networks map[string]struct {
			IPAM struct {
				Config []struct {
					Subnet string `json:"subnet"`
				} `json:"config"`
			} `json:"ipam"`
		} `json:"networks"`
		Services map[string]struct {
			Networks    []string          `json:"networks"`
			Environment map[string]string `json:"environment"`
		} `json:"services"`
	}
	if _, err := yaml.Unmarshal(raw, &doc, yaml.DecodeOpts{}); err != nil {
		t.Fatal(err)
	}
	var allowed []netip.Prefix
	for _, s := range strings.Split(doc.Services["payd"].Environment["PAYD_CALLBACK_ALLOW"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			allowed = append(allowed, netip.MustParsePrefix(s))
		}
	}
	for _, svc := range []string{"bank", "db"} {
		nets := doc.Services[svc].Networks
		if len(nets) == 0 {
			t.Errorf("%s is on the default network, which payd's callbacks can reach", svc)
		}
		for _, n := range nets {
			subnets := doc.Networks[n].IPAM.Config
			if len(subnets) == 0 && n != "data" {
				t.Errorf("%s's network %s has no fixed subnet to keep out of PAYD_CALLBACK_ALLOW", svc, n)
			}
			for _, c := range subnets {
				sub := netip.MustParsePrefix(c.Subnet)
				for _, a := range allowed {
					if a.Overlaps(sub) {
						t.Errorf("PAYD_CALLBACK_ALLOW %s reaches %s's network %s (%s)", a, svc, n, sub)
					}
				}
			}
		}
	}
	if len(allowed) == 0 {
		t.Error("PAYD_CALLBACK_ALLOW is empty: the demo's callbacks reach no private receiver")
	}
}

// TestKeysRotateRefusedWhileServing: payd keys rotate refuses while an
// instance serves the database, naming it, and changes nothing (the
// instance keeps issuing tokens); once the instance has stopped, it
// rotates. An instance whose key no longer opens the stored secrets is not
// ready (/readyz 503), so no load balancer sends merchants to its 500s.
func TestKeysRotateRefusedWhileServing(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "k.db")
	env := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + dbPath, "PAYD_INSTANCE": "payd-test-1"}
	cr := newMerchantCreds(t, env)
	p := startProc(t, env, freeAddr(t))
	newKey := base64.StdEncoding.EncodeToString([]byte("another-operator-key-of-32-bytes"))
	rot := map[string]string{"PAYD_DATABASE_URL": "sqlite:" + dbPath, "PAYD_SECRET_KEY": newKey, "NO_TEST_KEY": "1"}
	oldKeyFile := filepath.Join(dir, "old.key")
	os.WriteFile(oldKeyFile, []byte(storetest.SecretKeyB64), 0o600)
	out, code := runAll(rot, "keys", "rotate", "--old-key-file", oldKeyFile)
	if code == 0 || !strings.Contains(out, "payd-test-1") {
		t.Errorf("keys rotate beside a serving instance: %d %q, want refused naming payd-test-1", code, out)
	}
	token(t, p.base, cr) // still works: nothing was re-sealed
	ready := func() int {
		res, err := http.Get(p.base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := ready(); s != 200 {
		t.Fatalf("/readyz %d before any rotation", s)
	}
	// Re-seal behind the instance's back (as a rotation that did not ask
	// would): it is no longer ready.
	other, err := sqlstore.Open("sqlite:" + dbPath)
	if err != nil {
		t.Fatal(err)
	}
	nk, _ := base64.StdEncoding.DecodeString(newKey)
	ok, _ := base64.StdEncoding.DecodeString(storetest.SecretKeyB64)
	if err := other.SetSecretKey(nk); err != nil {
		t.Fatal(err)
	}
	if _, err := other.RotateSecretKey(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	if s := ready(); s != 503 {
		t.Errorf("/readyz %d with a key that opens nothing, want 503", s)
	}
	// Back under the instance's key, and stopped: the rotation runs.
	other.SetSecretKey(ok)
	if _, err := other.RotateSecretKey(context.Background(), nk); err != nil {
		t.Fatal(err)
	}
	other.Close()
	p.stop()
	if out, code := runAll(rot, "keys", "rotate", "--old-key-file", oldKeyFile); code != 0 || !strings.Contains(out, "re-sealed") {
		t.Errorf("keys rotate with the instance stopped: %d %q", code, out)
	}
}

// TestEnvExampleStarts: production payd starts from deploy/payd.env.example
// once its placeholders (CHANGE-ME) are filled, and the file names every
// setting production requires (it once lacked PAYD_RAILS_BIC).
func TestEnvExampleStarts(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/payd.env.example")
	if err != nil {
		t.Fatal(err)
	}
	fill := map[string]string{
		"PAYD_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "payd.db"), "PAYD_SECRET_KEY": storetest.SecretKeyB64,
		"PAYD_RAILS_KEY": "a-shared-secret-0123456789", "PAYD_RAILS_BIC": "PAYDMD22",
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if f, ok := fill[k]; ok {
			v = f
		} else if strings.Contains(v, "CHANGE-ME") {
			t.Fatalf("%s=%s: a placeholder this test does not fill", k, v)
		}
		env[k] = v
	}
	for k := range fill {
		if env[k] == "" {
			t.Errorf("payd.env.example has no %s", k)
		}
	}
	// Addresses of the example's host, moved to loopback for the test.
	addr := freeAddr(t)
	env["PAYD_METRICS_ADDR"], env["PAYD_ADDR"] = freeAddr(t), addr
	p := startProc(t, env, addr)
	p.stop()
}
