INSERT INTO query_cache (key, generation, created_at, hits)
VALUES (:key, :generation, :created_at, :hits)
ON CONFLICT(key) DO UPDATE SET
    generation = excluded.generation, created_at = excluded.created_at, hits = excluded.hits;
