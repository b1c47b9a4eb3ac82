-- An Idempotency-Key's claim (idempotency.go): the token of the request
-- holding it, and how many of that request's write transactions committed
-- (each marks it in its own transaction), so that a commit cut off by a
-- fault is resolved by reading it, and a claim that applied nothing is
-- taken over safely.
ALTER TABLE idempotency_keys ADD COLUMN token TEXT;
ALTER TABLE idempotency_keys ADD COLUMN applied INTEGER NOT NULL DEFAULT 0;
