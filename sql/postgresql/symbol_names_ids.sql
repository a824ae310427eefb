-- The ids of qualified names, given as a JSON array of [qualified, last part] pairs (as
-- sql/symbol_names_ids.sql: by the expression symbol_names_last indexes).
SELECT n.qualified, n.id
FROM symbol_names AS n
WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1)
      IN (SELECT DISTINCT j.value ->> 1 FROM jsonb_array_elements(CAST(:names AS jsonb)) AS j)
  AND n.qualified IN (SELECT j.value ->> 0 FROM jsonb_array_elements(CAST(:names AS jsonb)) AS j);
