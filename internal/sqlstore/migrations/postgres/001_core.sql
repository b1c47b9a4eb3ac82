-- Merchants, tokens, RTPs, payments, refunds and the callback outbox.
-- Times are Unix milliseconds (UTC); amounts are integer minor units.

CREATE TABLE merchants (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    client_id      TEXT NOT NULL UNIQUE,
    secret_hash    TEXT NOT NULL,          -- SHA-256 of clientSecret
    secret_version BIGINT NOT NULL DEFAULT 1,
    signature_key  TEXT NOT NULL,
    active         BIGINT NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    commission_bp  BIGINT NOT NULL DEFAULT 0 CHECK (commission_bp BETWEEN 0 AND 10000),
    iban           TEXT,
    mcc            TEXT NOT NULL DEFAULT 'NONE',
    created_at     BIGINT NOT NULL
);

CREATE TABLE tokens (
    hash           TEXT PRIMARY KEY,       -- SHA-256 of the access token
    merchant_id    TEXT NOT NULL REFERENCES merchants(id),
    secret_version BIGINT NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX tokens_expiry ON tokens (expires_at);

CREATE SEQUENCE payment_ref_seq;

CREATE TABLE rtps (
    id            TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants(id),
    alias         TEXT NOT NULL,
    amount        BIGINT NOT NULL CHECK (amount > 0),
    currency      TEXT NOT NULL,
    description   TEXT NOT NULL,
    order_id      TEXT,
    terminal_id   TEXT,
    callback_url  TEXT,
    redirect_url  TEXT,
    status        TEXT NOT NULL CHECK (status IN ('Created','Active','Accepted','Rejected','Expired','Cancelled','Refunded')),
    cancel_reason TEXT,
    pay_id        TEXT,
    auto_action   TEXT CHECK (auto_action IN ('accept','reject')),
    auto_at       BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX rtps_merchant_created ON rtps (merchant_id, created_at, id);
CREATE INDEX rtps_merchant_expires ON rtps (merchant_id, expires_at, id);
CREATE INDEX rtps_merchant_amount ON rtps (merchant_id, amount, created_at, id);
CREATE INDEX rtps_merchant_order ON rtps (merchant_id, order_id, created_at, id);
CREATE INDEX rtps_merchant_status ON rtps (merchant_id, status, created_at, id);
CREATE INDEX rtps_merchant_terminal ON rtps (merchant_id, terminal_id, created_at, id);
CREATE INDEX rtps_open_expiry ON rtps (expires_at) WHERE status IN ('Created','Active');
CREATE INDEX rtps_auto ON rtps (auto_at) WHERE auto_action IS NOT NULL;

CREATE TABLE payments (
    id                TEXT PRIMARY KEY,
    merchant_id       TEXT NOT NULL REFERENCES merchants(id),
    kind              TEXT NOT NULL CHECK (kind IN ('qr','rtp','card')),
    rtp_id            TEXT,
    qr_id             TEXT,
    extension_id      TEXT,
    checkout_id       TEXT,
    reference_number  TEXT NOT NULL UNIQUE,
    amount            BIGINT NOT NULL CHECK (amount > 0),
    commission        BIGINT NOT NULL,
    currency          TEXT NOT NULL,
    description       TEXT,
    order_id          TEXT,
    terminal_id       TEXT,
    sender_name       TEXT,
    sender_iban       TEXT,
    card_mask         TEXT,
    approval_code     TEXT,
    failed            BIGINT NOT NULL DEFAULT 0 CHECK (failed IN (0, 1)),
    requested_refund  BIGINT NOT NULL DEFAULT 0,
    refunded          BIGINT NOT NULL DEFAULT 0,
    first_refunded_at BIGINT,
    last_refunded_at  BIGINT,
    executed_at       BIGINT NOT NULL,
    callback_url      TEXT,                -- where this payment's callbacks (and its refunds') go
    CHECK (requested_refund >= 0 AND requested_refund <= amount),
    CHECK (refunded >= 0 AND refunded <= requested_refund)
);
CREATE UNIQUE INDEX payments_one_per_rtp ON payments (rtp_id) WHERE rtp_id IS NOT NULL;
CREATE INDEX payments_merchant_executed ON payments (merchant_id, executed_at, id);
CREATE INDEX payments_qr ON payments (qr_id) WHERE qr_id IS NOT NULL;

CREATE TABLE refunds (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants(id),
    payment_id   TEXT NOT NULL REFERENCES payments(id),
    amount       BIGINT NOT NULL CHECK (amount > 0),
    currency     TEXT NOT NULL,
    reason       TEXT NOT NULL,
    callback_url TEXT,
    status       TEXT NOT NULL CHECK (status IN ('Created','Requested','Accepted','Rejected','Manual')),
    full_refund  BIGINT NOT NULL CHECK (full_refund IN (0, 1)),
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    executed_at  BIGINT,
    process_at   BIGINT NOT NULL
);
CREATE INDEX refunds_payment ON refunds (payment_id);
CREATE INDEX refunds_due ON refunds (process_at) WHERE status IN ('Created','Requested');

CREATE TABLE callbacks (
    id              TEXT PRIMARY KEY,
    merchant_id     TEXT NOT NULL REFERENCES merchants(id),
    event           TEXT NOT NULL,
    subject_id      TEXT NOT NULL,
    url             TEXT NOT NULL,
    body            TEXT NOT NULL,
    ts              BIGINT NOT NULL,      -- X-Signature-Timestamp
    signature       TEXT NOT NULL,         -- X-Signature
    state           TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    schedule_start  BIGINT NOT NULL DEFAULT 0, -- attempts made before the last resend
    next_attempt_at BIGINT NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    last_status     BIGINT,
    last_error      TEXT
);
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE state = 'pending';
CREATE INDEX callbacks_state ON callbacks (state, created_at);

CREATE TABLE callback_attempts (
    callback_id TEXT NOT NULL REFERENCES callbacks(id),
    attempt     BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    status_code BIGINT,
    error       TEXT,
    instance    TEXT NOT NULL,
    PRIMARY KEY (callback_id, attempt)
);

CREATE TABLE leases (
    name  TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    until BIGINT NOT NULL
);
