-- Cards on an acquirer's own page. A card session is the acquirer's
-- payment for a checkout: claimed first ('creating', under a short lease,
-- so that a reload or a double click never makes two), 'open' once the
-- acquirer gave its id and page, 'closed' once its outcome was applied
-- (or it timed out). At most one is creating or open per checkout.
CREATE TABLE card_sessions (
    id           TEXT PRIMARY KEY,
    checkout_id  TEXT NOT NULL REFERENCES checkouts(id),
    merchant_id  TEXT NOT NULL REFERENCES merchants(id),
    acquirer_id  TEXT UNIQUE,
    pay_url      TEXT,
    state        TEXT NOT NULL CHECK (state IN ('creating','open','closed')),
    lease_until  INTEGER,
    created_at   INTEGER NOT NULL,
    opened_at    INTEGER,
    polls        INTEGER NOT NULL DEFAULT 0,
    next_poll_at INTEGER,
    outcome      TEXT,
    closed_at    INTEGER
);
CREATE UNIQUE INDEX card_sessions_live ON card_sessions (checkout_id) WHERE state IN ('creating','open');
CREATE INDEX card_sessions_due ON card_sessions (next_poll_at) WHERE state = 'open';

-- Orders to a card acquirer go through the rails outbox. SQLite cannot
-- change a CHECK constraint: the table is rebuilt with the new kinds.
CREATE TABLE rails_orders_new (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('rtp.send','rtp.cancel','refund.return','card.refund','card.reverse')),
    merchant_id     TEXT NOT NULL REFERENCES merchants(id),
    object_id       TEXT NOT NULL,
    data            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending','delivered')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    last_error      TEXT
);
INSERT INTO rails_orders_new SELECT id, kind, merchant_id, object_id, data, state, attempts, next_attempt_at,
    lease_owner, lease_until, created_at, delivered_at, last_error FROM rails_orders;
DROP TABLE rails_orders;
ALTER TABLE rails_orders_new RENAME TO rails_orders;
CREATE INDEX rails_orders_due ON rails_orders (next_attempt_at) WHERE state = 'pending';
CREATE INDEX rails_orders_object ON rails_orders (object_id);
CREATE INDEX rails_orders_delivered ON rails_orders (delivered_at) WHERE state = 'delivered';
