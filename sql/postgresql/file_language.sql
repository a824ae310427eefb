-- The language a file was indexed as (files.kind), for a file whose name does not say it.
SELECT kind FROM files WHERE path = :path;
