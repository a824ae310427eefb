-- Run once in a search's transaction, before the search statements (settings of this
-- transaction only, as SET LOCAL):
--   * plan_cache_mode: every statement planned with its parameter values, so the branches a
--     parameter turns off (ann, filtered) are removed from the plan, prepared or not;
--   * hnsw.ef_search: :ef_search, at least the windows a search asks for (pgvector's HNSW
--     scan returns at most ef_search rows; ragdb.pg_search.PgRanking.settings_params);
--   * hnsw.iterative_scan: :iterative_scan ('relaxed_order' where filters apply, so the
--     scan goes on until knn_depth allowed windows are found; 'off' otherwise).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
       set_config('hnsw.ef_search', CAST(CAST(:ef_search AS integer) AS text), true),
       set_config('hnsw.iterative_scan', CAST(:iterative_scan AS text), true);
