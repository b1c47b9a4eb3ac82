-- The sandbox's per-merchant test clock: the merchant's time is real time
-- plus clock_offset_ms, and never earlier than clock_floor_ms (a reset
-- does not move time backwards for what was already written).
ALTER TABLE merchants ADD COLUMN clock_offset_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE merchants ADD COLUMN clock_floor_ms BIGINT NOT NULL DEFAULT 0;
