package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheck is "payd healthcheck": GET /readyz on this machine's payd
// (PAYD_ADDR, or --url), exit 0 on 200. A container image FROM scratch
// has no curl; its HEALTHCHECK runs this.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var target string
	_, _, err := loadConfig("healthcheck", args, getenv, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&target, "url", "", "the readiness URL (default: http://PAYD_ADDR/readyz, 0.0.0.0 as 127.0.0.1)")
	})
	if err != nil {
		return err
	}
	if target == "" {
		addr := getenv("PAYD_ADDR")
		if addr == "" {
			addr = "127.0.0.1:8080"
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("PAYD_ADDR %q: %w", addr, err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		target = "http://" + net.JoinHostPort(host, port) + "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s answered %d", target, res.StatusCode)
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}
