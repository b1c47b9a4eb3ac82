-- Lists at scale (1M RTPs).
--
-- Counting a merchant's rows reads the narrowest index.
CREATE INDEX rtps_merchant ON rtps (merchant_id);
-- Description substring search: the lowered description beside the
-- merchant, so the search reads the index alone, never the table.
CREATE INDEX rtps_merchant_description ON rtps (merchant_id, lower(description), created_at, id);
CREATE INDEX qrs_merchant_description ON qrs (merchant_id, lower(description), created_at, id);
-- Ties of an expiresAt sort go by creation: with it in the index a
-- descending sort only orders rows of equal deadline.
DROP INDEX rtps_merchant_expires;
CREATE INDEX rtps_merchant_expires ON rtps (merchant_id, expires_at, created_at, id);
-- A status filter with an amount sort reads the index alone.
DROP INDEX rtps_merchant_status;
CREATE INDEX rtps_merchant_status ON rtps (merchant_id, status, created_at, id, expires_at, amount);
ANALYZE rtps;
ANALYZE qrs;
