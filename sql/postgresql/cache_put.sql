INSERT INTO query_cache (key, generation, created_at, hits)
VALUES (CAST(:key AS text), CAST(:generation AS bigint), CAST(:created_at AS text),
        CAST(:hits AS text))
ON CONFLICT (key) DO UPDATE SET
    generation = excluded.generation, created_at = excluded.created_at, hits = excluded.hits;
