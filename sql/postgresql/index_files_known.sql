SELECT id, path, sha256 FROM files;
