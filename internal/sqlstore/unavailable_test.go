package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"payd"
	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestUnavailableClassifiesRealErrors: the errors of a database out of
// reach (a read-only SQLite file, a PostgreSQL nobody listens for) are
// "unavailable" (503), a request's own faults and payd's are not (they
// stay 400s, 409s or a 500).
func TestUnavailableClassifiesRealErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, u := storetest.SQLite(t)
	path, _ := sqlstore.SQLitePath(u)
	ro, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, readonly := ro.ExecContext(ctx, "INSERT INTO counters (name, value) VALUES ('x', 1)")
	rw, _ := sql.Open("sqlite", sqlstore.SQLiteDSN(path, ""))
	defer rw.Close()
	_, constraint := rw.ExecContext(ctx, "INSERT INTO merchants (id) VALUES (NULL)")
	_, syntax := rw.ExecContext(ctx, "SELEC 1")
	pg, _ := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	defer pg.Close()
	refused := pg.PingContext(ctx)
	_, missing := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")+"?mode=rw")
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"read-only SQLite":       {readonly, true},
		"PostgreSQL refused":     {refused, true},
		"deadline":               {context.DeadlineExceeded, true},
		"constraint":             {constraint, false},
		"syntax":                 {syntax, false},
		"not found":              {payd.ErrNotFound, false},
		"conflict":               {payd.ErrConflict, false},
		"a plain error":          {errors.New("boom"), false},
		"sql.Open of a bad path": {missing, false},
	} {
		if c.err == nil && c.want {
			t.Errorf("%s: no error to classify", name)
			continue
		}
		if got := sqlstore.Unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): unavailable = %v, want %v", name, c.err, got, c.want)
		}
	}
}

// TestSQLitePathIsTheFile: a SQLite path holding '#', '%' or spaces opens
// exactly that file, made readable by its owner only, and nothing
// elsewhere (a '#' once cut the path: "pay#d.db" opened "pay").
func TestSQLitePathIsTheFile(t *testing.T) {
	for _, name := range []string{"pay#d.db", "pay%23d.db", "a b#c%d.db"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		s, err := sqlstore.Open("sqlite:" + path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Migrate(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
		s.Close()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, st.Mode().Perm())
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), name) {
				t.Errorf("%s: another file %q beside it", name, e.Name())
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "pay")); err == nil {
			t.Errorf("%s: a file named pay was made", name)
		}
	}
}
