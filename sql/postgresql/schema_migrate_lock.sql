-- Migrations run one process at a time (held until the migration's transaction ends).
SELECT pg_advisory_xact_lock(CAST(:key AS bigint));
