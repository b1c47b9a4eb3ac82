-- The QR registry (payd/qrregistry.go): a registration is a rails order
-- (qr.register), and each QR's registrations are numbered (registry_rev)
-- so the registry keeps the newest. SQLite cannot change a CHECK
-- constraint: the outbox is rebuilt, its rows in the order they were
-- written (rowid), as in 026.
CREATE TABLE rails_orders_new (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('rtp.send','rtp.cancel','refund.return','card.refund','card.reverse','qr.register')),
    merchant_id     TEXT NOT NULL REFERENCES merchants(id),
    object_id       TEXT NOT NULL,
    data            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    last_error      TEXT
);
INSERT INTO rails_orders_new SELECT id, kind, merchant_id, object_id, data, state, attempts, next_attempt_at,
    lease_owner, lease_until, created_at, delivered_at, last_error FROM rails_orders ORDER BY rowid;
DROP TABLE rails_orders;
ALTER TABLE rails_orders_new RENAME TO rails_orders;
CREATE INDEX rails_orders_due ON rails_orders (next_attempt_at) WHERE state = 'pending';
CREATE INDEX rails_orders_object ON rails_orders (object_id);
CREATE INDEX rails_orders_delivered ON rails_orders (delivered_at) WHERE state = 'delivered';
CREATE INDEX rails_orders_object_seq ON rails_orders (object_id) WHERE state = 'pending';
CREATE INDEX rails_orders_failed ON rails_orders (created_at) WHERE state = 'failed';

ALTER TABLE qrs ADD COLUMN registry_rev INTEGER NOT NULL DEFAULT 0;
