-- A description search lowers with payd_lower (Go's strings.ToLower,
-- registered with the driver by sqlstore), not SQLite's lower(), which
-- folds ASCII alone: "кофе" did not find "Кофе", nor "plată" "PLATĂ". The
-- description indexes hold the text the searches now compare, so a search
-- still reads the index alone. Writing these tables needs the function:
-- payd's own connections have it, the sqlite3 shell does not.
DROP INDEX IF EXISTS rtps_merchant_description;
CREATE INDEX rtps_merchant_description ON rtps (merchant_id, payd_lower(description), created_at, id);
DROP INDEX IF EXISTS qrs_merchant_description;
CREATE INDEX qrs_merchant_description ON qrs (merchant_id, payd_lower(description), created_at, id);
