-- The console's operator sessions: the operator's token is checked once at
-- sign-in and never kept; the browser holds a session token whose hash is
-- here, ended at sign out or expiry.
CREATE TABLE operator_sessions (
    hash       TEXT PRIMARY KEY,                -- SHA-256 of the session token
    issued_at  BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX operator_sessions_expiry ON operator_sessions (expires_at);
