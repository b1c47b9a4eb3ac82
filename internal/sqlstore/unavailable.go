package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err means the database cannot be used right
// now (unreachable, restarting, shutting down, out of connections, busy,
// or a SQLite file that cannot be written) rather than a fault of the
// request or of payd: nothing was applied, and the same request can
// succeed once the database is back. The API answers such errors 503 with
// Retry-After instead of 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 53: insufficient resources (too many
		// connections, disk full); 57P01–57P03: the server is shutting
		// down, crashed or starting up; 25006: a read-only transaction (a
		// standby, or a primary being demoted); 40001 and 40P01: the
		// transaction was rolled back (serialization, deadlock) and can be
		// run again.
		// A node still in recovery (a standby, one being promoted) refuses
		// what it cannot do there under other codes too ("cannot assign
		// TransactionIds during recovery", "cannot execute LISTEN during
		// recovery"): unavailable until the cluster has a primary.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "53") ||
			pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" ||
			pe.Code == "25006" || pe.Code == "40001" || pe.Code == "40P01" ||
			strings.Contains(pe.Message, "during recovery") || strings.Contains(pe.Message, "recovery is in progress")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "failed to acquire") || strings.Contains(s, "SQLITE_BUSY") ||
		strings.Contains(s, "database is locked") || strings.Contains(s, "too many clients")
}

// notPrimary reports whether err says the node cannot write: a read-only
// transaction (25006) on a standby, or a node in recovery.
func notPrimary(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "25006" || pe.Code == "57P03" || strings.Contains(pe.Message, "during recovery") ||
		strings.Contains(pe.Message, "recovery is in progress"))
}
