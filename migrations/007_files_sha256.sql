-- Identical files share one result slot and list each other as duplicates (sql/search_*.sql):
-- finding the other files with a hit's bytes is an index lookup, not a scan of every file.
CREATE INDEX files_sha256 ON files(sha256);
