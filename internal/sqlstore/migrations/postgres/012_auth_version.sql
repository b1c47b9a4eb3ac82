-- SQLite's 012 adds the counter its authentication cache polls; PostgreSQL
-- notifies instead (010_auth_notify.sql): nothing to add.
SELECT 1;
