-- Every instance caches the merchant a token authenticates (authcache.go)
-- and drops it when these notify, in the transaction of the change: any
-- update or delete of a merchant (secret rotation, deactivation, the test
-- clock), any deleted token (revocation).
CREATE FUNCTION payd_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'merchants' THEN
        PERFORM pg_notify('payd_auth', OLD.id);
    ELSE
        PERFORM pg_notify('payd_auth', OLD.merchant_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER merchants_auth_changed AFTER UPDATE OR DELETE ON merchants
    FOR EACH ROW EXECUTE FUNCTION payd_auth_changed();
CREATE TRIGGER tokens_auth_changed AFTER DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION payd_auth_changed();
