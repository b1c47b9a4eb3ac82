-- A status filter's total counted index entries: at 10M rows the
-- merchant's Expired RTPs alone were 1.6 s read from a cold disk. The
-- number of RTPs per merchant and stored status is now kept beside the
-- rows. Triggers append rows of +n and -n: one per merchant and status an
-- insert statement adds, two per RTP whose status changes; no row is ever
-- updated in place, so concurrent transactions and instances never wait
-- on each other for it or deadlock. A reader sums a merchant's rows of a
-- status; the expiry loop folds each merchant's rows of a status into one
-- (CompactRTPCounts), so a sum reads a handful of rows.
CREATE TABLE rtp_status_counts (
    merchant_id TEXT NOT NULL,
    status      TEXT NOT NULL,
    n           BIGINT NOT NULL
);
CREATE INDEX rtp_status_counts_merchant ON rtp_status_counts (merchant_id, status) INCLUDE (n);

-- The open RTPs of a merchant by status and deadline: a status as of now
-- is the stored one, except that an open RTP past its deadline is already
-- Expired; the few of them the expiry loop has not yet written are counted
-- from this index and moved from their stored status to Expired.
CREATE INDEX rtps_open_merchant ON rtps (merchant_id, status, expires_at) WHERE status IN ('Created','Active');

CREATE FUNCTION payd_rtps_status_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rtp_status_counts (merchant_id, status, n)
        SELECT merchant_id, status, COUNT(*) FROM added GROUP BY merchant_id, status;
    RETURN NULL;
END
$$;

-- A change of status appends its two rows. A row trigger, where inserts
-- take a statement trigger: it fires only for updates that change a
-- status (an acceptance, not the clearing of a sandbox decision), and
-- captures no transition tables.
CREATE FUNCTION payd_rtps_status_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rtp_status_counts (merchant_id, status, n) VALUES (OLD.merchant_id, OLD.status, -1), (NEW.merchant_id, NEW.status, 1);
    RETURN NULL;
END
$$;

-- The triggers first: creating them locks rtps against writes until this
-- migration commits, so the counts below miss no change and count none twice.
CREATE TRIGGER rtps_status_added AFTER INSERT ON rtps REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION payd_rtps_status_added();
CREATE TRIGGER rtps_status_moved AFTER UPDATE OF status ON rtps
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION payd_rtps_status_moved();
INSERT INTO rtp_status_counts (merchant_id, status, n) SELECT merchant_id, status, COUNT(*) FROM rtps GROUP BY merchant_id, status;
