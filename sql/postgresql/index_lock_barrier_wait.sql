-- `--wait`: as index_lock_barrier, but waits for that open write to end.
SELECT pg_advisory_lock(CAST(:write_key AS bigint));
SELECT pg_advisory_unlock(CAST(:write_key AS bigint));
