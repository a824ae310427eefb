SELECT hits FROM query_cache WHERE key = :key AND generation = :generation;
