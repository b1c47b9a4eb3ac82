-- Idempotency keys (spec §8): the first 200 response to a key, per merchant, for 24 hours.
CREATE TABLE idempotency_keys (
    merchant_id  TEXT NOT NULL REFERENCES merchants(id),
    key          TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    body_hash    TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('running','done')),
    response     TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
