#!/usr/bin/env bash
# Re-create the corpora of the repos2 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos2/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos2
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package> (the archive's top
# folder, "NAME-VERSION/" or npm's "package/", is stripped), which is how the datasets name
# their files when ragdb runs from the project root: data/raw-repos2/fastify/docs/Reference/Hooks.md.
#
# Idempotent: a package whose folder is already there from the same archive (and the same
# pruning) is left alone. Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does
# not walk) and re-used when their hash still matches, so a re-run downloads nothing.
#
# Pruning (off with --no-prune): compiled files the published archive adds to the project's own
# tree are removed after unpacking, so the corpus is the project's code and docs:
#   greenlet    src/greenlet/platform/switch_*_masm.obj  (two prebuilt MSVC object files)
# fastify (npm) and cryptography (sdist) ship no vendored or compiled copies; nothing is pruned.
# No question of the benchmark points into a pruned path.
#
# Python sdists come through pip (`pip download --no-deps --no-binary NAME`). pip prepares the
# sdist's metadata before it saves it, so it installs the build backend (setuptools, and
# setuptools-rust and cffi for cryptography) as wheels into a throw-away environment; nothing is
# built. cryptography is pinned to 42.0.8, the last release built with setuptools-rust: from 43
# on it builds with maturin, whose metadata step runs `cargo metadata` and so needs the crates
# registry, which is not reachable here. npm packages come through `npm pack NAME@VERSION`.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
PINS=(
  "fastify|npm|5.12.8|fastify-5.12.8.tgz|459048aabd9311309f4f95b36e8ca065e3a4613ded292bcf50442926931e4748||"
  "cryptography|pypi|42.0.8|cryptography-42.0.8.tar.gz|8d09d05439ce7baa8e9e95b07ec5b6c886f548deb7e0f69ef25f64b3bce842f2||"
  "greenlet|pypi|3.5.6|greenlet-3.5.6.tar.gz|8e67c43bdfc88d5fee6db0d3e40175b362fc95fb85f0412d233b9b203c53a575||src/greenlet/platform/*.obj"
)
DEFAULT_TARGET=data/raw-repos2

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
