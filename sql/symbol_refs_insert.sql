-- One use of a name (run with executemany); its target and alias by symbol_names.id, its kind
-- by symbol_kinds.id, its name NULL where it is its target's last part. A second use at the
-- same place (the extractors write none) is dropped.
INSERT OR IGNORE INTO symbol_refs (file_id, enclosing_id, name, target_id, alias_id, kind,
                                   first_char, line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
