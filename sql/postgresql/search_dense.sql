-- Dense search: chunks ranked by their nearest window (pgvector's exact cosine distance <=>,
-- as vec0's); the priors scale the similarity, as sql/search_dense.sql.
--
-- (pgcore's minimal port, for its own end-to-end runs: no --path/--lang/--exclude filters,
-- and the priors' GLOBs read as LIKE patterns. pgsearch owns the read side: take its file.)
WITH knn AS MATERIALIZED (
    SELECT chunk_id, embedding <=> CAST(:query_vector AS halfvec(384)) AS distance
    FROM chunk_vectors
    ORDER BY distance
    LIMIT :knn_depth
),
dense AS (
    SELECT chunk_id, min(distance) AS distance
    FROM knn
    WHERE distance <= :max_distance
    GROUP BY chunk_id
),
scored AS (
    SELECT d.chunk_id,
           1.0 - (1.0 - d.distance)
           * CASE WHEN CAST(:prior_paths AS jsonb) IS NOT NULL AND EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:prior_paths AS jsonb)) AS p
                       WHERE lower(f.path) LIKE replace(replace(p.value, '*', '%'), '?', '_'))
                  THEN :prior ELSE 1.0 END
           * CASE WHEN CAST(:named_roots AS jsonb) IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:named_roots AS jsonb)) AS r
                       WHERE substr(f.path, 1, length(r.value) + 1) = r.value || '/')
                  THEN :root_prior ELSE 1.0 END AS distance,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM dense AS d
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
ranked AS (
    SELECT chunk_id, distance
    FROM (SELECT chunk_id, distance,
                 row_number() OVER (PARTITION BY copy_of ORDER BY distance, chunk_id) AS nth
          FROM scored) AS s
    WHERE nth = 1
    ORDER BY distance, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       ranked.distance, c.text, f.kind AS language,
       (SELECT CAST(json_agg(d.path ORDER BY d.path) AS text)
        FROM files AS d
        WHERE f.sha256 <> '' AND d.sha256 = f.sha256 AND d.id <> f.id
        HAVING count(*) > 0) AS duplicates
FROM ranked
JOIN chunks AS c ON c.id = ranked.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY ranked.distance, c.id;
