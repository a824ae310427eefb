-- title: Symbol
-- description: A name's definitions, the files that use them (each with its lines) and the definitions that call them. :name is a name (LLM) or a qualified name (vllm.entrypoints.llm.LLM); uses here are those that name the definition directly (the JSON API's /-/ragdb/references also follows re-exports).
WITH defs AS (  -- by name, or by qualified name (a name's last part: the index of the view)
    SELECT s.id, s.qualified, s.kind, f.path, s.start_line
    FROM symbols AS s
    JOIN files AS f ON f.id = s.file_id
    WHERE s.name = :name
    UNION
    SELECT s.id, s.qualified, s.kind, f.path, s.start_line
    FROM symbols AS s
    JOIN files AS f ON f.id = s.file_id
    WHERE s.name = substr(:name, length(rtrim(:name, replace(:name, '.', ''))) + 1)
      AND s.qualified = :name
),
uses AS (
    SELECT r.file_id, r.enclosing_id, k.name AS kind, r.line, f.path
    FROM symbol_refs AS r
    JOIN symbol_kinds AS k ON k.id = r.kind
    JOIN files AS f ON f.id = r.file_id
    WHERE r.target_id IN (SELECT DISTINCT s.qualified_id FROM symbol_defs AS s
                          WHERE s.id IN (SELECT id FROM defs))
    ORDER BY f.path, r.first_char  -- a file's lines in reading order
)
SELECT 1 AS part, 'definition' AS section, path, start_line AS line, kind, qualified,
       NULL AS uses
FROM defs
UNION ALL
SELECT 2, 'used in', path, min(line), group_concat(DISTINCT kind), NULL,
       count(*) || ' (lines ' || group_concat(line, ', ') || ')'
FROM uses
GROUP BY path
UNION ALL
SELECT 3, 'called by', u.path, min(u.line), e.kind, e.qualified, count(*)
FROM uses AS u
JOIN symbols AS e ON e.id = u.enclosing_id
WHERE u.kind IN ('call', 'decorator', 'macro')
GROUP BY u.enclosing_id
ORDER BY part, path, line
LIMIT 1000
