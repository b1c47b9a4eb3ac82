package sqlstore

import (
	"context"
	"time"
)

// Serving instances. Each instance that serves a database keeps a row of
// the leases table named "instance:NAME", renewed every InstanceBeat and
// valid for InstanceTTL: the database knows who serves it, whatever the
// engine and the host. Operator commands that must not run beside a live
// instance (payd keys rotate) ask it; a killed instance's row runs out.

// InstanceBeat and InstanceTTL: how often a serving instance renews its
// row, and how long a row counts after its renewal.
const (
	InstanceBeat = 5 * time.Second
	InstanceTTL  = 3 * InstanceBeat
)

const instancePrefix = "instance:"

// Serving records that instance serves the database until now+InstanceTTL.
func (s *Store) Serving(ctx context.Context, instance string, now time.Time) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, `INSERT INTO leases (name, owner, until) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until`,
			instancePrefix+instance, instance, ms(now.Add(InstanceTTL)))
		return err
	})
}

// StoppedServing removes instance's row: it serves the database no more.
func (s *Store) StoppedServing(ctx context.Context, instance string) error {
	return s.inTx(ctx, func(t *tx) error {
		_, err := t.exec(ctx, "DELETE FROM leases WHERE name = ?", instancePrefix+instance)
		return err
	})
}

// ServingInstances are the instances whose row is valid at now.
func (s *Store) ServingInstances(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.query(ctx, "SELECT owner FROM leases WHERE name LIKE 'instance:%' AND until > ? ORDER BY owner", ms(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
