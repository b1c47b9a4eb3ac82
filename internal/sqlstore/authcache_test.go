package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestAuthCacheAcrossInstances: an instance answers repeated
// authentications from memory, and a secret rotated, a merchant
// deactivated, a clock advanced or a token revoked by another process (an
// operator command, another instance) is seen by the very next
// authentication, on both engines.
func TestAuthCacheAcrossInstances(t *testing.T) {
	storetest.FastEngines(t, func(t *testing.T, a *sqlstore.Store, u string) { testAuthCacheAcrossInstances(t, a, u) })
}

func testAuthCacheAcrossInstances(t *testing.T, a *sqlstore.Store, u string) {
	// a is the serving instance, listening; b another process with no
	// listener of its own.
	b, err := sqlstore.Open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.SetSecretKey(storetest.SecretKey); err != nil {
		t.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	listening := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.ListenAuth(lctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { listening <- struct{}{} })
	}()
	defer func() { stop(); <-done }()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	now := time.Now()
	m, cr := newMerchant(t, b, 100)
	tok, err := b.IssueToken(ctx, m, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	auth := func() (*payd.Merchant, error) { return a.Authenticate(ctx, tok, now) }
	if got, err := auth(); err != nil || got.ID != m.ID {
		t.Fatalf("authenticate: %v %v", got, err)
	}

	// Served from memory: with the token's row gone behind the triggers'
	// back, the cached authentication still answers.
	driver, dsn := "pgx", u
	off, on := []string{"ALTER TABLE tokens DISABLE TRIGGER tokens_auth_changed"}, []string{"ALTER TABLE tokens ENABLE TRIGGER tokens_auth_changed"}
	if a.Engine() == sqlstore.SQLite {
		driver, dsn = "sqlite", sqlstore.SQLiteDSN(strings.TrimPrefix(u, "sqlite:"), "_pragma=busy_timeout(10000)")
		off = []string{"DROP TRIGGER tokens_auth_deleted"}
		on = []string{"CREATE TRIGGER tokens_auth_deleted AFTER DELETE ON tokens BEGIN UPDATE auth_version SET v = v + 1; END"}
	}
	raw, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rawExec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := raw.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	rawExec(off...)
	rawExec("DELETE FROM tokens")
	time.Sleep(100 * time.Millisecond) // past any poll: the cache is still on
	if got, err := auth(); err != nil || got.ID != m.ID {
		t.Fatalf("a repeated authentication should come from memory: %v %v", got, err)
	}
	if a.Engine() == sqlstore.SQLite {
		// A poll that cannot confirm nothing changed turns the cache off
		// by itself: the deleted token is refused from the database.
		rawExec("ALTER TABLE auth_version RENAME TO auth_version_away")
		time.Sleep(100 * time.Millisecond)
		if _, err := auth(); !errors.Is(err, payd.ErrNotFound) {
			t.Fatalf("with the poll failing the cache should be off: %v", err)
		}
		rawExec("ALTER TABLE auth_version_away RENAME TO auth_version")
	}
	rawExec(on...)
	if tok, err = b.IssueToken(ctx, m, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, err := auth(); err != nil {
		t.Fatal(err)
	}

	// A rotation in the other process: refused at once.
	if _, err := b.RotateSecret(ctx, cr.ClientID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := auth(); !errors.Is(err, payd.ErrNotFound) {
		t.Fatalf("after a rotation elsewhere: %v, want not found", err)
	}

	// A deactivation in the other process: seen at once.
	m, _ = b.Merchant(ctx, m.ID)
	if tok, err = b.IssueToken(ctx, m, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if got, err := auth(); err != nil || !got.Active {
		t.Fatalf("authenticate: %v %v", got, err)
	}
	if err := b.SetMerchantActive(ctx, m.ID, false); err != nil {
		t.Fatal(err)
	}
	if got, err := auth(); err != nil || got.Active {
		t.Fatalf("after a deactivation elsewhere: %+v %v, want inactive", got, err)
	}

	// The test clock advanced elsewhere: the merchant's time moves at once.
	if _, err := b.AdvanceClock(ctx, m.ID, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := auth(); err != nil || got.ClockOffset != 24*time.Hour {
		t.Fatalf("after a clock advance elsewhere: %+v %v", got, err)
	}

	// A revoked token (the console's sign out) elsewhere.
	if err := b.RevokeToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := auth(); !errors.Is(err, payd.ErrNotFound) {
		t.Fatalf("after a revocation elsewhere: %v, want not found", err)
	}

	// An expired token is refused from memory too.
	if tok, err = b.IssueToken(ctx, m, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if _, err := auth(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, tok, now.Add(time.Minute)); !errors.Is(err, payd.ErrNotFound) {
		t.Fatalf("expired token: %v", err)
	}
}

// TestAuthCacheHungListener: when the notification connection hangs
// without closing (the network drops its packets), the listener hears no
// change; a token revoked meanwhile by another process is refused within
// the cache's bound (5 s), not for as long as the connection hangs.
func TestAuthCacheHungListener(t *testing.T) {
	if !storetest.HasPostgres() {
		t.Skip("PostgreSQL only (SQLite's poll has its own 30 ms bound, TestAuthCacheAcrossInstances)")
	}
	t.Run("postgres", func(t *testing.T) {
		a, u := storetest.Postgres(t)
		proxied, proxy := storetest.NewProxy(t, u)
		a.SetListenURL(proxied)
		b, err := sqlstore.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.SetSecretKey(storetest.SecretKey)
		lctx, stop := context.WithCancel(ctx)
		listening := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.ListenAuth(lctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { listening <- struct{}{} })
		}()
		defer func() { stop(); proxy.Restore(); <-done }()
		<-listening
		m, _ := newMerchant(t, b, 0)
		now := time.Now()
		tok, err := b.IssueToken(ctx, m, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		// Cached once a ping has come back.
		deadline := time.Now().Add(5 * time.Second)
		for a.AuthCached(tok, now) == nil {
			if time.Now().After(deadline) {
				t.Fatal("the token was never served from the cache")
			}
			a.Authenticate(ctx, tok, now)
			time.Sleep(50 * time.Millisecond)
		}
		proxy.Hang()
		if err := b.RevokeToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		for {
			_, err := a.Authenticate(ctx, tok, now)
			if errors.Is(err, payd.ErrNotFound) {
				t.Logf("refused %v after the revocation, the listener hung", time.Since(revoked).Round(10*time.Millisecond))
				break
			}
			if time.Since(revoked) > 6*time.Second {
				t.Fatalf("a revoked token still authenticates %v later with the listener hung (%v)", time.Since(revoked), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
