#!/usr/bin/env bash
# Re-create the corpora of the repos3 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos3/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos3
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package>, which is how the
# datasets name their files when ragdb runs from the project root:
# data/raw-repos3/ent/doc/md/hooks.md. For the PyPI sdist the archive's top folder
# ("NAME-VERSION/") is stripped. A Debian .deb installs its package under system paths; only
# the package's source tree is kept: the folder given as the pin's subtree (ent's Go module
# root ./usr/share/gocode/src/entgo.io/ent, YARD's gem folder
# ./usr/share/rubygems-integration/all/gems/yard-0.9.28) becomes TARGET/NAME/, and everything
# else the .deb installs (/usr/bin wrappers, man pages, /usr/share/doc) is left out.
#
# Idempotent: a package whose folder is already there from the same archive (and the same
# pruning) is left alone. Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does
# not walk) and re-used when their hash still matches, so a re-run downloads nothing.
#
# Pruning (off with --no-prune): what the published archive adds that is not the project's code
# or docs is removed after unpacking:
#   yard        templates/default/fulldoc/html/js/jquery.js  (a symbolic link Debian put in
#               place of the vendored jQuery, pointing out of the package, at
#               /usr/share/javascript/jquery/jquery.js)
# ent (.deb) and starlette (sdist) ship no vendored or compiled copies; nothing is pruned.
# A symbolic link left in a .deb's tree after pruning stops the run (it would point out of it).
# No question of the benchmark points into a pruned path.
#
# The .deb files come through `apt-get download NAME=VERSION` (no root needed; it needs the
# package lists, so on a fresh Debian machine run `apt-get update` first: as root this script
# does that itself once if the download fails) and are unpacked with dpkg-deb. The PyPI sdist
# comes through pip (`pip download --no-deps --no-binary NAME`); pip prepares its metadata
# before it saves it, so it installs the build backend (hatchling) as wheels into a throw-away
# environment; nothing is built.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
# (a .deb's Debian package name is the archive file's name up to its first '_')
PINS=(
  "ent|debian|0.11.3-4|golang-entgo-ent-dev_0.11.3-4_all.deb|c1d742d8f28ef5399d5f4b8712b0e25b64c5265327f7cc171298ea0b78afa93f|./usr/share/gocode/src/entgo.io/ent|"
  "starlette|pypi|1.10.0|starlette-1.10.0.tar.gz|b8399098d4c1e3522734f7235dc79b1fc967f96cf139c81e0fa30479e0685f9b||"
  "yard|debian|0.9.28-2+deb12u2|yard_0.9.28-2+deb12u2_all.deb|05c433f0f7af63909c7140f799c167d20c1b604e5f6810188a5df0c2f3a22edc|./usr/share/rubygems-integration/all/gems/yard-0.9.28|templates/default/fulldoc/html/js/jquery.js"
)
DEFAULT_TARGET=data/raw-repos3

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
