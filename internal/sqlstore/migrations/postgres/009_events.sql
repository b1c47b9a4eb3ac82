-- Every state change of an RTP, QR, extension, checkout, payment or refund,
-- written in the transaction that made it (the console's timelines).
CREATE TABLE events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id TEXT NOT NULL,
    object      TEXT NOT NULL,     -- rtp, qr, extension, checkout, payment, refund
    object_id   TEXT NOT NULL,
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    at          BIGINT NOT NULL,   -- Unix ms, the merchant's time
    cause       TEXT NOT NULL      -- api, payer, bank, expiry, clock, operator
);
CREATE INDEX events_object ON events (object_id, id);
CREATE INDEX events_merchant ON events (merchant_id, id);
