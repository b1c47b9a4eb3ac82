-- Retention (Store.Prune) reaches what it deletes through indexes: it read
-- every row of callback_objects for each batch, and the whole of
-- rails_orders and rails_inbox for each pass.
CREATE INDEX callback_objects_callback ON callback_objects (callback_id);
CREATE INDEX rails_orders_delivered ON rails_orders (delivered_at) WHERE state = 'delivered';
CREATE INDEX rails_inbox_received ON rails_inbox (received_at);
