-- No sample statistics. With rows in sqlite_stat4 the planner may weigh
-- a bound value against the samples, and SQLite then re-plans the
-- statement each time that value changes: the RTP lock of an acceptance
-- (rtps joined to merchants by id) was parsed and planned again on every
-- call, 14% of the single writer's time under rtp-flow and 46 µs against
-- 28 µs for the read alone. sqlite_stat1 stays, and with it every list
-- plan (TestRTPListPlansUseIndexes). ANALYZE sqlite_schema reloads this
-- connection's statistics; the others load them when they open.
DELETE FROM sqlite_stat4;
ANALYZE sqlite_schema;
