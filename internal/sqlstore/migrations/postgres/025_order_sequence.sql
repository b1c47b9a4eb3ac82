-- The order in which rails orders were written, for the orders of one
-- object (an RTP and its cancel): a later one is claimed only when no
-- earlier one of its object is pending, whatever their times say (two
-- instances' clocks differ; one millisecond holds both).
ALTER TABLE rails_orders ADD COLUMN seq BIGSERIAL;
CREATE INDEX rails_orders_object_seq ON rails_orders (object_id, seq) WHERE state = 'pending';
