-- The learned fusion's features (issue 40): for the union of the candidates of every leg of
-- sql/search_hybrid.sql (BM25 top :depth, dense top :depth, the bridge leg, the symbol leg), one
-- row each with the hit's columns (as search_hybrid.sql returns them), what each leg says of it
-- and what the hand-set fusion makes of that, then `learned`: the weighted sum of the features,
-- each feature's weight the parameter named lw_ and its name (NULL weights count 0).
--
-- The candidate legs, the gate and the priors are search_hybrid.sql's, copied verbatim (the
-- WITH chain up to `joined`; tests/test_learned_fusion.py checks that `fused` here equals its
-- score for every chunk it returns, so a change to one that misses the other fails there).
--
-- Features (0 where a leg does not hold the chunk):
--   lex_rr, dense_rr, bridge_rr, symbol_rr   1 / (:c + the leg's rank)
--   lex_margin_rr   the first lexical hit's term times the lexical margin (search_hybrid.sql)
--   lex_ratio       its BM25 over the leg's best (1: the best; BM25 is negative, lower better)
--   dense_close     :max_distance minus its nearest window's distance (0 when not in the leg)
--   dense_gap       the best window's distance in the leg minus its own, clipped to -0.3
--                   (-0.3 when not in the leg)
--   code            1 for a kind the index does not embed (code, by default)
--   code_gate       code x the code gate (0 to 1; search_hybrid.sql)
--   absent_rr       code x the gate x lex_rr: the hand-set lift for code, w_absent's term
--   code_plain      code for a question in plain words (:plain 1: no identifier, path, flag)
--   code_near       code x the nearest window's distance (:max_distance when none): the
--                   gate's first input, for the learner to weigh itself
--   code_lead       code x the best code chunk's BM25 over the best doc chunk's, at most 3
--                   (3 with no doc chunk, 0 with no code chunk): the gate's second input
--   prior_path      1 for a file under :prior_paths (tests, examples, changelogs)
--   other_root      1 for a file outside the projects the question names (:named_roots)
--   definition      1 for a chunk of kind class or function
--   log_chars       ln(1 + the chunk's characters) / 10
--   symbol_names    how many names the question writes the chunk defines (the symbol leg)
-- `fused` is the hand-set score of search_hybrid.sql (priors included), for comparison.
-- Rows: one per distinct text range (search_hybrid.sql's `copy_of`, the best fused kept),
-- ordered by `learned` when :learned is 1, else by `fused`; at most :k.
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
    SELECT CASE WHEN :gate_far <= :gate_near THEN 1.0
                ELSE max(0.0, min(1.0, (coalesce((SELECT min(distance) FROM dense),
                                                 :max_distance) - :gate_near)
                                       / (:gate_far - :gate_near))) END
           * CASE WHEN :gate_high <= :gate_low THEN 1.0
                  WHEN best.code IS NULL THEN 0.0
                  WHEN best.docs IS NULL THEN 1.0
                  ELSE max(0.0, min(1.0, (best.code / best.docs - :gate_low)
                                         / (:gate_high - :gate_low))) END AS code
    FROM (SELECT min(CASE WHEN unembedded THEN score END) AS code,   -- bm25: lower is better
                 min(CASE WHEN NOT unembedded THEN score END) AS docs
          FROM lexical) AS best
),
lead AS (                               -- the code gate's inputs, unthresholded
    SELECT coalesce((SELECT min(distance) FROM dense), :max_distance) AS nearest,
           CASE WHEN best.code IS NULL THEN 0.0
                WHEN best.docs IS NULL THEN 3.0
                ELSE min(3.0, best.code / best.docs) END AS code_lead
    FROM (SELECT min(CASE WHEN unembedded THEN score END) AS code,
                 min(CASE WHEN NOT unembedded THEN score END) AS docs
          FROM lexical) AS best
),
candidates AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id, symbol.chunk_id)
             AS chunk_id,
           lexical.rank AS lex_rank, lexical.score AS bm25, lexical.margin,
           lexical.unembedded, dense.rank AS dense_rank, dense.distance,
           bridge.rank AS bridge_rank, symbol.rank AS symbol_rank
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    FULL OUTER JOIN bridge ON bridge.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id)
    FULL OUTER JOIN symbol
      ON symbol.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id)
),
described AS (
    SELECT k.chunk_id, f.path, c.first_char,
           coalesce(1.0 / (:c + k.lex_rank), 0.0) AS lex_rr,
           coalesce(1.0 / (:c + k.lex_rank) * k.margin, 0.0) AS lex_margin_rr,
           coalesce(k.bm25 / nullif((SELECT min(score) FROM lexical), 0), 0.0) AS lex_ratio,
           coalesce(1.0 / (:c + k.dense_rank), 0.0) AS dense_rr,
           coalesce(:max_distance - k.distance, 0.0) AS dense_close,
           max(-0.3, coalesce((SELECT min(distance) FROM dense) - k.distance, -0.3)) AS dense_gap,
           coalesce(1.0 / (:c + k.bridge_rank), 0.0) AS bridge_rr,
           coalesce(1.0 / (:c + k.symbol_rank), 0.0) AS symbol_rr,
           (:dense_kinds IS NOT NULL
            AND f.kind NOT IN (SELECT value FROM json_each(:dense_kinds))) AS code,
           (SELECT code FROM gate) AS gate,
           k.lex_rank, k.margin, k.dense_rank, k.unembedded,
           CASE WHEN :prior_paths IS NOT NULL AND EXISTS (
                     SELECT 1 FROM json_each(:prior_paths) AS p
                     WHERE lower(f.path) GLOB p.value) THEN 1 ELSE 0 END AS prior_path,
           CASE WHEN :named_roots IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM json_each(:named_roots) AS r
                     WHERE substr(f.path, 1, length(r.value) + 1) = r.value || '/')
                THEN 1 ELSE 0 END AS other_root,
           CASE WHEN c.kind IN ('class', 'function') THEN 1 ELSE 0 END AS definition,
           ln(1.0 + length(c.text)) / 10.0 AS log_chars,
           coalesce((SELECT count(DISTINCT s.name) FROM symbols AS s
                     WHERE s.chunk_id = k.chunk_id
                       AND s.name IN (SELECT name FROM named)), 0) AS symbol_names,
           k.bridge_rank, k.symbol_rank,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM candidates AS k
    JOIN chunks AS c ON c.id = k.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
