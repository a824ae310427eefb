-- A JSON array of GLOB patterns (:patterns, as sql/search_*.sql's prior_paths) compiled
-- for ragdb_glob_match (migrations/postgresql/013_glob_compiled.sql): the LIKE patterns of
-- those without a set, and one regular expression for those with one (NULL: none), each
-- matching a whole path (:tails = 1: also any tail of it after a '/'). NULL patterns: an
-- empty array and NULL, which match nothing.
SELECT coalesce(ragdb_glob_likes(CAST(:patterns AS jsonb), CAST(:tails AS integer) = 1),
                CAST(ARRAY[] AS text[])) AS likes,
       ragdb_glob_regexes(CAST(:patterns AS jsonb), CAST(:tails AS integer) = 1) AS regex;
