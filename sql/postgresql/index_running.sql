-- Whether a session holds the index lock of this database now (pg_locks shows a bigint
-- advisory key as classid = its high 32 bits, objid = its low 32 bits, objsubid = 1).
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
    WHERE locktype = 'advisory'
      AND granted
      AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
      AND CAST(classid AS bigint) = CAST(:key AS bigint) >> 32
      AND CAST(objid AS bigint) = CAST(:key AS bigint) & 4294967295
      AND objsubid = 1);
