-- The module-level imports of the names :ids that give them another qualified name (as
-- sql/symbol_aliases_of.sql).
SELECT a.qualified,
       EXISTS (SELECT 1 FROM symbol_refs AS u WHERE u.target_id = r.alias_id) AS used,
       t.qualified, k.name
FROM symbol_refs AS r
JOIN symbol_names AS a ON a.id = r.alias_id
JOIN symbol_names AS t ON t.id = r.target_id
JOIN symbol_kinds AS k ON k.id = r.kind
WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.alias_id IS NOT NULL;
