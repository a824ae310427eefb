-- A qualified name a definition has or a use resolves to, new to the index (ids given by the
-- run).
INSERT INTO symbol_names (id, qualified) VALUES (?, ?);
