-- Hybrid search: weighted Reciprocal Rank Fusion of BM25 (FTS5) and vector KNN (sqlite-vec).
--
--   score(chunk) = (:w_lex x margin / (:c + rank_lex) + :w_dense / (:c + rank_dense)
--                   + :w_bridge / (:c + rank_bridge) + :w_symbol / (:c + rank_symbol)) * priors
--
-- The lexical margin: ranks hide how far the first BM25 hit leads, so the first lexical hit's
-- term is multiplied by its BM25 over the second hit's, from 1 (a tie) to at most :margin_cap
-- (1: off; a tiny corpus can give a second hit a BM25 near 0): a chunk that holds the
-- question's terms far better than any other counts as such.
--
-- Each leg ranks its own :depth candidates (the dense leg from :knn_depth nearest windows) with
-- row_number(); the legs are joined on chunk id, and a chunk missing from one leg gets nothing
-- from it. Ranks, not ids or raw scores, are fused: BM25 and cosine distance are on unrelated
-- scales.
--
-- A leg with no vectors for a kind cannot outvote the other leg on it. A chunk of a file kind
-- outside :dense_kinds (a JSON array of the kinds this index embeds, docs by default; NULL:
-- unknown, the rule is off) can never be in the dense leg, so in place of the dense term it
-- cannot have it gets :w_absent / (:c + rank_lex), scaled by how much the question looks like
-- one about code (the code gate, 0 to 1): the product of
--   * the nearest window's distance, from 0 at :gate_near to 1 at :gate_far (docs that match
--     the question closely earn their dense lift), and
--   * the best code chunk's BM25 over the best doc chunk's, from 0 at :gate_low to 1 at
--     :gate_high (BM25 scores of one query are comparable; their ranks hide the margin).
-- A range whose ends are equal or reversed counts 1 throughout. :gate_override (0 to 1; NULL:
-- the rule) forces the gate for benchmarks that bound what a better one could do.
--
-- The bridge leg (plain words to code through the docs): :bridge_match (an FTS5 expression, or
-- NULL: no leg) holds the identifiers that the best doc passages of a first run of this query
-- name (ragdb.tokenize.named_identifiers). Its BM25 ranks chunks of the kinds outside
-- :dense_kinds only (the path prior applied before ranking), each adding
-- :w_bridge / (:c + rank_bridge).
--
-- The symbol leg (a question that names a definition): :symbol_names (a JSON array of the
-- names the question writes, ragdb.tokenize.written_names; NULL: no leg) are looked up in the
-- `symbols` table; a name defined more than :symbol_max times in the index (`forward`,
-- `__init__`) points at no one definition and is left out. The chunks holding the others'
-- definitions rank by how many of the names they define, then outside the prior paths
-- first, then by their lexical rank, each adding :w_symbol / (:c + rank_symbol): the
-- definition is a candidate even where BM25 and the vectors rank only its callers.
--
-- Filters (:filtered = 1): :paths and :excludes, JSON arrays of GLOB patterns matched against
-- the stored path or any tail of it after a '/' (a file must match a :paths pattern if any,
-- and no :excludes one), and :langs, a JSON array of languages (files.kind); NULL means no
-- filter of that sort. Both legs apply them inside their search: the lexical leg keeps only
-- allowed chunks among its matches before ranking, the dense leg's KNN runs over the allowed
-- chunks' windows only (sqlite-vec's IN constraint on the chunk_id metadata column).
--
-- Priors (multiply the fused score):
--   * implementation first: a file whose lower-cased path GLOBs one of :prior_paths (a JSON
--     array: tests, examples, changelogs; NULL: none) gets :prior;
--   * the repository named: when the question names projects (:named_roots, a JSON array of
--     stored path prefixes; NULL: none named), a file under none of them gets :root_prior.
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
bm25_hits AS MATERIALIZED (
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
      AND (:filtered = 0 OR +rowid IN (SELECT id FROM allowed))
    ORDER BY score
    LIMIT :depth
),
lexical AS MATERIALIZED (
    SELECT h.chunk_id, h.score,
           row_number() OVER (ORDER BY h.score, f.path, c.first_char, h.chunk_id) AS rank,
           CASE WHEN row_number() OVER (ORDER BY h.score, f.path, c.first_char, h.chunk_id) = 1   -- the margin
                THEN min(:margin_cap, max(1.0, coalesce(
                         h.score / nullif(lead(h.score) OVER (ORDER BY h.score, f.path, c.first_char, h.chunk_id), 0),
                         1.0)))
                ELSE 1.0 END AS margin,
           :dense_kinds IS NOT NULL
             AND f.kind NOT IN (SELECT value FROM json_each(:dense_kinds)) AS unembedded
    FROM bm25_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
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
dense AS MATERIALIZED (                 -- a chunk ranks by its best window
    SELECT b.chunk_id, b.distance,
           row_number() OVER (ORDER BY b.distance, f.path, c.first_char, b.chunk_id) AS rank
    FROM (SELECT chunk_id, min(distance) AS distance
          FROM knn
          WHERE distance <= :max_distance     -- farther than this is noise, not a match
          GROUP BY chunk_id) AS b
    JOIN chunks AS c ON c.id = b.chunk_id
    JOIN files AS f ON f.id = c.file_id
    ORDER BY rank
    LIMIT :depth
),
bridge_hits AS MATERIALIZED (          -- the bridge leg: code the best doc passages name
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE :bridge_match IS NOT NULL AND chunks_fts MATCH :bridge_match
      AND (:filtered = 0 OR +rowid IN (SELECT id FROM allowed))
    ORDER BY score
    LIMIT :depth
),
bridge AS MATERIALIZED (
    SELECT h.chunk_id,
           row_number() OVER (
               ORDER BY h.score
                        * CASE WHEN :prior_paths IS NOT NULL AND EXISTS (
                                    SELECT 1 FROM json_each(:prior_paths) AS p
                                    WHERE lower(f.path) GLOB p.value)
                               THEN :prior ELSE 1.0 END,
                        f.path, c.first_char, h.chunk_id) AS rank
    FROM bridge_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
    WHERE :dense_kinds IS NOT NULL
      AND f.kind NOT IN (SELECT value FROM json_each(:dense_kinds))
),
named AS MATERIALIZED (                -- the symbol leg: the names that point at a definition
    SELECT q.value AS name
    FROM json_each(:symbol_names) AS q
    WHERE (SELECT count(*) FROM symbols AS s WHERE s.name = q.value) BETWEEN 1 AND :symbol_max
),
symbol AS MATERIALIZED (
    SELECT d.chunk_id,
           row_number() OVER (
               ORDER BY d.names DESC,
                        :prior_paths IS NOT NULL AND EXISTS (
                            SELECT 1 FROM json_each(:prior_paths) AS p
                            WHERE lower(f.path) GLOB p.value),
                        coalesce(l.rank, :depth + 1), f.path, c.first_char, d.chunk_id) AS rank
    FROM (SELECT s.chunk_id, count(DISTINCT s.name) AS names
          FROM symbols AS s
          WHERE s.name IN (SELECT name FROM named)
            AND s.chunk_id IS NOT NULL
            AND (:filtered = 0 OR s.file_id IN (SELECT id FROM allowed_files))
          GROUP BY s.chunk_id) AS d
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
    LEFT JOIN lexical AS l ON l.chunk_id = d.chunk_id
    ORDER BY rank
    LIMIT :depth
),
gate AS (                               -- 0 to 1: how much the question looks like one on code
    SELECT CASE WHEN :gate_override IS NOT NULL THEN :gate_override      -- forced (benchmarks)
                ELSE
           CASE WHEN :gate_far <= :gate_near THEN 1.0
                ELSE max(0.0, min(1.0, (coalesce((SELECT min(distance) FROM dense),
                                                 :max_distance) - :gate_near)
                                       / (:gate_far - :gate_near))) END
           * CASE WHEN :gate_high <= :gate_low THEN 1.0
                  WHEN best.code IS NULL THEN 0.0
                  WHEN best.docs IS NULL THEN 1.0
                  ELSE max(0.0, min(1.0, (best.code / best.docs - :gate_low)
                                         / (:gate_high - :gate_low))) END END AS code
    FROM (SELECT min(CASE WHEN unembedded THEN score END) AS code,   -- bm25: lower is better
                 min(CASE WHEN NOT unembedded THEN score END) AS docs
          FROM lexical) AS best
),
joined AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id, symbol.chunk_id)
             AS chunk_id,
           coalesce(:w_lex / (:c + lexical.rank) * lexical.margin, 0.0)
             + CASE WHEN dense.rank IS NOT NULL THEN :w_dense / (:c + dense.rank)
                    WHEN lexical.unembedded
                    THEN :w_absent / (:c + lexical.rank) * (SELECT code FROM gate)
                    ELSE 0.0 END
             + coalesce(:w_bridge / (:c + bridge.rank), 0.0)
             + coalesce(:w_symbol / (:c + symbol.rank), 0.0) AS score
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    FULL OUTER JOIN bridge ON bridge.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id)
    FULL OUTER JOIN symbol
      ON symbol.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id)
),
scored AS (
    SELECT j.chunk_id, f.path, c.first_char,
           j.score
           * CASE WHEN :prior_paths IS NOT NULL AND EXISTS (
                       SELECT 1 FROM json_each(:prior_paths) AS p
                       WHERE lower(f.path) GLOB p.value)
                  THEN :prior ELSE 1.0 END
           * CASE WHEN :named_roots IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM json_each(:named_roots) AS r
                       WHERE substr(f.path, 1, length(r.value) + 1) = r.value || '/')
                  THEN :root_prior ELSE 1.0 END AS score,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id      -- rows written without a hash
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM joined AS j
    JOIN chunks AS c ON c.id = j.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
fused AS (                              -- one slot per distinct text range
    SELECT chunk_id, score
    FROM (SELECT chunk_id, score, path, first_char,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY score DESC, path, first_char, chunk_id) AS nth
          FROM scored)
    WHERE nth = 1
    ORDER BY score DESC, path, first_char, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       fused.score, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT json_group_array(d.path) FROM (
               SELECT d.path FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id
               ORDER BY d.path) AS d
           HAVING count(*) > 0) END AS duplicates
FROM fused
JOIN chunks AS c ON c.id = fused.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY fused.score DESC, f.path, c.first_char, c.id;
