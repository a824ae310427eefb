-- One writer at a time: the copy holds the index lock (a transaction-level advisory lock,
-- ragdb.copying.INDEX_LOCK_KEY) until it commits or rolls back; false: an index run or
-- another copy holds it.
SELECT pg_try_advisory_xact_lock(CAST(:key AS bigint));
