// Package browsertest starts headless Chromium (Debian's package) for the
// tests that drive pages in a real browser.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Context starts a browser for t. Without Chromium the test skips, except
// under CI, where .ci/run installs it and it must run.
func Context(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 1200),
	)
	opts = append(opts, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil { // starts the browser; no timeout on this first call
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	return ctx
}
