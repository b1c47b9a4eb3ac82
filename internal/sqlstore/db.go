// Package sqlstore keeps payd's state in SQLite or PostgreSQL through
// database/sql. SQL is written once, by hand, in the subset both engines
// share; placeholders are written as '?' and rewritten for PostgreSQL in one
// place (dialect.rebind). The few real differences live in the store's
// dialect (dialect.go): the use cases ask it, and never compare engines.
//
// Each exported method is one use case in one transaction: load, apply the
// domain transition, save with a guarded UPDATE, insert the outbox rows.
//
// On SQLite all writes go through one connection (SQLite has one writer
// anyway; queueing in Go is cheaper than busy-waiting in SQLite) and reads
// use a separate pool, which WAL lets run beside the writer.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"golang.org/x/sync/singleflight"

	"payd"
	"payd/internal/sqlstore/postgres"
	"payd/internal/sqlstore/sqlite"
)

// Engine names a database engine.
type Engine string

const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// Store is payd's database.
type Store struct {
	engine  Engine
	d       dialect                 // what the engine's SQL differs in (dialect.go)
	w       *sql.DB                 // writes (and, on PostgreSQL, everything)
	r       *sql.DB                 // reads
	stmts   *sqlite.ReadStatements  // SQLite, not plain
	wstmts  *sqlite.WriteStatements // SQLite, not plain
	rtps    rtpReader               // PostgreSQL
	inserts rtpInserter             // PostgreSQL
	refs    refs                    // payment references drawn ahead
	// notifyCallbacks and notifyOrders are called after a transaction
	// that queued callbacks, or rails orders and refunds, commits, so the
	// background loops can start at once.
	notifyCallbacks, notifyOrders func()
	// handOrders and handCallbacks, when set, take new work due at once
	// to this instance's loops in memory (handover.go).
	handOrders    *hand[*payd.RailsOrder]
	handCallbacks *hand[*payd.Callback]
	// holdOrders, when set, says whether a new order's network is away
	// (HoldOrders).
	holdOrders func(*payd.RailsOrder) (time.Time, bool)
	// inactivity is PAYD_QR_INACTIVITY (0: the 30-day default).
	inactivity time.Duration
	// registryPSP is the PSP code of the QR registry's links (SetQRRegistry;
	// "": no registry, the sandbox).
	registryPSP string
	// statementsTaken counts the bank statements this process took.
	statementsTaken atomic.Int64
	// bankLoc is the bank's time zone (SetBankLocation).
	bankLoc atomic.Pointer[time.Location]
	// rails is the network RTPs, their cancels and QR registrations go
	// to (SetRails); "" when no network takes orders (the sandbox).
	rails string
	// sealer seals secrets payd must read back (seal.go).
	sealer *sealer
	// writesRefused: SQLite's last commit failed for want of the database
	// (disk full, read-only), and none has succeeded since (Ping).
	writesRefused atomic.Bool
	tagKey        []byte // derived from the operator key (Tag)
	// PostgreSQL: the URL (for the notification listener) and the
	// authenticated-merchant cache (authcache.go).
	url string
	// listenURL, when set, is where ListenAuth connects instead of url (a
	// test puts a proxy there to hang that one connection).
	listenURL string
	auth      *authCache
	// totals: the kept totals of description searches (totals.go).
	totals searchTotals
	// searchFlights: the readings of searches found in no kept total,
	// shared by identical searches meanwhile (totals.go).
	searchFlights singleflight.Group
	// SQLite: the RTP record cache (sqlite/rtpcache.go), and what stops the
	// writer connection's hook from feeding it.
	rtpc           *sqlite.RTPCache
	unfollowWrites func()
	stats          writerStats
	// SQLite, not plain: the group committer the write transactions
	// queue for (sqlite/group.go; the store's side in group.go).
	group  *sqlite.Committer[*tx]
	closed chan struct{}
	wg     sync.WaitGroup
	// plain: the store runs without its machinery (Options.Plain).
	plain bool
	// pipelined: transactions run pipelined on pgx's connection
	// (postgres.Tx, via pgtx.go).
	pipelined bool
	// oneWriter, the plain store on SQLite: write transactions run one at
	// a time, each to the end of what follows its commit or rollback (a
	// reference block's undo, payment.go), as the group committer runs
	// them; the writer connection alone would let the next one begin in
	// between.
	oneWriter bool
	writeMu   sync.Mutex
}

