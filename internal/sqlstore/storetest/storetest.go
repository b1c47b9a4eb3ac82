// Package storetest gives tests a fresh, migrated store on every engine the
// machine offers: SQLite always, PostgreSQL when PAYD_TEST_POSTGRES_URL is
// set (each test in a schema of its own, dropped afterwards). A PostgreSQL
// that is configured but unreachable fails the test instead of skipping it;
// .ci/run also checks that the PostgreSQL tests ran.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"payd/internal/sqlstore"
)

// Epoch is a fixed instant tests start their clocks at.
var Epoch = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// Engines runs f once per available engine, fast and plain, as subtests
// named after them ("sqlite", "sqlite-plain", "postgres",
// "postgres-plain"). The plain store (sqlstore.Options.Plain) runs without
// the machinery, so a behaviour some machinery changes fails on one of the
// two.
func Engines(t *testing.T, f func(t *testing.T, s *sqlstore.Store, url string)) {
	t.Helper()
	engines(t, true, f)
}

// FastEngines is Engines without the plain stores, for the tests of the
// machinery itself.
func FastEngines(t *testing.T, f func(t *testing.T, s *sqlstore.Store, url string)) {
	t.Helper()
	engines(t, false, f)
}

// Databases runs f once per available database, on the fast store's
// migrated database: for the tests that start payd itself on the URL,
// which runs the fast store.
func Databases(t *testing.T, f func(t *testing.T, s *sqlstore.Store, url string)) {
	t.Helper()
	engines(t, false, f)
}

func engines(t *testing.T, plain bool, f func(t *testing.T, s *sqlstore.Store, url string)) {
	t.Helper()
	run := func(name string, open func(testing.TB, sqlstore.Options) (*sqlstore.Store, string), o sqlstore.Options) {
		t.Run(name, func(t *testing.T) {
			s, u := open(t, o)
			f(t, s, u)
		})
	}
	run("sqlite", sqliteWith, sqlstore.Options{})
	if plain {
		run("sqlite-plain", sqliteWith, sqlstore.Options{Plain: true})
	}
	if os.Getenv("PAYD_TEST_POSTGRES_URL") != "" {
		run("postgres", postgresWith, sqlstore.Options{})
		if plain {
			run("postgres-plain", postgresWith, sqlstore.Options{Plain: true})
		}
	}
}

// SQLite opens a migrated store on a new file in t's temporary directory.
func SQLite(t testing.TB) (*sqlstore.Store, string) {
	t.Helper()
	return sqliteWith(t, sqlstore.Options{})
}

func sqliteWith(t testing.TB, o sqlstore.Options) (*sqlstore.Store, string) {
	t.Helper()
	u := "sqlite:" + filepath.Join(t.TempDir(), "payd.db")
	return open(t, u, o), u
}

// Postgres opens a migrated store in a new schema of the database named by
// PAYD_TEST_POSTGRES_URL, or skips when it is unset (fails under CI).
func Postgres(t testing.TB) (*sqlstore.Store, string) {
	t.Helper()
	return postgresWith(t, sqlstore.Options{})
}

func postgresWith(t testing.TB, o sqlstore.Options) (*sqlstore.Store, string) {
	t.Helper()
	base := os.Getenv("PAYD_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PAYD_TEST_POSTGRES_URL is not set")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("postgres at PAYD_TEST_POSTGRES_URL is unreachable: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	pu, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	q.Set("search_path", schema)
	pu.RawQuery = q.Encode()
	u := pu.String()
	return open(t, u, o), u
}

// SecretKey is the operator key of test stores (PAYD_SECRET_KEY).
var SecretKey = []byte("payd-test-secret-key-32-bytes-ok")

// SecretKeyB64 is SecretKey as PAYD_SECRET_KEY.
var SecretKeyB64 = base64.StdEncoding.EncodeToString(SecretKey)

func open(t testing.TB, u string, o sqlstore.Options) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenWith(u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.SetSecretKey(SecretKey); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(context.Background(), Epoch); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// Values reads every row of rows as its column values, bytes as strings,
// and closes rows: for tests that read tables or plans of any shape.
func Values(rows *sql.Rows) ([][]any, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}
