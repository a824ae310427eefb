-- Taken right after the index lock: false while a write of the run that held the lock before
-- is still open (each holds :write_key shared, index_lock_held), which this run then refuses;
-- every later write of that run finds the lock no longer its own and stops.
SELECT CASE WHEN pg_try_advisory_lock(CAST(:write_key AS bigint))
            THEN pg_advisory_unlock(CAST(:write_key AS bigint))
            ELSE false END;
