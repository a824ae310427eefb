-- The files a search's filters allow, written once for the three leg files that rank only
-- their chunks (sql/postgresql/search_bm25_hits.sql, search_textsearch_hits.sql,
-- search_knn.sql). Each filter is a JSON array, NULL meaning no filter of that sort, as in
-- sql/search_*.sql:
--   * langs: the files' languages (files.kind);
--   * paths, excludes: GLOB patterns matched against the stored path or any tail of it
--     after a '/' (ragdb_glob_any, 010_search.sql, matches as SQLite's GLOB): a file must
--     match one of paths and none of excludes.
-- A SQL function of one SELECT, STABLE: the planner inlines it into the statement that calls
-- it, so a search's custom plan folds the NULL filters away and turns the patterns into
-- constants, as when each file wrote this out.
CREATE FUNCTION ragdb_allowed_files(langs jsonb, paths jsonb, excludes jsonb)
RETURNS TABLE (id bigint)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT f.id
    FROM files AS f
    WHERE (langs IS NULL OR f.kind IN (SELECT jsonb_array_elements_text(langs)))
      AND (paths IS NULL OR ragdb_glob_any(f.path, paths, true))
      AND (excludes IS NULL OR NOT ragdb_glob_any(f.path, excludes, true))
$$;
