-- Hosted checkout sessions. The order summary is kept as JSON (it is only
-- ever read whole); the fields lists filter on are columns.

CREATE TABLE checkouts (
    id               TEXT PRIMARY KEY,
    merchant_id      TEXT NOT NULL REFERENCES merchants(id),
    status           TEXT NOT NULL CHECK (status IN ('WaitingForInit','Initialized','PaymentMethodSelected',
                         'Completed','Expired','Abandoned','Cancelled','Failed')),
    amount           INTEGER NOT NULL CHECK (amount > 0),
    currency         TEXT NOT NULL,
    callback_url     TEXT,
    success_url      TEXT,
    fail_url         TEXT,
    language         TEXT NOT NULL,
    order_json       TEXT,
    order_id         TEXT,
    has_payer        INTEGER NOT NULL DEFAULT 0,
    payer_name       TEXT,
    payer_email      TEXT,
    payer_phone      TEXT,
    payer_ip         TEXT,
    payer_user_agent TEXT,
    method           TEXT,
    qr_id            TEXT,
    payment_id       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    failed_at        INTEGER,
    cancelled_at     INTEGER
);
CREATE INDEX checkouts_merchant_created ON checkouts (merchant_id, created_at, id);
CREATE INDEX checkouts_merchant_order ON checkouts (merchant_id, order_id);
CREATE INDEX checkouts_due ON checkouts (expires_at) WHERE status IN ('WaitingForInit','Initialized','PaymentMethodSelected');
