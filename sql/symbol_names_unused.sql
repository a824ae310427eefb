-- After an index run removed uses: the names no use names any more.
DELETE FROM symbol_names
WHERE NOT EXISTS (SELECT 1 FROM symbol_refs AS r WHERE r.target_id = symbol_names.id)
  AND NOT EXISTS (SELECT 1 FROM symbol_refs AS r WHERE r.alias_id = symbol_names.id);
