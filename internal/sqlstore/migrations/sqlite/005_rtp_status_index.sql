-- The status index also covers expires_at, so a status filter (which must
-- tell Active from lazily Expired) counts its matches from the index alone.
DROP INDEX rtps_merchant_status;
CREATE INDEX rtps_merchant_status ON rtps (merchant_id, status, created_at, id, expires_at);
