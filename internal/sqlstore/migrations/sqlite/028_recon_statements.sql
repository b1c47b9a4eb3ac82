-- Reconciliation with the statements banks send (docs/reconciliation.md):
-- every version's document kept by MsgId and page with the digest of its
-- content; each account's report with its balances, sums and the booking
-- dates it closes; bookings (entries) once however many documents carry
-- them, and the lines they book (a transaction each, or the entry), each
-- with what matching decided; the sums of the bank's that do not hold; the
-- operator's notes. The tables of the first reconciliation are carried
-- over, each booking as an entry of one line.
CREATE TABLE recon_docs (
    msg_id      TEXT NOT NULL,
    page        INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('camt.053','camt.054')),
    version     TEXT NOT NULL,
    digest      TEXT NOT NULL,               -- payd.Statement.Digest: the same MsgId with other content is refused
    last_page   INTEGER NOT NULL,
    source      TEXT NOT NULL,               -- rails (the connector) or file (payd reconcile import)
    created_at  INTEGER NOT NULL,            -- the bank's CreDtTm
    received_at INTEGER NOT NULL,
    PRIMARY KEY (msg_id, page)
);
INSERT INTO recon_docs SELECT msg_id, 1, kind, '001.08', '', 1, source, created_at, received_at FROM statements;

CREATE TABLE recon_reports (
    msg_id        TEXT NOT NULL,
    page          INTEGER NOT NULL,
    seq           INTEGER NOT NULL,          -- its place in the document
    report_id     TEXT NOT NULL,
    account       TEXT NOT NULL,
    end_of_day    INTEGER NOT NULL,          -- 1 for camt.053: closes from_date..to_date of its account
    from_date     TEXT NOT NULL,             -- YYYY-MM-DD, the bank's calendar
    to_date       TEXT NOT NULL,
    elec_seq      TEXT,
    legal_seq     TEXT,
    stmt_page     INTEGER,                   -- StmtPgntn
    last_page     INTEGER,
    entries       INTEGER NOT NULL,
    balances      TEXT,                      -- JSON: the report's balances
    summary       TEXT,                      -- JSON: its TxsSummry
    superseded_by TEXT,                      -- the MsgId of the correction that replaced it
    PRIMARY KEY (msg_id, page, seq)
);
INSERT INTO recon_reports SELECT msg_id, 1, 0, report_id, account, end_of_day, from_date, to_date, NULL, NULL, NULL, NULL, entries, NULL, NULL, NULL
    FROM statement_reports;
CREATE INDEX recon_reports_account ON recon_reports (account, to_date);

CREATE TABLE recon_entries (
    id           TEXT PRIMARY KEY,           -- payd.EntryKeys
    account      TEXT NOT NULL,
    booking_date TEXT NOT NULL,
    value_date   TEXT,
    direction    TEXT NOT NULL CHECK (direction IN ('credit','debit')),
    amount       INTEGER NOT NULL,
    currency     TEXT NOT NULL,
    reversal     INTEGER NOT NULL,
    entry_ref    TEXT,
    bank_ref     TEXT,
    code         TEXT NOT NULL,
    batch_count  INTEGER NOT NULL,
    tx_count     INTEGER NOT NULL,           -- the transactions its lines are (0: the entry itself); more detail replaces less
    first_msg    TEXT NOT NULL,
    received_at  INTEGER NOT NULL
);
INSERT INTO recon_entries SELECT id, account, booking_date, NULL, direction, amount, currency, 0, entry_ref, bank_ref, '', 0, 1, msg_id, received_at
    FROM statement_entries;
CREATE INDEX recon_entries_account ON recon_entries (account, booking_date);

-- Which documents carry a booking (a corrected statement that no longer
-- carries one supersedes it).
CREATE TABLE recon_entry_docs (
    entry_id TEXT NOT NULL,
    msg_id   TEXT NOT NULL,
    page     INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    PRIMARY KEY (entry_id, msg_id, page, seq)
);
INSERT INTO recon_entry_docs SELECT id, msg_id, 1, 0 FROM statement_entries;
CREATE INDEX recon_entry_docs_doc ON recon_entry_docs (msg_id, page, seq);

CREATE TABLE recon_units (
    entry_id      TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    account       TEXT NOT NULL,
    booking_date  TEXT NOT NULL,
    direction     TEXT NOT NULL,
    amount        INTEGER NOT NULL,
    no_amount     INTEGER NOT NULL,
    currency      TEXT NOT NULL,
    reversal      INTEGER NOT NULL,
    lump          INTEGER NOT NULL,
    code          TEXT NOT NULL,
    end_to_end_id TEXT,
    tx_id         TEXT,
    bank_ref      TEXT,
    refs          TEXT NOT NULL,             -- its references that may be payd's, space-separated
    outcome       TEXT NOT NULL,
    class         TEXT,
    basis         TEXT,
    review        INTEGER NOT NULL,
    item_kind     TEXT CHECK (item_kind IN ('payment','refund')),
    item_id       TEXT,
    payd_amount   INTEGER,
    note          TEXT,                      -- the operator's explanation
    noted_by      TEXT,
    noted_at      INTEGER,
    PRIMARY KEY (entry_id, seq)
);
INSERT INTO recon_units SELECT id, 0, account, booking_date, direction, amount, 0, currency, 0, 0, '', end_to_end_id, tx_id, bank_ref,
    TRIM(COALESCE(end_to_end_id, '') || ' ' || COALESCE(tx_id, '')), outcome, NULL, 'reference', 0, item_kind, item_id, payd_amount, NULL, NULL, NULL
    FROM statement_entries;
-- An item is booked by at most one line (others that find it are duplicates).
CREATE UNIQUE INDEX recon_units_booked ON recon_units (item_id) WHERE outcome IN ('matched','amount_mismatch');
CREATE INDEX recon_units_item ON recon_units (item_id);
CREATE INDEX recon_units_account ON recon_units (account, booking_date);
CREATE INDEX recon_units_open ON recon_units (outcome, booking_date) WHERE outcome <> 'matched';

-- The bank's sums that do not hold (payd.CheckSums), by report.
CREATE TABLE recon_sums (
    msg_id    TEXT NOT NULL,
    page      INTEGER NOT NULL,
    seq       INTEGER NOT NULL,
    n         INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    account   TEXT NOT NULL,
    date      TEXT NOT NULL,
    entry_id  TEXT,
    expected  INTEGER NOT NULL,
    actual    INTEGER NOT NULL,
    currency  TEXT NOT NULL,
    detail    TEXT NOT NULL,
    PRIMARY KEY (msg_id, page, seq, n)
);
CREATE INDEX recon_sums_account ON recon_sums (account, date);

-- Every operator action on the reconciliation: an explanation, a match
-- run again.
CREATE TABLE recon_audit (
    id       INTEGER PRIMARY KEY,
    at       INTEGER NOT NULL,
    actor    TEXT NOT NULL,
    action   TEXT NOT NULL,
    entry_id TEXT,
    seq      INTEGER,
    note     TEXT NOT NULL
);

DROP TABLE statement_entries;
DROP TABLE statement_reports;
DROP TABLE statements;
