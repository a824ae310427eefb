-- The classes that name one of :ids as a base class (as sql/symbol_subclasses.sql).
SELECT e.qualified,
       EXISTS (SELECT 1 FROM symbols AS m
               WHERE m.name = :member AND m.qualified = e.qualified || '.' || :member)
FROM symbol_refs AS r
JOIN symbols AS e ON e.id = r.enclosing_id
WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.kind = 'inherit';
