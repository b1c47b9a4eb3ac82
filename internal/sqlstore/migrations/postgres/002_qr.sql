-- QR codes and hybrid QR extensions. A Hybrid QR's amount terms, texts,
-- URLs and expires_at mirror its current extension (extension_id).

CREATE TABLE qrs (
    id            TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants(id),
    type          TEXT NOT NULL CHECK (type IN ('Static','Dynamic','Hybrid')),
    amount_type   TEXT NOT NULL CHECK (amount_type IN ('Fixed','Controlled','Free')),
    currency      TEXT NOT NULL,
    terminal_id   TEXT,
    status        TEXT NOT NULL CHECK (status IN ('Active','Inactive','Expired','Paid','Cancelled')),
    extension_id  TEXT,
    amount        BIGINT,
    amount_min    BIGINT,
    amount_max    BIGINT,
    description   TEXT,
    order_id      TEXT,
    callback_url  TEXT,
    redirect_url  TEXT,
    expires_at    BIGINT,
    idle_from     BIGINT NOT NULL,        -- creation or the last payment
    checkout_id   TEXT,
    cancel_reason TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX qrs_merchant_created ON qrs (merchant_id, created_at, id);
CREATE INDEX qrs_merchant_order ON qrs (merchant_id, order_id, created_at, id);
CREATE INDEX qrs_due_expiry ON qrs (expires_at) WHERE status = 'Active';
CREATE INDEX qrs_due_idle ON qrs (idle_from) WHERE status IN ('Active','Expired') AND type <> 'Dynamic';

CREATE TABLE qr_extensions (
    id           TEXT PRIMARY KEY,
    qr_id        TEXT NOT NULL REFERENCES qrs(id),
    merchant_id  TEXT NOT NULL REFERENCES merchants(id),
    status       TEXT NOT NULL CHECK (status IN ('Active','Replaced','Cancelled','Expired')),
    amount       BIGINT,
    amount_min   BIGINT,
    amount_max   BIGINT,
    description  TEXT NOT NULL,
    order_id     TEXT,
    callback_url TEXT,
    redirect_url TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX qr_extensions_merchant_created ON qr_extensions (merchant_id, created_at, id);
CREATE INDEX qr_extensions_qr ON qr_extensions (qr_id);
CREATE INDEX qr_extensions_due ON qr_extensions (expires_at) WHERE status = 'Active';
