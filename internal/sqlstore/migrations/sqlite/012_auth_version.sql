-- The authentication cache on SQLite (authcache.go): every change that
-- could make a cached authentication wrong moves this one counter, in the
-- changing transaction: any update or delete of a merchant (secret
-- rotation, deactivation, the test clock, key re-sealing) and any deleted
-- token (revocation, sign out, expiry). A serving process polls it and
-- empties its cache when it moves, whichever process made the change.
CREATE TABLE auth_version (v INTEGER NOT NULL);
INSERT INTO auth_version (v) VALUES (0);
CREATE TRIGGER merchants_auth_updated AFTER UPDATE ON merchants
BEGIN UPDATE auth_version SET v = v + 1; END;
CREATE TRIGGER merchants_auth_deleted AFTER DELETE ON merchants
BEGIN UPDATE auth_version SET v = v + 1; END;
CREATE TRIGGER tokens_auth_deleted AFTER DELETE ON tokens
BEGIN UPDATE auth_version SET v = v + 1; END;
