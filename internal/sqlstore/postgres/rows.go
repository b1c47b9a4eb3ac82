package postgres

import (
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Result is an exec's result: the rows it affected.
type Result int64

func (r Result) RowsAffected() (int64, error) { return int64(r), nil }

func (Result) LastInsertId() (int64, error) {
	return 0, errors.New("LastInsertId is not supported by PostgreSQL")
}

// Rows are a query's rows and, when it was pipelined, the batch it came
// in, closed with them.
type Rows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r Rows) Close() error {
	r.Rows.Close()
	err := r.Rows.Err()
	if r.br != nil {
		if cerr := r.br.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Row is a query's first row: Scan reads it and closes the rest.
type Row struct {
	r   Rows
	err error
}

func (r Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.r.Next() {
		err := r.r.Close()
		if err == nil {
			err = sql.ErrNoRows
		}
		return err
	}
	err := r.r.Scan(dest...)
	if cerr := r.r.Close(); err == nil {
		err = cerr
	}
	return err
}
