-- GLOB patterns compiled once, matched many times. ragdb_glob_any(path, patterns, tails)
-- compiles its JSON patterns (ragdb_glob_likes, ragdb_glob_regexes) wherever it is written;
-- with the patterns a constant the planner does that as it plans, once per statement per
-- search: in the fusion statements the path priors cost about 1.9 ms of planning a run at 10x
-- the vLLM corpus (a generic plan compiles them again for every row). The fusion files now
-- take the priors compiled (sql/postgresql/search_glob_compile.sql, read once per connection
-- for a set of patterns: ragdb.pg_search) and match them with ragdb_glob_match.

-- Whether `path` matches the compiled patterns: one of the LIKE patterns, or the regular
-- expression (NULL: none).
CREATE OR REPLACE FUNCTION ragdb_glob_match(path text, likes text[], regex text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN path LIKE ANY (likes) OR coalesce(path ~ regex, false);

-- The same rule for patterns not yet compiled (the filters), written once.
CREATE OR REPLACE FUNCTION ragdb_glob_any(path text, patterns jsonb, tails boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ragdb_glob_match(path, ragdb_glob_likes(patterns, tails),
                        ragdb_glob_regexes(patterns, tails));
