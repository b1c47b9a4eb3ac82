-- A rails order the network refused for good (a card reversal the acquirer
-- will not make) is kept as 'failed', with the answer in last_error, for a
-- person; it is never sent again.
ALTER TABLE rails_orders DROP CONSTRAINT rails_orders_state_check;
ALTER TABLE rails_orders ADD CONSTRAINT rails_orders_state_check CHECK (state IN ('pending','delivered','failed'));
CREATE INDEX rails_orders_failed ON rails_orders (created_at) WHERE state = 'failed';

-- A card session's acquirer is asked from the payer's pages at most once
-- every few seconds (asked_at), and a start the acquirer refused is not
-- tried again before retry_at.
ALTER TABLE card_sessions ADD COLUMN asked_at BIGINT;
ALTER TABLE card_sessions ADD COLUMN retry_at BIGINT;
