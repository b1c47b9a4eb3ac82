-- Retention (Store.Prune) reaches what it deletes through indexes. It read
-- every delivered callback and every row of callback_objects for each batch,
-- inside the one writer: about a second of stopped writes per 300,000
-- callbacks, at start and every hour.
--
-- callback_objects is found by callback now. Without a rowid its primary
-- key is the table itself, so the index by callback takes the place of the
-- rowid table's automatic index: a callback's object rows cost as many
-- B-tree inserts as before.
CREATE TABLE callback_objects_by_key (
    object_id   TEXT NOT NULL,                     -- any payId, rtpId, qrId, extensionId, checkoutId or refundId the callback is about
    callback_id TEXT NOT NULL REFERENCES callbacks(id),
    PRIMARY KEY (object_id, callback_id)
) WITHOUT ROWID;
INSERT INTO callback_objects_by_key (object_id, callback_id) SELECT object_id, callback_id FROM callback_objects;
DROP TABLE callback_objects;
ALTER TABLE callback_objects_by_key RENAME TO callback_objects;
CREATE INDEX callback_objects_callback ON callback_objects (callback_id);
CREATE INDEX rails_orders_delivered ON rails_orders (delivered_at) WHERE state = 'delivered';
CREATE INDEX rails_inbox_received ON rails_inbox (received_at);
