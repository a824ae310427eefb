-- Every qualified name definitions have and uses resolve to, read once by an index run that
-- writes symbols.
SELECT id, qualified FROM symbol_names;
