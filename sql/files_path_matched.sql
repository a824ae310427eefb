-- Whether any indexed file matches one --path filter (:paths, its JSON array of GLOBs as
-- ragdb.retrieve.Filters.as_sql gives them), by the search files' rule (allowed_files in
-- sql/search_lexical.sql): asked only after a search found nothing, so that `--path nope/`
-- says it names no indexed file rather than only "no sources found".
SELECT EXISTS (
    SELECT 1 FROM files AS f, json_each(:paths) AS p
    WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value
);
