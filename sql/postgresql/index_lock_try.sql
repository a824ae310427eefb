-- The index lock (one index run per database): a session-level advisory lock, released when
-- its session ends, even when the process holding it was killed.
SELECT pg_try_advisory_lock(CAST(:key AS bigint));
