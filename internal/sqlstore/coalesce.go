package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"time"

	"payd"
	"payd/internal/sqlstore/postgres"

	"github.com/jackc/pgx/v5"
)

// Read coalescing for RTP reads by id, on PostgreSQL. A GET of one RTP
// costs PostgreSQL far more per statement (a round trip, a backend wake-up,
// an executor start) than per row, and on the two cores it shares with
// payd that overhead bounded rtp-get. Concurrent reads by id therefore
// queue here; each of a few readers takes whatever has queued (at most
// postgres.CoalesceMax) and reads it with one statement, WHERE id = ANY(...). A read
// alone is sent at once, so an idle server adds no delay; under load the
// reads that arrive while a statement runs share the next one.
//
// Under load the reads come in waves, one from each client that the last
// statement answered, and a wave reaches the queue spread out: taking only
// what had queued, the reader sent a few reads and then their stragglers
// in a statement of their own (32 clients: 5.4 reads a statement). A
// reader therefore waits for as many reads as its last statement served,
// for no longer than that statement took (batch.Wave). At 32 clients that
// raised the reads per statement from 5.4 to 8.1, cut PostgreSQL's CPU per
// read by a quarter and raised rtp-get by about a tenth; at 1 to 8 clients
// the rate did not move beyond the noise (BENCHMARKS.md).
//
// Every read in a statement was queued before the statement started, so a
// client sees any write that committed before it asked. The merchant check
// is made per read on the row returned.
//
// SQLite reads in process on several connections at once: coalescing them
// (through json_each) measured no gain there, so it reads directly.

// coalesceReaders is how many coalesced statements run at once: one per
// two cores. Fewer readers make larger batches; on the project's two cores
// one reader served rtp-get at 16.9k/s, two at 14.8k/s, four at 11.5k/s.
var coalesceReaders = max(1, runtime.GOMAXPROCS(0)/2)

const (
	coalesceTimeout = 10 * time.Second
	// coalesceWaveMax bounds how long a reader waits for the rest of a
	// wave (batch.Wave) whatever its last statement took; inserters do not
	// wait.
	coalesceWaveMax = 500 * time.Microsecond
)

type rtpRead struct {
	id   string
	done chan rtpReadResult
}

type rtpReadResult struct {
	r   *payd.RTP
	err error
}

// rtpReader reads RTPs by id, each statement for as many reads as have
// queued.
type rtpReader struct {
	postgres.Coalescer[rtpRead]
	s *Store
}

// read returns the RTP of id as stored, or payd.ErrNotFound.
func (c *rtpReader) read(ctx context.Context, id string) (*payd.RTP, error) {
	q := rtpRead{id: id, done: make(chan rtpReadResult, 1)}
	if err := c.Enqueue(ctx, q); err != nil {
		return nil, err
	}
	select {
	case res := <-q.done:
		return res.r, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.s.closed:
		return nil, postgres.ErrClosed
	}
}

func (c *rtpReader) serve(reads []rtpRead) {
	ids := make([]string, len(reads))
	for i, q := range reads {
		ids[i] = q.id
	}
	ctx, cancel := context.WithTimeout(context.Background(), coalesceTimeout)
	defer cancel()
	found := map[string]*payd.RTP{}
	c.Statements.Add(1)
	err := c.s.pgConn(ctx, func(pc *pgx.Conn) error {
		rows, err := pc.Query(ctx, "SELECT "+rtpCols+" FROM rtps WHERE id = ANY($1)", ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRTP(rows)
			if err != nil {
				return err
			}
			found[r.ID] = r
		}
		return rows.Err()
	})
	for _, q := range reads {
		res := rtpReadResult{err: err}
		if err == nil {
			if r, ok := found[q.id]; ok {
				cp := *r // two reads of one id get a copy each
				res.r = &cp
			} else {
				res.err = payd.ErrNotFound
			}
		}
		q.done <- res
	}
}

// Insert coalescing for RTP creation, on PostgreSQL: the same shape for
// writes. A create is one row, and PostgreSQL's cost per INSERT statement
// (a round trip, an executor start that re-reads the table's CHECK
// constraints, a commit that waits for the WAL flush) exceeded the row's
// own index maintenance at 1M rows. Concurrent creates therefore queue
// here; each of a few inserters takes whatever has queued and inserts it as
// one statement (INSERT ... SELECT FROM unnest of one array per column),
// which commits on its own. No create is acknowledged before that commit.
// A statement the database refuses inserts its rows again one by one, so
// that each create gets its own outcome and none is lost to a neighbour's
// error; the primary key makes a retried row that had in fact committed
// fail rather than exist twice. A statement that found the database away,
// or whose outcome is unknown, is not retried: each create gets its error.

