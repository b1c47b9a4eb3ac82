-- The rails: the boundary to the payment networks.
-- payments.network_ref is the network's reference of the credit (pacs.008
-- transaction id), which a refund's return of funds quotes.
ALTER TABLE payments ADD COLUMN network_ref TEXT;

-- The rails outbox: orders to the network (send or cancel an RTP, return a
-- refund's funds), written in the transaction of the change that causes
-- them and redelivered on a schedule until the network takes them. The id
-- is the message id the network deduplicates on.
CREATE TABLE rails_orders (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('rtp.send','rtp.cancel','refund.return')),
    merchant_id     TEXT NOT NULL REFERENCES merchants(id),
    object_id       TEXT NOT NULL,         -- rtpId or refundId
    data            TEXT NOT NULL,         -- the order's content (JSON), fixed at creation
    state           TEXT NOT NULL CHECK (state IN ('pending','delivered')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    last_error      TEXT
);
CREATE INDEX rails_orders_due ON rails_orders (next_attempt_at) WHERE state = 'pending';
CREATE INDEX rails_orders_object ON rails_orders (object_id);

-- The rails inbox: every inbound message applied (or refused), by its
-- message id, written in the transaction that applies it, so a repeat is
-- answered with the first outcome and applied once.
CREATE TABLE rails_inbox (
    msg_id      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    outcome     TEXT NOT NULL,             -- the answer given: e.g. ACSC, or RJCT:AM09
    received_at BIGINT NOT NULL
);
