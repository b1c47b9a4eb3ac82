package sqlstore

import (
	"database/sql/driver"
	"fmt"
	"strings"

	"modernc.org/sqlite"
)

// Case-insensitive search folds every script payd's payers and merchants
// write in, not only ASCII. SQLite's own lower() and LIKE fold ASCII alone
// (a search for "кофе" missed "Кофе", one for "plată" missed "PLATĂ"), so
// on SQLite a searched column goes through payd_lower, Go's
// strings.ToLower, which the pattern is lowered with too. Indexes over it
// (migration 020) need it on every connection that writes the tables, so it
// is registered with the driver for the whole process; a tool that opens the
// file without it (the sqlite3 shell) can read the tables but not write the
// searched ones. PostgreSQL's lower() folds by the database's character
// type: C.UTF-8 or a language's UTF-8 locale fold these letters, a database
// created with LC_CTYPE=C would not (docs/operations.md).
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("payd_lower", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case string:
			return strings.ToLower(v), nil
		case []byte:
			return strings.ToLower(string(v)), nil
		default:
			return strings.ToLower(fmt.Sprint(v)), nil
		}
	})
}