// insertWriters is how many coalesced inserts run at once: one. Each
// statement costs PostgreSQL far more than its rows (the executor's start,
// the two statement triggers that keep the counts, a commit), and with
// one inserter every create that arrives while a statement runs goes in
// the next one. Two inserters, one gathering while the other committed,
// made smaller statements (7.3 RTPs each against 11.5 in production at 32
// connections, sampled with auto_explain) and measured 11-12% fewer creates
// a second in both modes: production 4,836-5,098/s against 5,425-5,592/s,
// the sandbox 8,693-9,029/s against 10,050-10,248/s (alternating, 200,000
// RTPs; four inserters were slower still).
const insertWriters = 1

type rtpInsert struct {
	r     *payd.RTP
	order *payd.RailsOrder // its outbox row (the rails' pain.013), when the rails take orders
	done  chan error
	// The row's values as the statement's arrays take them, one per
	// column of rtpCols (a text or an integer, nil for NULL), and the
	// order's content as JSON: made by the create's own goroutine before it
	// queues, so that the one inserter, whose statements follow each other,
	// only gathers them (prepare).
	texts []*string
	ints  []*int64
	data  string
}

// rtpInserter inserts RTPs, each statement for as many as have queued.
type rtpInserter struct {
	postgres.Coalescer[rtpInsert]
	s *Store
}

// insert stores r and returns once its row has committed (or failed). Once
// queued, a create is waited for even if ctx ends: its row may commit, and
// the caller must not report a failure for a row that exists. Should the
// store close first, the inserters stop: a create they no longer take is
// given up after coalesceTimeout.
func (c *rtpInserter) insert(ctx context.Context, r *payd.RTP, order *payd.RailsOrder) error {
	q := rtpInsert{r: r, order: order, done: make(chan error, 1)}
	if err := q.prepare(); err != nil {
		return err
	}
	if err := c.Enqueue(ctx, q); err != nil {
		return err
	}
	select {
	case err := <-q.done:
		return err
	case <-c.s.closed:
	}
	select {
	case err := <-q.done:
		return err
	case <-time.After(coalesceTimeout):
		return postgres.ErrClosed
	}
}

// rtpColTypes is the PostgreSQL type of each of rtpCols, in order.
var rtpColTypes = []string{"text", "text", "text", "bigint", "text", "text", "text", "text", "text", "text",
	"text", "text", "text", "text", "bigint", "bigint", "bigint", "bigint"}

// insertRTPs inserts rows given as one array per column, in rtpCols order.
var insertRTPs = func() string {
	var arrays []string
	for _, t := range rtpColTypes {
		arrays = append(arrays, "?::"+t+"[]")
	}
	return "INSERT INTO rtps (" + rtpCols + ") SELECT * FROM unnest(" + strings.Join(arrays, ", ") + ")"
}()

// insertRTPsWithOrders inserts the RTPs and their outbox rows in one
// statement (so in one transaction): the RTP's arrays, then the orders'
// id, kind, network, merchant_id, object_id, data, next_attempt_at,
// created_at, lease_owner, lease_until (NULL unless handed over:
// handover.go).
var insertRTPsWithOrders = "WITH r AS (" + insertRTPs + `) INSERT INTO rails_orders
	(id, kind, network, merchant_id, object_id, data, state, attempts, next_attempt_at, created_at, lease_owner, lease_until)
	SELECT id, kind, network, merchant_id, object_id, data, 'pending', 0, next_attempt_at, created_at, lease_owner, lease_until
	FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::bigint[])
	AS o(id, kind, network, merchant_id, object_id, data, next_attempt_at, created_at, lease_owner, lease_until)`

