-- rails_orders_object (every order by its object) is read by nothing: the
-- one statement that looks orders up by object, the claims' check for an
-- earlier pending order of the same object, reads rails_orders_object_seq
-- (025). It cost two index entries an RTP: one as its pain.013 is written,
-- one as the order is marked delivered. SQLite's schema is unchanged.
DROP INDEX IF EXISTS rails_orders_object;
