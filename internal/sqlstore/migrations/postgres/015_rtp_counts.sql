-- Every RTP list answers how many RTPs match, and a list with no filter
-- counted the merchant's entries of an index: 10,000 of them at 1M rows
-- (1 ms), 100,000 at 10M (the 10M run's lists missed 25 ms on that count
-- alone). The merchant's total is now kept beside the rows, in counters
-- the database moves as RTPs are inserted (RTPs are never deleted). Each
-- inserting statement adds its rows to the counter of one shard (by
-- backend), so concurrent creates of one merchant do not queue on one row;
-- the shards are summed when read, rows for one merchant in
-- merchant order so that two statements never lock them crosswise.
CREATE TABLE rtp_counts (
    merchant_id TEXT NOT NULL,
    shard       INTEGER NOT NULL,
    n           BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, shard)
);

CREATE FUNCTION payd_rtps_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rtp_counts (merchant_id, shard, n)
        SELECT merchant_id, pg_backend_pid() % 8, COUNT(*) FROM added GROUP BY merchant_id ORDER BY merchant_id
        ON CONFLICT (merchant_id, shard) DO UPDATE SET n = rtp_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

-- The trigger first: creating it locks rtps against inserts until this
-- migration commits, so the count below misses none and counts none twice.
CREATE TRIGGER rtps_counted AFTER INSERT ON rtps REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION payd_rtps_counted();
INSERT INTO rtp_counts (merchant_id, shard, n) SELECT merchant_id, 0, COUNT(*) FROM rtps GROUP BY merchant_id;
