-- PostgreSQL's 013 drops the foreign keys to merchants, whose share locks
-- made concurrent writes of one merchant queue. SQLite's keys take no lock
-- (one writer) and stay: nothing to change.
SELECT 1;
