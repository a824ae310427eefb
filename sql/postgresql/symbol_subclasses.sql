-- The classes that name one of :ids as a base class (as sql/symbol_subclasses.sql).
SELECT e.qualified
FROM symbol_refs AS r
JOIN symbols AS e ON e.id = r.enclosing_id
WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.kind = 'inherit';
