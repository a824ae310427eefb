-- The ids of qualified names, given as a JSON array of [qualified, last part] pairs.
SELECT n.qualified, n.id
FROM symbol_names AS n
WHERE n.last IN (SELECT DISTINCT j.value ->> 1 FROM jsonb_array_elements(CAST(:names AS jsonb)) AS j)
  AND n.qualified IN (SELECT j.value ->> 0 FROM jsonb_array_elements(CAST(:names AS jsonb)) AS j);
