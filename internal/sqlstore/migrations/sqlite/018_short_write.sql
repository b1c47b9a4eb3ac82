-- PostgreSQL's 018 adds the function its pipelined writes fail through;
-- SQLite checks each write as it runs.
SELECT 1;
