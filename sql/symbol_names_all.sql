-- Every qualified name uses resolve to, read once by an index run that writes uses.
SELECT id, qualified FROM symbol_names;
