-- Chunks that have no vector yet (new, or left over by an interrupted run) of the kinds the
-- vector policy embeds (:doc_kinds, JSON: files of those kinds; :code_languages and
-- :code_chunk_kinds, JSON: chunks of those kinds in files of those languages), with what the
-- policy's path patterns need; texts are fetched per batch (sql/vectors_missing.sql).
SELECT c.id, f.path, f.kind AS file_kind, c.kind AS chunk_kind, length(c.text) AS n_chars
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.chunk_id = c.id)
  AND (f.kind IN (SELECT jsonb_array_elements_text(CAST(:doc_kinds AS jsonb)))
       OR (f.kind IN (SELECT jsonb_array_elements_text(CAST(:code_languages AS jsonb)))
           AND c.kind IN (SELECT jsonb_array_elements_text(CAST(:code_chunk_kinds AS jsonb)))))
ORDER BY c.id;
