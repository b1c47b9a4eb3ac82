-- The order in which rails orders were written is their rowid on SQLite
-- (sqlstore/rails.go): a later order of an object is claimed only when no
-- earlier one of it is pending.
CREATE INDEX rails_orders_object_seq ON rails_orders (object_id) WHERE state = 'pending';
