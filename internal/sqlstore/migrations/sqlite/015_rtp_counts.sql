-- Each merchant's number of RTPs, kept beside the rows for lists without a
-- filter (PostgreSQL's 015 says why). SQLite has one writer: one counter
-- row per merchant, moved by each inserted row.
CREATE TABLE rtp_counts (
    merchant_id TEXT NOT NULL,
    shard       INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, shard)
);
INSERT INTO rtp_counts (merchant_id, shard, n) SELECT merchant_id, 0, COUNT(*) FROM rtps GROUP BY merchant_id;
CREATE TRIGGER rtps_counted AFTER INSERT ON rtps BEGIN
    INSERT INTO rtp_counts (merchant_id, shard, n) VALUES (NEW.merchant_id, 0, 1)
        ON CONFLICT (merchant_id, shard) DO UPDATE SET n = n + 1;
END;
