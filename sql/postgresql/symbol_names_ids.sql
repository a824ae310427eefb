-- The ids of qualified names, given as a JSON array of [qualified, last part] pairs.
SELECT n.qualified, n.id
FROM jsonb_array_elements(CAST(:names AS jsonb)) AS j
JOIN symbol_names AS n ON n.last = j.value ->> 1 AND n.qualified = j.value ->> 0;
