-- SQLite's 016 drops its sample statistics; PostgreSQL plans differently.
SELECT 1;
