-- The QR registry (payd/qrregistry.go): a registration is a rails order
-- (qr.register), and each QR's registrations are numbered (registry_rev)
-- so the registry keeps the newest.
ALTER TABLE rails_orders DROP CONSTRAINT rails_orders_kind_check;
ALTER TABLE rails_orders ADD CONSTRAINT rails_orders_kind_check
    CHECK (kind IN ('rtp.send','rtp.cancel','refund.return','card.refund','card.reverse','qr.register'));
ALTER TABLE qrs ADD COLUMN registry_rev BIGINT NOT NULL DEFAULT 0;
