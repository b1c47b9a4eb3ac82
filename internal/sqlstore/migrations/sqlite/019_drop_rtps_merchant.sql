-- rtps_merchant (011) counted a merchant's RTPs from the narrowest index.
-- The kept counts (015, 017) answer those counts now, and no list, console
-- or expiry plan reads it (TestRTPListPlansUseIndexes prints them all),
-- while every RTP inserted wrote an entry to it, and on PostgreSQL every
-- change of status too (an update of an indexed column is never HOT).
-- The merchant's other indexes all lead with merchant_id.
DROP INDEX IF EXISTS rtps_merchant;
