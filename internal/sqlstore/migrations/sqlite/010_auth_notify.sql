-- PostgreSQL's 010 adds the triggers that notify instances of merchant and
-- token changes for their authentication cache. SQLite serves one process
-- and does not cache authentication (authcache.go): nothing to add.
SELECT 1;
