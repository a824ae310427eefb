#!/usr/bin/env bash
# Re-create the corpora of the repos4 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos4/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos4
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package> (the archive's top
# folder, "NAME-VERSION/" or npm's "package/", is stripped), which is how the datasets name
# their files when ragdb runs from the project root: data/raw-repos4/undici/docs/docs/api/Pool.md.
#
# Idempotent: a package whose folder is already there from the same archive (and the same
# pruning) is left alone. Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does
# not walk) and re-used when their hash still matches, so a re-run downloads nothing.
#
# Pruning (off with --no-prune): generated files the published archive adds to the project's
# own tree are removed after unpacking, so the corpus is the project's code and docs:
#   undici   lib/llhttp/llhttp-wasm.js, llhttp_simd-wasm.js, lib/milo/simd.js, no-simd.js
#            (compiled WebAssembly parsers, each a base64 string of 70-85 kB in a JS file)
# tornado (sdist) and lz4 (Debian's orig tarball) ship no vendored or compiled copies.
# No question of the benchmark points into a pruned path.
#
# tornado comes through pip (`pip download --no-deps --no-binary tornado`); pip prepares the
# sdist's metadata before it saves it, so it installs the build backend (setuptools) as wheels
# into a throw-away environment; nothing is built. undici comes through `npm pack`. lz4 is
# Debian 12's source package: `apt-get source --download-only lz4=VERSION` with a private
# deb-src list, package lists and cache under TARGET/.archives/.apt/ (the system's apt setup is
# not touched and no root is needed), of which only the upstream tarball (*.orig.tar.gz) is kept.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
PINS=(
  "tornado|pypi|6.6.1|tornado-6.6.1.tar.gz|28e6311402af59c8b02e3fa0f5e7d8eb465b25081381803b127d97e6a4395d5a||"
  "undici|npm|8.14.0|undici-8.14.0.tgz|e41288e92a03127b8a420325f8bed0675a83be0b5a2aef0d94d2a6b12a13470d||lib/llhttp/*-wasm.js lib/milo/*.js"
  "lz4|debsrc|1.9.4-1|lz4_1.9.4.orig.tar.gz|0b0e3aa07c8c063ddf40b082bdf7e37a1562bda40a0ff5272957f3e987e0e54b||"
)
DEFAULT_TARGET=data/raw-repos4

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
