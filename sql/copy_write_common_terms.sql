INSERT INTO fts_common_terms (term) VALUES (?);
