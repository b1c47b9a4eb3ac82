-- A transaction's queued writes now travel with its COMMIT in one round
-- trip (pgtx.go), so a write that affected another number of rows than it
-- must can no longer be caught after the statement has run: the statement
-- itself fails, through this function, and the COMMIT behind it finds the
-- transaction aborted. The message names the write by its position.
CREATE FUNCTION payd_short_write(i integer) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'payd short write %', i USING ERRCODE = 'PD001';
END
$$;
