-- The callback log (GET /v2/callbacks): what each attempt got back, and
-- which objects a callback is about, so it can be found by any of their ids.
ALTER TABLE callback_attempts ADD COLUMN response_body TEXT;
ALTER TABLE callbacks ADD COLUMN object_id TEXT;   -- the rtpId, qrId, checkoutId or refundId it is about; NULL before this migration (subject_id then)
CREATE TABLE callback_objects (
    object_id   TEXT NOT NULL,                     -- any payId, rtpId, qrId, extensionId, checkoutId or refundId the callback is about
    callback_id TEXT NOT NULL REFERENCES callbacks(id),
    PRIMARY KEY (object_id, callback_id)
);
CREATE INDEX callbacks_merchant_created ON callbacks (merchant_id, created_at, id);
