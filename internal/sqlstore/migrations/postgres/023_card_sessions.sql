-- Cards on an acquirer's own page. A card session is the acquirer's
-- payment for a checkout: claimed first ('creating', under a short lease,
-- so that a reload or a double click never makes two), 'open' once the
-- acquirer gave its id and page, 'closed' once its outcome was applied
-- (or it timed out). At most one is creating or open per checkout.
CREATE TABLE card_sessions (
    id           TEXT PRIMARY KEY,                  -- payd's id
    checkout_id  TEXT NOT NULL REFERENCES checkouts(id),
    merchant_id  TEXT NOT NULL REFERENCES merchants(id),
    acquirer_id  TEXT UNIQUE,                       -- the acquirer's payment id, once open
    pay_url      TEXT,
    state        TEXT NOT NULL CHECK (state IN ('creating','open','closed')),
    lease_until  BIGINT,                            -- creating: until when the claim holds
    created_at   BIGINT NOT NULL,
    opened_at    BIGINT,
    polls        BIGINT NOT NULL DEFAULT 0,
    next_poll_at BIGINT,
    outcome      TEXT,                              -- approved, declined, timedout, reversed, abandoned
    closed_at    BIGINT
);
CREATE UNIQUE INDEX card_sessions_live ON card_sessions (checkout_id) WHERE state IN ('creating','open');
CREATE INDEX card_sessions_due ON card_sessions (next_poll_at) WHERE state = 'open';

-- Orders to a card acquirer go through the rails outbox: a card payment's
-- refund, and the reversal of a charge no checkout could take.
ALTER TABLE rails_orders DROP CONSTRAINT rails_orders_kind_check;
ALTER TABLE rails_orders ADD CONSTRAINT rails_orders_kind_check
    CHECK (kind IN ('rtp.send','rtp.cancel','refund.return','card.refund','card.reverse'));