featured AS (
    SELECT d.*,
           d.code * d.gate AS code_gate,
           d.code * d.gate * d.lex_rr AS absent_rr,
           d.code * :plain AS code_plain,
           d.code * (SELECT nearest FROM lead) AS code_near,
           d.code * (SELECT code_lead FROM lead) AS code_lead,
           (coalesce(:w_lex * d.lex_margin_rr, 0.0)                  -- search_hybrid.sql's score
            + CASE WHEN d.dense_rank IS NOT NULL THEN :w_dense * d.dense_rr
                   WHEN d.unembedded THEN :w_absent * d.lex_rr * d.gate
                   ELSE 0.0 END
            + coalesce(:w_bridge * d.bridge_rr, 0.0)
            + coalesce(:w_symbol * d.symbol_rr, 0.0))
           * CASE WHEN d.prior_path = 1 THEN :prior ELSE 1.0 END
           * CASE WHEN d.other_root = 1 THEN :root_prior ELSE 1.0 END AS fused
    FROM described AS d
),
scored AS (
    SELECT f.*,
           coalesce(:lw_lex_rr, 0) * f.lex_rr + coalesce(:lw_lex_margin_rr, 0) * f.lex_margin_rr
           + coalesce(:lw_lex_ratio, 0) * f.lex_ratio + coalesce(:lw_dense_rr, 0) * f.dense_rr
           + coalesce(:lw_dense_close, 0) * f.dense_close
           + coalesce(:lw_dense_gap, 0) * f.dense_gap
           + coalesce(:lw_bridge_rr, 0) * f.bridge_rr + coalesce(:lw_symbol_rr, 0) * f.symbol_rr
           + coalesce(:lw_code, 0) * f.code + coalesce(:lw_code_gate, 0) * f.code_gate
           + coalesce(:lw_absent_rr, 0) * f.absent_rr
           + coalesce(:lw_code_plain, 0) * f.code_plain
           + coalesce(:lw_code_near, 0) * f.code_near + coalesce(:lw_code_lead, 0) * f.code_lead
           + coalesce(:lw_prior_path, 0) * f.prior_path
           + coalesce(:lw_other_root, 0) * f.other_root
           + coalesce(:lw_definition, 0) * f.definition
           + coalesce(:lw_log_chars, 0) * f.log_chars
           + coalesce(:lw_symbol_names, 0) * f.symbol_names AS learned
    FROM featured AS f
),
kept AS (                               -- one row per distinct text range
    SELECT *
    FROM (SELECT s.*,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY fused DESC, path, first_char, chunk_id) AS nth
          FROM scored AS s)
    WHERE nth = 1
    ORDER BY CASE WHEN :learned = 1 THEN learned ELSE fused END DESC, path, first_char, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       CASE WHEN :learned = 1 THEN kept.learned ELSE kept.fused END AS score, c.text,
       f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT json_group_array(d.path) FROM (
               SELECT d.path FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id
               ORDER BY d.path) AS d
           HAVING count(*) > 0) END AS duplicates,
       kept.fused, kept.learned,
       kept.lex_rr, kept.lex_margin_rr, kept.lex_ratio, kept.dense_rr, kept.dense_close,
       kept.dense_gap, kept.bridge_rr, kept.symbol_rr, kept.code, kept.code_gate,
       kept.absent_rr, kept.code_plain, kept.prior_path, kept.other_root, kept.definition,
       kept.log_chars, kept.symbol_names, kept.code_near, kept.code_lead
FROM kept
JOIN chunks AS c ON c.id = kept.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY CASE WHEN :learned = 1 THEN kept.learned ELSE kept.fused END DESC,
         f.path, c.first_char, c.id;
