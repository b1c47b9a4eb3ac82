-- A reset of the sandbox's test clock returns the merchant to real time
-- (payd moves its due work back by the offset), so there is no floor to
-- keep time from going backwards any more.
ALTER TABLE merchants DROP COLUMN clock_floor_ms;
