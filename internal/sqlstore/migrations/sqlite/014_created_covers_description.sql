-- PostgreSQL's 014 makes its creation index carry the description. SQLite
-- searches descriptions through its own covering index of the lowered text
-- (011_list_indexes.sql) and the walk in rtp.go: nothing to change.
SELECT 1;
