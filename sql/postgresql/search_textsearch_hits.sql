-- The pg_textsearch option's lexical leg (settings('pg_lexical') = 'pg_textsearch',
-- sql/postgresql/fts_textsearch_index.sql): the BM25 index over chunks_fts.doc ranks the
-- chunks with its own formula (Lucene's IDF, the english configuration's stems), so its
-- ranking is close to rag.db's, not the same (measured: benchmarks/bench_scale.py). Its hits
-- go to search_lexical.sql or search_hybrid.sql as hit_ids and
-- hit_scores, and with the bridge terms to search_hybrid.sql as bridge_ids and bridge_scores
-- (ragdb.pg_search.search_rows).
--
-- A statement of its own, with no WITH clause and no subquery: bm25_get_current_score() is
-- the score the index scan computed for the row it returned, and pg_textsearch spares the
-- row's second scoring (the ORDER BY expression computed again: a parse of the row's whole
-- text, about 10 ms for 50 rows at 1x) only in a plain query; a CTE, even one the plan never
-- runs, or a subquery in the WHERE clause brings it back. So the filters come as
-- :allowed_file_ids, the files they allow (sql/postgresql/search_allowed_files.sql), checked
-- against each row's file (chunks_fts.file_id, migration 012): a constant array, which
-- PostgreSQL hashes. search_settings.sql (bm25_scan) makes the planner take the index scan,
-- filtered or not.
--
-- :query_text: the question's informative terms, space separated; :hits_limit: how many.
-- With :filtered = 1 the scan goes on until it has found that many allowed chunks.
SELECT t.chunk_id, bm25_get_current_score() AS score
FROM chunks_fts AS t
WHERE CAST(:filtered AS integer) = 0
   OR t.file_id = ANY(CAST(:allowed_file_ids AS bigint[]))
ORDER BY t.doc <@> to_bm25query(CAST(:query_text AS text), 'chunks_fts_bm25')
LIMIT CAST(:hits_limit AS integer);
