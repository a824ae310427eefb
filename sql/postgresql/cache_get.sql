SELECT hits FROM query_cache
WHERE key = CAST(:key AS text) AND generation = CAST(:generation AS bigint);
