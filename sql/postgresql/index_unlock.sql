-- The run is over: the lock is released at once (closing its session would release it too,
-- but only once the server has noticed).
SELECT pg_advisory_unlock(CAST(:key AS bigint));
