SELECT coalesce(max(version), 0) FROM ragdb_schema;