// Options are how a store runs.
type Options struct {
	// Plain runs every use case in a database/sql transaction of its
	// own, with none of the machinery: no group commit, pipelining,
	// queued writes, coalescing, statement or record caches, kept search
	// totals or auth cache. It is the oracle the tests hold the fast store
	// to (storetest.Engines runs each test on both): a behaviour that a
	// piece of machinery changes fails a test.
	Plain bool
}

// Open connects to the database named by url: "postgres://…" or
// "postgresql://…" for PostgreSQL; "sqlite:PATH", "file:PATH" or a plain
// path for SQLite (the file's directory is created).
func Open(url string) (*Store, error) { return OpenWith(url, Options{}) }

// OpenWith is Open with options.
func OpenWith(url string, o Options) (*Store, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(32)
		db.SetConnMaxIdleTime(5 * time.Minute)
		s := &Store{engine: Postgres, d: postgresDialect{binds: new(sync.Map)}, w: db, r: db, url: url, auth: &authCache{entries: map[string]authEntry{}, maxAge: authMaxAgePG},
			closed: make(chan struct{}), plain: o.Plain, pipelined: !o.Plain}
		if !o.Plain {
			s.rtps.s, s.inserts.s = s, s
			s.rtps.Init(coalesceReaders, coalesceWaveMax, s.closed, s.rtps.serve)
			s.inserts.Init(insertWriters, 0, s.closed, s.inserts.serve)
		}
		return s, nil
	}
	path, ok := SQLitePath(url)
	if !ok {
		return nil, errors.New("open sqlite: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
	}
	// A new database is made readable by its owner only; SQLite gives its
	// -wal and -shm files the database file's mode.
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// temp_store(MEMORY): group commit runs each use case in a savepoint,
	// whose statement journal SQLite otherwise writes to a temporary file
	// (a sixth of the CPU of the callback flow went to those writes).
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)"
	if o.Plain {
		return openPlainSQLite(path, pragmas)
	}
	rtpc := sqlite.NewRTPCache()
	follow, unfollow := sqlite.FollowWrites(rtpc)
	w, err := sql.Open("sqlite", SQLiteDSN(path, pragmas+"&_pragma=wal_autocheckpoint("+strconv.Itoa(sqlite.WALBackstop)+")&_txlock=immediate&"+follow))
	if err != nil {
		unfollow()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", SQLiteDSN(path, pragmas+"&_pragma=query_only(1)"))
	if err != nil {
		w.Close()
		unfollow()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	ck, err := sql.Open("sqlite", SQLiteDSN(path, pragmas))
	if err != nil {
		w.Close()
		r.Close()
		unfollow()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	ck.SetMaxOpenConns(1)
	s := &Store{engine: SQLite, d: sqliteDialect{}, w: w, r: r, closed: make(chan struct{}),
		auth: &authCache{entries: map[string]authEntry{}, maxAge: authMaxAge}, rtpc: rtpc, unfollowWrites: unfollow,
		stmts: new(sqlite.ReadStatements), wstmts: new(sqlite.WriteStatements)}
	s.wg.Add(2)
	s.group = sqlite.NewCommitter[*tx](groupTxs{s}, s.closed, func() { s.wstmts.Prepare(s.w) })
	go func() {
		defer s.wg.Done()
		// While it waits for use cases, it polls what the RTP cache needs
		// to know of other connections' commits, every RTPPoll.
		s.group.Run(s.pollRTPs, sqlite.RTPPoll)
	}()
	go func() { defer s.wg.Done(); sqlite.Checkpoint(ck, s.closed) }()
	return s, nil
}

// openPlainSQLite opens the plain store (Options.Plain) on SQLite: one
// writer connection, as SQLite has one writer anyway, and a pool of
// readers; SQLite checkpoints by itself.
func openPlainSQLite(path, pragmas string) (*Store, error) {
	w, err := sql.Open("sqlite", SQLiteDSN(path, pragmas+"&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", SQLiteDSN(path, pragmas+"&_pragma=query_only(1)"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	r.SetMaxOpenConns(8)
	return &Store{engine: SQLite, d: sqliteDialect{}, w: w, r: r, closed: make(chan struct{}), plain: true, oneWriter: true,
		auth: &authCache{entries: map[string]authEntry{}, maxAge: authMaxAge}}, nil
}

// Plain says whether the store runs without its machinery (Options.Plain).
func (s *Store) Plain() bool { return s.plain }

// Engine reports which engine the store runs on.
func (s *Store) Engine() Engine { return s.engine }

// WriteDB is the pool the store writes through, for tools that fill a
// database outside the use cases (package seed); payd itself never uses it.
func (s *Store) WriteDB() *sql.DB { return s.w }

// Close closes the connections.
func (s *Store) Close() error {
	if s.closed != nil {
		select {
		case <-s.closed:
		default:
			close(s.closed)
		}
		s.wg.Wait()
	}
	s.stmts.Close()
	s.wstmts.Close()
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	if s.unfollowWrites != nil {
		s.unfollowWrites()
		s.rtpc.Close()
	}
	return err
}

// SetNotify installs the functions called after a commit that queued
// work for the background loops: callbacks to deliver, and rails orders
// (or, in the sandbox, refunds) to process.
func (s *Store) SetNotify(callbacks, orders func()) {
	s.notifyCallbacks, s.notifyOrders = callbacks, orders
}

// queued wakes every loop; queuedCallbacks and queuedOrders only theirs.
func (s *Store) queued() {
	s.queuedCallbacks()
	s.queuedOrders()
}

func (s *Store) queuedCallbacks() {
	if s.notifyCallbacks != nil {
		s.notifyCallbacks()
	}
}

func (s *Store) queuedOrders() {
	if s.notifyOrders != nil {
		s.notifyOrders()
	}
}

// Ping checks that the database answers and is migrated.
//
// On SQLite the database can be read while it cannot be written (its
// disk full): after a commit was refused so, Ping also writes (a row of
// schema_migrations, unchanged) until a write succeeds again.
func (s *Store) Ping(ctx context.Context) error {
	var v int
	if err := s.r.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return err
	}
	if s.engine != SQLite || !s.writesRefused.Load() {
		return nil
	}
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "UPDATE schema_migrations SET version = version WHERE version = ?", v)
		return err
	})
}

// tx is a transaction whose queries are rebound for the engine: a
// database/sql transaction (SQLite, and the plain store on either engine),
// or a pipelined one on PostgreSQL (postgres.Tx).
type tx struct {
	s      *Store
	tx     *sql.Tx      // SQLite
	pg     *postgres.Tx // PostgreSQL
	shared bool         // SQLite: use cases share it (see unabandoned)
	// SQLite: the prepared statements bound to tx so far, by text. A
	// batch of use cases runs the same few statements many times, and
	// binding one anew (sql.Tx.StmtContext) each time was 2-3% of the
	// writer's time in rtp-flow.
	bound map[string]*sql.Stmt
	// drewRefs: SQLite, this transaction (or, when shared, this use
	// case) drew a block of payment references (payment.go).
	drewRefs bool
}

// unabandoned is the context a statement runs under. In a transaction use
// cases share (group commit), a use case runs to its end once started:
// SQLite rolls back the whole transaction when a write is interrupted, as
// the driver does when a statement's context ends, and so would undo the
// other use cases' writes.
func (t *tx) unabandoned(ctx context.Context) context.Context {
	if t.shared {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt is q prepared and bound to the SQLite transaction once the group
// committer has prepared it (sqlite.WriteStatements); nil runs q unprepared.
func (t *tx) stmt(ctx context.Context, q string) *sql.Stmt {
	if st, ok := t.bound[q]; ok {
		return st
	}
	st := t.s.wstmts.Get(q)
	if st == nil {
		return nil
	}
	st = t.tx.StmtContext(ctx, st)
	if t.bound == nil {
		t.bound = map[string]*sql.Stmt{}
	}
	t.bound[q] = st
	return st
}

func (t *tx) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if t.pg != nil {
		return t.pg.Exec(ctx, t.s.d.rebind(q), args)
	}
	ctx = t.unabandoned(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.s.d.rebind(q), args...)
}

func (t *tx) query(ctx context.Context, q string, args ...any) (rowSet, error) {
	if t.pg != nil {
		return t.pg.Query(ctx, t.s.d.rebind(q), args)
	}
	ctx = t.unabandoned(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.s.d.rebind(q), args...)
}

// queryRow's Scan returns the error of the writes sent before it, which
// also stays with the transaction, which then ends with it (postgres.Tx.End).
func (t *tx) queryRow(ctx context.Context, q string, args ...any) scanner {
	if t.pg != nil {
		return t.pg.QueryRow(ctx, t.s.d.rebind(q), args)
	}
	ctx = t.unabandoned(ctx)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.s.d.rebind(q), args...)
}

// write runs q (an INSERT, UPDATE or DELETE without RETURNING), or queues
// it on PostgreSQL to go with the next round trip (postgres/writes.go).
// With want >= 0 the write must affect exactly want rows, or the
// transaction ends with short.
func (t *tx) write(ctx context.Context, want int64, short error, q string, args ...any) error {
	if t.pg == nil {
		res, err := t.exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if want >= 0 {
			if n, _ := res.RowsAffected(); n != want {
				return short
			}
		}
		return nil
	}
	return t.pg.Write(q, args, want, short)
}

// inTx runs f in a write transaction and commits when it returns nil. On
// SQLite the transaction may share its commit with others (group commit).
// A use case of Once's Ledger records its inbound message first, in the
// same transaction (ledger.inTx).
func (s *Store) inTx(ctx context.Context, f func(*tx) error) error {
	run := s.soloTx
	if s.group != nil {
		run = s.group.Do
	}
	if c := claimOf(ctx); c != nil {
		// A request under an Idempotency-Key (idempotency.go).
		return s.claimedTx(ctx, c, func(g func(*tx) error) error { return run(ctx, g) }, f)
	}
	return run(ctx, f)
}

// write1 runs one statement as a use case of its own: on PostgreSQL in
// autocommit (one round trip instead of BEGIN, the statement and COMMIT;
// a single statement is atomic either way), on SQLite through group commit.
func (s *Store) write1(ctx context.Context, q string, args ...any) error {
	_, err := s.exec1(ctx, q, args...)
	return err
}

// exec1 is write1 with the statement's result (how many rows it changed).
func (s *Store) exec1(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if s.group != nil || claimOf(ctx) != nil { // a claimed request's writes mark its claim (idempotency.go)
		var res sql.Result
		err := s.inTx(ctx, func(t *tx) error {
			var err error
			res, err = t.exec(ctx, q, args...)
			return err
		})
		return res, err
	}
	return s.w.ExecContext(ctx, s.d.rebind(q), args...)
}

// soloTx runs f in a transaction of its own.
func (s *Store) soloTx(ctx context.Context, f func(*tx) error) error {
	if s.pipelined {
		return s.pgTxRun(ctx, f)
	}
	if s.oneWriter {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	sqlTx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &tx{s: s, tx: sqlTx}
	if err := f(t); err != nil {
		sqlTx.Rollback()
		t.undoDraw()
		return err
	}
	if err := s.commit(sqlTx); err != nil {
		t.undoDraw()
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.stmts.Get(ctx, s.r, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, s.d.rebind(q), args...)
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.stmts.Get(ctx, s.r, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, s.d.rebind(q), args...)
}

// Value codecs: times are Unix milliseconds, absent strings and times NULL.

func ms(t time.Time) int64 { return t.UnixMilli() }

func nullMS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return payd.UnixMilli(v.Int64)
}

// notFound maps sql.ErrNoRows to payd.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return payd.ErrNotFound
	}
	return err
}

// SQLiteDSN is the driver's name for the SQLite file at path with the
// query params: a URI filename, so the path's '%', '#' and '?' are
// escaped (unescaped, "pay#d.db" opened "pay", a file elsewhere, created
// with the default mode).
func SQLiteDSN(path, params string) string {
	esc := strings.NewReplacer("%", "%25", "#", "%23", "?", "%3F").Replace(path)
	if params == "" {
		return "file:" + esc
	}
	return "file:" + esc + "?" + params
}

// SQLitePath is the file of a SQLite database URL; false for PostgreSQL.
func SQLitePath(url string) (string, bool) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return "", false
	}
	path := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(url, "sqlite://"), "sqlite:"), "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path, path != ""
}
