-- Reconciliation: the bank's statements (camt.053 end of day, camt.054
-- intraday), taken once by their message id, and their booked entries,
-- each matched to the payment or refund it books (payd.MatchEntries).
CREATE TABLE statements (
    msg_id      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('camt.053','camt.054')),
    source      TEXT NOT NULL,                 -- rails (the connector) or file (payd reconcile import)
    created_at  INTEGER NOT NULL,                   -- the bank's CreDtTm
    received_at INTEGER NOT NULL
);

-- One account's part of a statement, and the booking dates it covers: a
-- camt.053 closes them (payd expects every payment of a closed date booked).
CREATE TABLE statement_reports (
    msg_id     TEXT NOT NULL REFERENCES statements(msg_id),
    report_id  TEXT NOT NULL,
    account    TEXT NOT NULL,
    end_of_day INTEGER NOT NULL,                    -- 1 for camt.053
    from_date  TEXT NOT NULL,                  -- YYYY-MM-DD
    to_date    TEXT NOT NULL,
    entries    INTEGER NOT NULL,
    PRIMARY KEY (msg_id, report_id, account)
);
CREATE INDEX statement_reports_dates ON statement_reports (to_date) WHERE end_of_day = 1;

-- A booking, once however many statements carry it (its id is the bank's
-- reference of it on the account), and what matching decided.
CREATE TABLE statement_entries (
    id            TEXT PRIMARY KEY,
    msg_id        TEXT NOT NULL,               -- the first statement that carried it
    account       TEXT NOT NULL,
    booking_date  TEXT NOT NULL,
    direction     TEXT NOT NULL CHECK (direction IN ('credit','debit')),
    amount        INTEGER NOT NULL,
    currency      TEXT NOT NULL,
    entry_ref     TEXT,
    bank_ref      TEXT,
    end_to_end_id TEXT,
    tx_id         TEXT,
    outcome       TEXT NOT NULL CHECK (outcome IN ('matched','missing_in_payd','amount_mismatch','duplicate')),
    item_kind     TEXT CHECK (item_kind IN ('payment','refund')),
    item_id       TEXT,
    payd_amount   INTEGER,
    received_at   INTEGER NOT NULL
);
CREATE INDEX statement_entries_date ON statement_entries (booking_date);
CREATE INDEX statement_entries_account ON statement_entries (account, booking_date);
-- An item is booked by at most one entry (others that find it are duplicates).
CREATE UNIQUE INDEX statement_entries_booked ON statement_entries (item_id) WHERE outcome IN ('matched','amount_mismatch');
CREATE INDEX statement_entries_open ON statement_entries (outcome, booking_date) WHERE outcome <> 'matched';
CREATE INDEX refunds_merchant_executed ON refunds (merchant_id, executed_at) WHERE status = 'Accepted';
CREATE INDEX payments_rails_executed ON payments (executed_at) WHERE network_ref IS NOT NULL;
CREATE INDEX payments_settlement ON payments (merchant_id, executed_at, currency, amount, commission) WHERE failed = 0;

-- The settlement report's kept sums of the days before yesterday, per
-- merchant, day (days since 1970-01-01, UTC) and currency; a row with no
-- currency marks a day summed (sqlstore/recon.go).
CREATE TABLE settlement_days (
    merchant_id TEXT NOT NULL REFERENCES merchants(id),
    day         INTEGER NOT NULL,
    currency    TEXT NOT NULL,
    payments    INTEGER NOT NULL,
    gross       INTEGER NOT NULL,
    commission  INTEGER NOT NULL,
    refunds     INTEGER NOT NULL,
    refunded    INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, day, currency)
);
