#!/usr/bin/env bash
# Re-create the corpora of the repos5 benchmark from the package registries, pinned by version
# and by the sha256 of each published archive.
#
#   bash benchmarks/repos5/fetch.sh [--no-prune] [TARGET]     # TARGET defaults to data/raw-repos5
#
# Each package ends up unpacked as TARGET/NAME/<path inside the package> (the archive's top
# folder, "NAME-VERSION/" or npm's "package/", is stripped), which is how the datasets name
# their files when ragdb runs from the project root: data/raw-repos5/mercurius/docs/api/options.md.
#
# Idempotent: a package whose folder is already there from the same archive is left alone.
# Archives are kept in TARGET/.archives/ (a dot folder, which ragdb does not walk) and re-used
# when their hash still matches, so a re-run downloads nothing.
#
# Nothing is pruned: none of the three archives adds generated or vendored copies to the
# project's own tree (--no-prune is accepted and changes nothing).
#
# flask comes through pip (`pip download --no-deps --no-binary flask`); pip prepares the sdist's
# metadata before it saves it, so it installs the build backend (flit_core) as a wheel into a
# throw-away environment; nothing is built. mercurius comes through `npm pack`. libonig
# (Oniguruma) is Debian 12's source package: `apt-get source --download-only libonig=VERSION`
# with a private deb-src list, package lists and cache under TARGET/.archives/.apt/ (the system's
# apt setup is not touched and no root is needed), of which only the upstream tarball
# (*.orig.tar.gz) is kept.
set -euo pipefail

# name | registry | version | archive file | sha256 of the archive | subtree (.deb) | prune globs
PINS=(
  "flask|pypi|3.1.3|flask-3.1.3.tar.gz|0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb||"
  "mercurius|npm|16.10.1|mercurius-16.10.1.tgz|39d875b5fc3ab0f2d783b81520dae08991631db6c10906b73dbb8e225e50766b||"
  "libonig|debsrc|6.9.8-1|libonig_6.9.8.orig.tar.gz|26372720bab6733c869a9eb69377f73971138dc5e3eff4a81f5ba8aea5435fb2||"
)
DEFAULT_TARGET=data/raw-repos5

# shellcheck source=benchmarks/fetch_pinned.sh
source "$(dirname "${BASH_SOURCE[0]}")/../fetch_pinned.sh"
fetch_pinned "$@"
