-- At the start and the end of each write of an index run: whether the run's lock session
-- (:pid) still holds the index lock (it may have been ended: pg_terminate_backend, a restart,
-- a network cut). :write_key, held shared until the transaction ends, keeps a run that takes
-- the lock meanwhile from starting before this write has ended (index_lock_barrier).
SELECT pg_advisory_xact_lock_shared(CAST(:write_key AS bigint));
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
    WHERE locktype = 'advisory'
      AND granted
      AND pid = CAST(:pid AS integer)
      AND mode = 'ExclusiveLock'
      AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
      AND CAST(classid AS bigint) = CAST(:key AS bigint) >> 32
      AND CAST(objid AS bigint) = CAST(:key AS bigint) & 4294967295
      AND objsubid = 1);
