UPDATE ragdb_schema SET version = :version;
