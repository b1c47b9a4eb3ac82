-- Lists at scale (1M–10M RTPs).
--
-- Counting a merchant's rows reads this index alone: one key per merchant,
-- deduplicated, a few MB where the composite indexes are hundreds.
CREATE INDEX rtps_merchant ON rtps (merchant_id);

-- Description substring search through trigrams, scoped to the merchant
-- in the same GIN index (btree_gin). Both extensions are trusted: the
-- database owner may create them. They go to a schema of their own (or
-- stay wherever an operator installed them), never into payd's schema, so
-- that dropping one payd schema cannot take another's indexes with it.
-- Where they cannot be created, the search still works, by scanning.
DO $$
DECLARE
    trgm text;
    bgin text;
BEGIN
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')
           OR NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
            CREATE SCHEMA IF NOT EXISTS payd_ext;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
            CREATE EXTENSION pg_trgm SCHEMA payd_ext;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
            CREATE EXTENSION btree_gin SCHEMA payd_ext;
        END IF;
    EXCEPTION WHEN insufficient_privilege OR undefined_file THEN
        RAISE WARNING 'payd: pg_trgm/btree_gin unavailable (%); description searches scan', SQLERRM;
        RETURN;
    END;
    SELECT n.nspname INTO trgm FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    SELECT n.nspname INTO bgin FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'btree_gin';
    EXECUTE format('CREATE INDEX rtps_merchant_description ON rtps USING gin (merchant_id %I.text_ops, lower(description) %I.gin_trgm_ops)', bgin, trgm);
    EXECUTE format('CREATE INDEX qrs_merchant_description ON qrs USING gin (merchant_id %I.text_ops, lower(description) %I.gin_trgm_ops)', bgin, trgm);
END
$$;

-- Index-only scans need the visibility map current: vacuum the list
-- tables after 1% of their rows changed, not the default 20%.
ALTER TABLE rtps SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE qrs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE payments SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE checkouts SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

-- Ties of an expiresAt sort go by creation: with it in the index a
-- descending sort only orders rows of equal deadline (incremental sort).
DROP INDEX rtps_merchant_expires;
CREATE INDEX rtps_merchant_expires ON rtps (merchant_id, expires_at, created_at, id);