func (c *rtpInserter) serve(ins []rtpInsert) {
	ctx, cancel := context.WithTimeout(context.Background(), coalesceTimeout)
	defer cancel()
	c.Statements.Add(1)
	// One RTP with its order goes as the batch statement too: one round
	// trip in autocommit, where inserting the two rows in a transaction
	// (insertOne) takes two and its COMMIT a third.
	if len(ins) > 1 || ins[0].order != nil {
		args, q := rtpColumns(ins), insertRTPs
		var err error
		if ins[0].order != nil {
			var orders []any
			if orders, err = c.orderColumns(ins); err == nil {
				args, q = append(args, orders...), insertRTPsWithOrders
			}
		}
		if err == nil {
			err = c.s.write1(ctx, q, args...)
		}
		if err == nil {
			for _, q := range ins {
				q.done <- nil
			}
			return
		}
		if Unavailable(err) {
			// The database is away, or the statement's outcome is unknown
			// (its connection cut after it was sent): rows sent again
			// would fail the same way or, had it committed, meet their own
			// primary keys and report a committed create as failed. Every
			// create gets the error: 503, outcome unknown.
			for _, q := range ins {
				q.done <- err
			}
			return
		}
		c.Statements.Add(int64(len(ins)))
	}
	for _, q := range ins {
		q.done <- c.insertOne(ctx, q)
	}
}

// insertOne inserts one RTP, with its outbox row in the same transaction.
func (c *rtpInserter) insertOne(ctx context.Context, q rtpInsert) error {
	if q.order == nil {
		return c.s.write1(ctx, insertRTP, rtpArgs(q.r)...)
	}
	return c.s.inTx(ctx, func(t *tx) error {
		if _, err := t.exec(ctx, insertRTP, rtpArgs(q.r)...); err != nil {
			return err
		}
		return t.insertOrder(ctx, q.order)
	})
}

// orderColumns is the outbox rows of ins as one array per column (every
// insert of a batch has its order, or none has: the rails take orders or
// not), each with its lease when it is handed over (handover.go).
func (c *rtpInserter) orderColumns(ins []rtpInsert) ([]any, error) {
	ids, kinds, networks, merchants, objects, data := make([]string, len(ins)), make([]string, len(ins)), make([]string, len(ins)),
		make([]string, len(ins)), make([]string, len(ins)), make([]string, len(ins))
	next, created := make([]int64, len(ins)), make([]int64, len(ins))
	owners, untils := make([]*string, len(ins)), make([]*int64, len(ins))
	for i, q := range ins {
		o := q.order
		if o == nil {
			return nil, fmt.Errorf("coalesced insert: an RTP without its order")
		}
		ids[i], kinds[i], networks[i], merchants[i], objects[i], data[i] = o.ID, string(o.Kind), o.Network, o.MerchantID, o.ObjectID, q.data
		next[i], created[i] = ms(o.NextAttemptAt), ms(o.CreatedAt)
		if owner, until, ok := c.s.orderLease(o); ok {
			owners[i], untils[i] = &owner, &until
		}
	}
	return []any{ids, kinds, networks, merchants, objects, data, next, created, owners, untils}, nil
}

// prepare makes q's row values (texts, ints) and its order's JSON (data).
func (q *rtpInsert) prepare() error {
	q.texts, q.ints = make([]*string, len(rtpColTypes)), make([]*int64, len(rtpColTypes))
	for i, v := range rtpArgs(q.r) {
		switch v := v.(type) {
		case nil:
		case string:
			if rtpColTypes[i] != "text" {
				return fmt.Errorf("coalesced insert: column %d is %s, not text", i, rtpColTypes[i])
			}
			q.texts[i] = &v
		case int64:
			if rtpColTypes[i] != "bigint" {
				return fmt.Errorf("coalesced insert: column %d is %s, not an integer", i, rtpColTypes[i])
			}
			q.ints[i] = &v
		default:
			return fmt.Errorf("coalesced insert: column %d is %T", i, v)
		}
	}
	if q.order != nil {
		b, err := json.Marshal(q.order.Data)
		if err != nil {
			return err
		}
		q.data = string(b)
	}
	return nil
}

// rtpColumns is the rows of ins (each prepared) as one typed array per
// column, in rtpCols order; NULLs are nil elements.
func rtpColumns(ins []rtpInsert) []any {
	cols := make([]any, len(rtpColTypes))
	for i, t := range rtpColTypes {
		if t == "bigint" {
			col := make([]*int64, len(ins))
			for j := range ins {
				col[j] = ins[j].ints[i]
			}
			cols[i] = col
		} else {
			col := make([]*string, len(ins))
			for j := range ins {
				col[j] = ins[j].texts[i]
			}
			cols[i] = col
		}
	}
	return cols
}
