#!/usr/bin/env bash
# Re-create the corpora of the repos6 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos6/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos6
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package> (the archive's top
# folder, "NAME-VERSION/", npm's "package/" or "hcl-VERSION/", is stripped), which is how the
# datasets name their files when ragdb runs from the project root:
# data/raw-repos6/cattrs/docs/customizing.md.
#
# Idempotent: a package whose folder is already there from the same archive is left alone.
# Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does not walk) and re-used
# when their hash still matches, so a re-run downloads nothing.
#
# Nothing is pruned: none of the three archives adds generated or vendored copies to the
# project's own tree (--no-prune is accepted and changes nothing).
#
# cattrs comes through pip (`pip download --no-deps --no-binary cattrs`; pip installs the build
# backend into a throw-away environment to read the sdist's metadata; nothing is built).
# eslint-plugin-jest comes through `npm pack`. golang-github-hashicorp-hcl-v2 (HCL) is Debian
# 12's source package: `apt-get source --download-only golang-github-hashicorp-hcl-v2=VERSION`
# with a private deb-src list, package lists and cache under TARGET/.archives/.apt/ (the
# system's apt setup is not touched and no root is needed), of which only the upstream tarball
# (*.orig.tar.gz) is kept.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
PINS=(
  "cattrs|pypi|26.2.1|cattrs-26.2.1.tar.gz|679132bfdc225c5ee40c024fc42519954767c387f950dc6751946c586bccdc6d||"
  "eslint-plugin-jest|npm|29.17.0|eslint-plugin-jest-29.17.0.tgz|27a72bbe69b4cd6a8d53cd7ae9ae91a815b1aaf6427636531d7313fb5760164b||"
  "golang-github-hashicorp-hcl-v2|debsrc|2.14.1-2|golang-github-hashicorp-hcl-v2_2.14.1.orig.tar.gz|452eb7ffe12ce4f6b39e0f737966dc2e05318693bbf47887abceb85ec31b1fa2||"
)
DEFAULT_TARGET=data/raw-repos6

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
