-- The pending orders in the order a claim takes them (due time, then
-- writing), so a claim reads the first rows of this index and stops at its
-- batch instead of sorting every pending order (sqlstore/rails.go). On
-- SQLite the index on next_attempt_at already ends with the rowid.
DROP INDEX rails_orders_due;
CREATE INDEX rails_orders_due ON rails_orders (next_attempt_at, seq) WHERE state = 'pending';
