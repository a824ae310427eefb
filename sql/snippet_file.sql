-- An indexed file a docs page's snippet include (MkDocs' `--8<--`) may name: its sha256, to
-- check a re-read against, and its kind (generate/blocks.py shows the section it includes).
SELECT sha256, kind FROM files WHERE path = :path;
