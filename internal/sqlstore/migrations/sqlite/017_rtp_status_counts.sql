-- The number of RTPs per merchant and stored status, kept beside the rows
-- for status filters (PostgreSQL's 017 says why). SQLite has one writer:
-- one row per merchant and status, moved by each inserted or changed row.
CREATE TABLE rtp_status_counts (
    merchant_id TEXT NOT NULL,
    status      TEXT NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, status)
) WITHOUT ROWID;
INSERT INTO rtp_status_counts (merchant_id, status, n) SELECT merchant_id, status, COUNT(*) FROM rtps GROUP BY merchant_id, status;
CREATE TRIGGER rtps_status_added AFTER INSERT ON rtps BEGIN
    INSERT INTO rtp_status_counts (merchant_id, status, n) VALUES (NEW.merchant_id, NEW.status, 1)
        ON CONFLICT (merchant_id, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER rtps_status_moved AFTER UPDATE OF status ON rtps WHEN OLD.status <> NEW.status BEGIN
    UPDATE rtp_status_counts SET n = n - 1 WHERE merchant_id = OLD.merchant_id AND status = OLD.status;
    INSERT INTO rtp_status_counts (merchant_id, status, n) VALUES (NEW.merchant_id, NEW.status, 1)
        ON CONFLICT (merchant_id, status) DO UPDATE SET n = n + 1;
END;
-- The open RTPs of a merchant by status and deadline (PostgreSQL's 017).
CREATE INDEX rtps_open_merchant ON rtps (merchant_id, status, expires_at) WHERE status IN ('Created','Active');
