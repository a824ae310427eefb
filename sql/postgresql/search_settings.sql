-- Run once in a search's transaction, before the search statements (settings of this
-- transaction only, as SET LOCAL):
--   * plan_cache_mode: every statement planned with its parameter values, so the branches a
--     parameter turns off (ann, filtered) are removed from the plan, prepared or not;
--   * hnsw.ef_search: :ef_search, at least the windows a search asks for (pgvector's HNSW
--     scan returns at most ef_search rows; ragdb.pg_search.PgRanking.settings_params);
--   * hnsw.iterative_scan: :iterative_scan ('relaxed_order' where filters apply, so the
--     scan goes on until knn_depth allowed windows are found; 'off' otherwise);
--   * with :bm25_scan = 1 (the pg_textsearch leg), no sequential scans or sorts where the
--     planner has another way: its BM25 index scan, which alone gives the scores the search
--     reads (with a filter the planner would score every allowed row one by one instead).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
       set_config('hnsw.ef_search', CAST(CAST(:ef_search AS integer) AS text), true),
       set_config('hnsw.iterative_scan', CAST(:iterative_scan AS text), true),
       CASE WHEN CAST(:bm25_scan AS integer) = 1
            THEN set_config('enable_seqscan', 'off', true)
                 || set_config('enable_sort', 'off', true) END;
