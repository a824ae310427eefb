-- The schema version of a ragdb database (migrations/postgresql/NNN_*.sql applied so far).
SELECT max(version) FROM ragdb_schema;
