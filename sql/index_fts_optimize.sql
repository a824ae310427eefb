-- Rewrite the full-text index as one segment: a deleted row's terms leave it (FTS5 keeps
-- them, marked deleted, in its segments until a merge). Run when a secret's rows were removed
-- (indexing._Purge) and when a root is removed (RagDB.remove_root).
INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize');
