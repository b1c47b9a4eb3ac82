package sqlstore_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"payd/internal/sqlstore"
	"payd/internal/sqlstore/storetest"
)

// TestWALCheckpointedOffTheWriter: on SQLite a commit reaches the database
// file within moments although it leaves the log far below the writer's
// own checkpoint threshold: a connection of its own copies it there.
func TestWALCheckpointedOffTheWriter(t *testing.T) {
	s, u := storetest.SQLite(t)
	m, _ := newMerchant(t, s, 0)
	r := newRTP(t, s, m, "37369112221", storetest.Epoch)
	// The database file alone, without the log: what checkpoints copied.
	file, err := sql.Open("sqlite", sqlstore.SQLiteDSN(strings.TrimPrefix(u, "sqlite:"), "immutable=1"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	file.SetMaxOpenConns(1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		file.SetMaxIdleConns(0) // a fresh look at the file each time
		var n int
		err := file.QueryRow("SELECT COUNT(*) FROM rtps WHERE id = ?", r.ID).Scan(&n)
		if err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new RTP is not in the database file after 10 s (last look: %d rows, %v)", n, err)
		}
	}
}
