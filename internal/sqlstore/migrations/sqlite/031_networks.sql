-- Which registered network (internal/network) each payment came through,
-- each outbound order goes to, and each card session is at: a refund goes
-- back through its payment's network, a card session is asked about at its
-- acquirer. Rows written before have none ('') and go by their kind.
ALTER TABLE payments ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE rails_orders ADD COLUMN network TEXT NOT NULL DEFAULT '';
ALTER TABLE card_sessions ADD COLUMN network TEXT NOT NULL DEFAULT '';
