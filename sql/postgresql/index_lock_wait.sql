-- `--wait`: queue on the index lock until the run holding it ends.
SELECT pg_advisory_lock(CAST(:key AS bigint));
