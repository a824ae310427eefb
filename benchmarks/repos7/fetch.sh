#!/usr/bin/env bash
# Re-create the corpora of the repos7 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos7/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos7
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package> (the archive's top
# folder, "NAME-VERSION/", npm's "package/" or "Criterion-VERSION/", is stripped), which is how
# the datasets name their files when ragdb runs from the project root:
# data/raw-repos7/plumbum/docs/cli.rst.
#
# Idempotent: a package whose folder is already there from the same archive is left alone.
# Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does not walk) and re-used
# when their hash still matches, so a re-run downloads nothing.
#
# Nothing is pruned: none of the three archives adds generated or vendored copies to the
# project's own tree (--no-prune is accepted and changes nothing).
#
# plumbum comes through pip (`pip download --no-deps --no-binary plumbum`; pip installs the build
# backend into a throw-away environment to read the sdist's metadata; nothing is built).
# markdownlint comes through `npm pack`. criterion is Debian 12's source package: its upstream
# tarball (*.orig.tar.gz) from the Debian pool (below), else `apt-get source --download-only
# criterion=VERSION` with a private deb-src list, package lists and cache under
# TARGET/.archives/.apt/ (the system's apt setup is not touched and no root is needed), of which
# only the upstream tarball is kept.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
PINS=(
  "plumbum|pypi|2.0.2|plumbum-2.0.2.tar.gz|233751d7819c9e6743ec1c2405927eb4fa52a284c7b894bd10e28106a9309a92||"
  "markdownlint|npm|0.40.0|markdownlint-0.40.0.tgz|68adab60a00e5d084544e7c2c7a49ff52050d71950ffcc77442bded32a1ac9fb||"
  "criterion|debsrc|2.4.1-2|criterion_2.4.1.orig.tar.gz|34eb5c92c2663e0c0a0b77f7c4c2f6d5600ee08a4e41833e06859b7af089c891||"
)
DEFAULT_TARGET=data/raw-repos7

# `apt-get source` also downloads Debian's packaging (criterion_2.4.1-2.debian.tar.xz) and fails
# when a mirror lacks it, as the one this set was made behind did (404), although only the
# upstream tarball is kept. So when that tarball is not yet in TARGET/.archives/, it is first
# taken from the same Debian pool with curl; fetch_pinned then checks it against the pinned
# sha256 like any kept archive (and falls back to `apt-get source` if curl is missing or fails).
POOL=http://deb.debian.org/debian/pool/main/c/criterion
pool_target=$DEFAULT_TARGET
for arg in "$@"; do [[ "$arg" == --* ]] || pool_target=$arg; done
orig="$pool_target/.archives/criterion_2.4.1.orig.tar.gz"
if [[ ! -f "$orig" ]] && command -v curl >/dev/null 2>&1; then
  mkdir -p "$pool_target/.archives"
  if curl -fsSL -o "$orig.part" "$POOL/criterion_2.4.1.orig.tar.gz"; then
    mv "$orig.part" "$orig"
  else
    rm -f "$orig.part"
  fi
fi

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
