-- Chunks that have no vector yet (new, or left over by an interrupted run) of the kinds the
-- vector policy embeds (:doc_kinds, JSON: files of those kinds; :code_languages and
-- :code_chunk_kinds, JSON: chunks of those kinds in files of those languages), with what the
-- policy's path patterns need; texts are fetched per batch. Filtering the kinds here spares
-- a search's coverage check reading every code chunk (18,000 rows on vLLM, 0.1 s).
-- All windows of a chunk are written in one transaction, so "some vector" means "all".
SELECT c.id, f.path, f.kind AS file_kind, c.kind AS chunk_kind, length(c.text) AS n_chars
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE c.id NOT IN (SELECT chunk_id FROM chunk_vectors)
  AND (f.kind IN (SELECT value FROM json_each(:doc_kinds))
       OR (f.kind IN (SELECT value FROM json_each(:code_languages))
           AND c.kind IN (SELECT value FROM json_each(:code_chunk_kinds))))
ORDER BY c.id;
