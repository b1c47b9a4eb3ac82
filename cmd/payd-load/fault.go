package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"payd/internal/sqlstore"
)

// The fault scenario: rtp-flow while the database is taken away for
// faultFor, from faultAfter into the run. payd must answer 503 (with
// Retry-After) and no other 5xx, /readyz must answer 503 while the
// database is away and 200 after, and every callback of an acknowledged
// acceptance must arrive once. How the database is taken away:
//
//   - PostgreSQL: stopped (fault-stop) and started again (fault-start), as
//     an operator's restart or a failover does;
//   - SQLite: its filesystem filled (disk full), with a reader holding a
//     snapshot so that the log cannot be reused and must grow. Making the
//     file unwritable does nothing to a process that has it open (and
//     nothing at all to root), so a full disk is the outage SQLite meets.
//     The filesystem must be small (bench/run.sh mounts a tmpfs for it).
var (
	faultFor   = 8 * time.Second
	faultAfter = 4 * time.Second
	faultStop  = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -n 1) main stop -m fast"
	faultStart = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -n 1) main start"
	dbURL      string
)

func (r *runner) fault(ctx context.Context) (*stats, error) {
	if r.d < faultAfter+faultFor+2*time.Second {
		return nil, fmt.Errorf("fault: -d must be at least %s (the outage starts after %s and lasts %s)", faultAfter+faultFor+2*time.Second, faultAfter, faultFor)
	}
	var probe readyProbe
	var outage outageLog
	st, err := r.rtpFlow(ctx, "fault", func(ctx context.Context) {
		stopProbe := probe.run(ctx, r.hc, r.target+"/readyz")
		defer stopProbe()
		select {
		case <-ctx.Done():
			return
		case <-time.After(faultAfter):
		}
		outage.from = time.Now()
		restore, err := takeDatabase(r.store.Engine())
		if err != nil {
			outage.err = err
			return
		}
		time.Sleep(faultFor)
		if err := restore(); err != nil {
			outage.err = err
		}
		outage.to = time.Now()
		time.Sleep(3 * time.Second) // payd finds the database again
	}, "")
	if err != nil {
		return nil, err
	}
	if outage.err != nil {
		return nil, fmt.Errorf("fault: %w", outage.err)
	}
	during, after := probe.summary(outage.from, outage.to)
	fmt.Printf("fault: the database was away %.1f s; /readyz during it: %v; after it: %v\n", outage.to.Sub(outage.from).Seconds(), during, after)
	if !contains(during, http.StatusServiceUnavailable) {
		st.Errors["readyz never 503 during the outage"]++
	}
	if last := probe.last(); last != http.StatusOK {
		st.Errors[fmt.Sprintf("readyz %d after the outage", last)]++
	}
	return st, nil
}

type outageLog struct {
	from, to time.Time
	err      error
}

// takeDatabase takes the database away and returns what brings it back.
func takeDatabase(engine sqlstore.Engine) (func() error, error) {
	if engine == sqlstore.Postgres {
		if err := sh(faultStop); err != nil {
			return nil, err
		}
		return func() error { return sh(faultStart) }, nil
	}
	path, _ := sqlstore.SQLitePath(dbURL)
	return fillDisk(path)
}

func sh(cmd string) error {
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", cmd, err, out)
	}
	return nil
}

// fillDisk pins a read snapshot of the SQLite database at path and fills
// its filesystem; the returned func frees both.
func fillDisk(path string) (func() error, error) {
	var fs syscall.Statfs_t
	dir := filepath.Dir(path)
	if err := syscall.Statfs(dir, &fs); err != nil {
		return nil, err
	}
	if free := fs.Bavail * uint64(fs.Bsize); free > 16<<30 {
		return nil, fmt.Errorf("the filesystem of %s has %d GiB free: fill a small one instead (mount a tmpfs for the database, as bench/run.sh does)", path, free>>30)
	}
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path, "mode=ro"))
	if err != nil {
		return nil, err
	}
	tx, err := db.Begin()
	if err == nil {
		var n int
		err = tx.QueryRow("SELECT COUNT(*) FROM merchants").Scan(&n) // the snapshot starts here
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	filler := filepath.Join(dir, ".payd-load-fill")
	f, err := os.Create(filler)
	if err != nil {
		tx.Rollback()
		db.Close()
		return nil, err
	}
	var off int64
	for chunk := int64(64 << 20); chunk >= 4096; {
		if err := syscall.Fallocate(int(f.Fd()), 0, off, chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				os.Remove(filler)
				tx.Rollback()
				db.Close()
				return nil, err
			}
			chunk /= 2
			continue
		}
		off += chunk
	}
	return func() error {
		f.Close()
		err := os.Remove(filler)
		tx.Rollback()
		db.Close()
		return err
	}, nil
}

// readyProbe polls /readyz.
type readyProbe struct {
	mu   sync.Mutex
	seen []probeAt
}

type probeAt struct {
	at     time.Time
	status int
}

func (p *readyProbe) run(ctx context.Context, hc *http.Client, url string) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s, _ := do(ctx, hc, "GET", url, "", nil)
			p.mu.Lock()
			p.seen = append(p.seen, probeAt{time.Now(), s})
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// summary is the distinct statuses seen during [from, to] and after to.
func (p *readyProbe) summary(from, to time.Time) (during, after []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.seen {
		switch {
		case s.at.After(from) && s.at.Before(to) && !contains(during, s.status):
			during = append(during, s.status)
		case s.at.After(to) && !contains(after, s.status):
			after = append(after, s.status)
		}
	}
	return during, after
}

func (p *readyProbe) last() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return 0
	}
	return p.seen[len(p.seen)-1].status
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
