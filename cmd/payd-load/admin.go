package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/seed"
)

// seedCmd fills a database with RTPs across merchants, in bulk, and writes
// the merchants' credentials for 'run -creds'.
func seedCmd(ctx context.Context, args []string) error {
	fs := flags("seed")
	dbURL := fs.String("database-url", "sqlite:data/payd.db", "the database to fill")
	rtps := fs.Int("rtps", 1_000_000, "how many RTPs")
	merchants := fs.Int("merchants", 100, "across how many merchants")
	out := fs.String("creds", "seed-merchants.json", "where to write the merchants' credentials")
	fs.Parse(args)
	store, err := openStore(*dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := store.Migrate(ctx, now); err != nil {
		return err
	}
	var ids []string
	var creds []*payd.Credentials
	for i := 0; i < *merchants; i++ {
		cr, err := store.CreateMerchant(ctx, sqlstore.MerchantOptions{Name: fmt.Sprintf("Seed %d", i)}, now)
		if err != nil {
			return err
		}
		ids = append(ids, cr.MerchantID)
		creds = append(creds, cr)
	}
	start := time.Now()
	if err := seed.RTPs(ctx, store.WriteDB(), store.Engine() == sqlstore.Postgres, ids, *rtps, now); err != nil {
		return err
	}
	b, _ := json.Marshal(creds)
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		return err
	}
	fmt.Printf("seeded %d RTPs across %d merchants in %v; credentials in %s\n", *rtps, *merchants, time.Since(start).Round(time.Millisecond), *out)
	return nil
}

// startupCmd measures how long payd takes, on an existing database, from
// exec to its first 200 on /readyz.
func startupCmd(ctx context.Context, args []string) error {
	fs := flags("startup")
	dbURL := fs.String("database-url", "sqlite:data/payd.db", "an existing database")
	bin := fs.String("payd", "./payd", "the payd binary")
	times := fs.Int("times", 5, "how many starts")
	fs.Parse(args)
	var ds []time.Duration
	for i := 0; i < *times; i++ {
		cmd := exec.CommandContext(ctx, *bin, "serve", "--addr", "127.0.0.1:18999")
		cmd.Env = append(os.Environ(), "PAYD_DATABASE_URL="+*dbURL)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		ready := false
		for time.Since(start) < 30*time.Second {
			res, err := http.Get("http://127.0.0.1:18999/readyz")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					ready = true
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		ds = append(ds, time.Since(start))
		cmd.Process.Kill()
		cmd.Wait()
		if !ready {
			return fmt.Errorf("payd did not become ready")
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("ready after: median %v, max %v (%d starts)\n", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
	return nil
}

// openStore opens the database payd serves, with payd's secret key
// (PAYD_SECRET_KEY or PAYD_SECRET_KEY_FILE, else the sandbox's key file
// beside a SQLite database), so the merchants it creates are sealed as
// payd's own are.
func openStore(dbURL string) (*sqlstore.Store, error) {
	key, _, err := sqlstore.LoadSecretKey(dbURL, os.Getenv("PAYD_SECRET_KEY"), os.Getenv("PAYD_SECRET_KEY_FILE"), true)
	if err != nil {
		return nil, err
	}
	store, err := sqlstore.Open(dbURL)
	if err != nil {
		return nil, err
	}
	if err := store.SetSecretKey(key); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}
