package sqlstore

import (
	"context"
	"time"

	"payd"
)

// The storage floor of the load generator (BENCHMARKS.md): what the
// database gives through the store's own transactions. Seeding the load
// generator's data is not the store's: package seed does it.

// PrepareFloor creates floor_rtps, a copy of the rtps table's shape with
// no indexes but its key, for the storage floor of the load generator.
func (s *Store) PrepareFloor(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS floor_rtps (
		id TEXT PRIMARY KEY, merchant_id TEXT NOT NULL, alias TEXT NOT NULL, amount BIGINT NOT NULL, currency TEXT NOT NULL,
		description TEXT NOT NULL, order_id TEXT, terminal_id TEXT, callback_url TEXT, redirect_url TEXT, status TEXT NOT NULL,
		cancel_reason TEXT, pay_id TEXT, auto_action TEXT, auto_at BIGINT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL)`)
	return err
}

// FloorInsert is the storage floor's unit of work: one single-row insert
// transaction of an RTP-shaped row, through the same connections payd uses,
// committed on its own (no group commit: the floor is the plain way).
func (s *Store) FloorInsert(ctx context.Context, now time.Time) error {
	return s.soloTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "INSERT INTO floor_rtps ("+rtpCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			payd.NewID(now), "floor", "37369112221", 5000, "MDL", "Floor row", "ord-1", nil, "http://127.0.0.1:1/cb", nil,
			"Active", nil, nil, nil, nil, ms(now), ms(now), ms(now.Add(time.Hour)))
		return err
	})
}

// DropFloor removes the floor table.
func (s *Store) DropFloor(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, "DROP TABLE IF EXISTS floor_rtps")
	return err
}
