-- Dense search: chunks ranked by their nearest window vector (cosine, sqlite-vec KNN).
-- The priors scale the similarity (1 - distance): the score is 1 - (1 - distance) * priors.
--
-- Filters (:filtered = 1): :paths and :excludes, JSON arrays of GLOB patterns matched against
-- the stored path or any tail of it after a '/' (a file must match a :paths pattern if any,
-- and no :excludes one), and :langs, a JSON array of languages (files.kind); NULL means no
-- filter of that sort. Both legs apply them inside their search: the lexical leg keeps only allowed
-- chunks among its matches before ranking, the dense leg's KNN runs over the allowed chunks'
-- windows only (sqlite-vec's IN constraint on the chunk_id metadata column).
--
-- Priors (as in sql/search_hybrid.sql): a file whose lower-cased path GLOBs one of
-- :prior_paths gets :prior; when the question names projects (:named_roots), a file under none
-- of them gets :root_prior.
--
-- Identical files share one slot: of the chunks with the same file sha256 and the same range,
-- only the best ranked is kept, and `duplicates` lists the other files with those bytes (a
-- JSON array of paths, NULL when there are none).
-- Equal scores are ordered by path and position (then chunk id), never by chunk id alone: the
-- order of ties must not depend on the order files were indexed in (a resumed or incremental
-- run answers like a clean one).
WITH allowed_files AS MATERIALIZED (         -- the filters: --path, --exclude and --lang
    SELECT f.id FROM files AS f
    WHERE :filtered = 1
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
      AND (:excludes IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(:excludes) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
),
allowed AS MATERIALIZED (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM allowed_files)
),
knn AS MATERIALIZED (                  -- unfiltered, or only the allowed chunks' windows
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
      AND :filtered = 0
    UNION ALL
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
      AND chunk_id IN (SELECT id FROM allowed)
      AND :filtered = 1
),
dense AS (
    SELECT chunk_id, min(distance) AS distance
    FROM knn
    WHERE distance <= :max_distance     -- farther than this is noise, not a match
    GROUP BY chunk_id
),
scored AS (
    SELECT d.chunk_id, f.path, c.first_char,
           1.0 - (1.0 - d.distance)
           * CASE WHEN :prior_paths IS NOT NULL AND EXISTS (
                       SELECT 1 FROM json_each(:prior_paths) AS p
                       WHERE lower(f.path) GLOB p.value)
                  THEN :prior ELSE 1.0 END
           * CASE WHEN :named_roots IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM json_each(:named_roots) AS r
                       WHERE substr(f.path, 1, length(r.value) + 1) = r.value || '/')
                  THEN :root_prior ELSE 1.0 END AS distance,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id      -- rows written without a hash
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM dense AS d
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
ranked AS (                             -- one slot per distinct text range
    SELECT chunk_id, distance
    FROM (SELECT chunk_id, distance, path, first_char,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY distance, path, first_char, chunk_id) AS nth
          FROM scored)
    WHERE nth = 1
    ORDER BY distance, path, first_char, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       ranked.distance, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT json_group_array(d.path) FROM (
               SELECT d.path FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id
               ORDER BY d.path) AS d
           HAVING count(*) > 0) END AS duplicates
FROM ranked
JOIN chunks AS c ON c.id = ranked.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY ranked.distance, f.path, c.first_char, c.id;
