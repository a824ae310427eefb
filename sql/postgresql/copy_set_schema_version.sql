UPDATE ragdb_schema SET version = CAST(:version AS integer);
