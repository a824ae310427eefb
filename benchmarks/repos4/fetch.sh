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

# name | registry | version | archive file | sha256 of the archive | paths to prune (globs)
PINS=(
  "tornado|pypi|6.6.1|tornado-6.6.1.tar.gz|28e6311402af59c8b02e3fa0f5e7d8eb465b25081381803b127d97e6a4395d5a|"
  "undici|npm|8.14.0|undici-8.14.0.tgz|e41288e92a03127b8a420325f8bed0675a83be0b5a2aef0d94d2a6b12a13470d|lib/llhttp/*-wasm.js lib/milo/*.js"
  "lz4|debsrc|1.9.4-1|lz4_1.9.4.orig.tar.gz|0b0e3aa07c8c063ddf40b082bdf7e37a1562bda40a0ff5272957f3e987e0e54b|"
)
# The deb-src list for the Debian source package (Debian 12, bookworm).
DEBSRC_LIST='Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg'

die() { echo "fetch.sh: $*" >&2; exit 1; }
work=""  # the folder being unpacked into; removed if the run stops half-way
trap '[[ -n "$work" && -d "$work" ]] && rm -rf "$work"' EXIT

prune=1
target=""
for arg in "$@"; do
  case "$arg" in
    --no-prune) prune=0 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $arg (see --help)" ;;
    *) [[ -z "$target" ]] || die "one TARGET folder at most (got '$target' and '$arg')"; target="$arg" ;;
  esac
done
target="${target:-data/raw-repos4}"
PYTHON="${PYTHON:-python3}"  # the interpreter whose pip downloads the sdist

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
  fi
}

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is needed ($2) but is not on PATH"; }
need tar "to unpack the archives"

mkdir -p "$target" || die "cannot create the target folder $target"
archives="$(cd "$target" && pwd)/.archives"  # absolute: downloads run in a folder of their own
stamps="$target/.fetched"
mkdir -p "$archives" "$stamps"

apt_source() {  # package=version into the current folder, through a private deb-src setup
  local apt="$archives/.apt" options
  mkdir -p "$apt/lists/partial" "$apt/sources" "$apt/cache/archives/partial"
  printf '%s\n' "$DEBSRC_LIST" >"$apt/sources/src.sources"
  options=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$apt/sources"
           -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
  if [[ -z "$(ls -A "$apt/lists" | grep -v '^partial$' || true)" ]]; then
    apt-get "${options[@]}" update -qq || return 1
  fi
  apt-get "${options[@]}" source --download-only -qq "$1" && return 0
  echo "apt-get could not download $1; refreshing the source lists once and trying again" >&2
  apt-get "${options[@]}" update -qq && apt-get "${options[@]}" source --download-only -qq "$1"
}

download() {  # name registry version file -> the archive in $archives
  local name=$1 registry=$2 version=$3 file=$4 tmp log
  tmp=$(mktemp -d "$archives/.download.XXXXXX")
  log="$tmp/log"
  case "$registry" in
    pypi)
      "$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON -m pip is needed to download $name"
      if ! PIP_REQUIRE_VIRTUALENV=0 "$PYTHON" -m pip download --no-deps --no-binary "$name" \
          --disable-pip-version-check -d "$tmp" "$name==$version" >"$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -rf "$tmp"
        die "pip could not download the sdist of $name==$version (its last lines are above)"
      fi ;;
    npm)
      need npm "to download $name from the npm registry"
      if ! (cd "$tmp" && npm pack "$name@$version" --loglevel=error) >"$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -rf "$tmp"
        die "npm could not download $name@$version (its last lines are above)"
      fi ;;
    debsrc)
      need apt-get "to download the Debian source package $name $version"
      if ! (cd "$tmp" && apt_source "$name=$version") >"$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -rf "$tmp"
        die "apt-get could not download the source of $name=$version (its last lines are above; it needs Debian 12 bookworm's sources)"
      fi ;;
    *) die "unknown registry $registry for $name" ;;
  esac
  if [[ ! -f "$tmp/$file" ]]; then
    ls -1 "$tmp" >&2
    rm -rf "$tmp"
    die "the download of $name $version did not produce $file (what came is listed above)"
  fi
  mv -f "$tmp/$file" "$archives/$file"
  rm -rf "$tmp"
}

for pin in "${PINS[@]}"; do
  IFS='|' read -r name registry version file sha prune_paths <<<"$pin"
  dest="$target/$name"
  stamp="$name $version $sha prune=$prune"
  if [[ -d "$dest" && -f "$stamps/$name" && "$(cat "$stamps/$name")" == "$stamp" ]]; then
    echo "$name $version: up to date in $dest"
    continue
  fi

  archive="$archives/$file"
  if [[ ! -f "$archive" || "$(sha256_of "$archive")" != "$sha" ]]; then
    echo "$name $version: downloading from $registry ..."
    download "$name" "$registry" "$version" "$file"
  fi
  got=$(sha256_of "$archive")
  if [[ "$got" != "$sha" ]]; then
    mv -f "$archive" "$archive.bad"
    die "sha256 mismatch for $file: expected $sha, got $got (kept as $archive.bad)"
  fi

  # Every entry must lie under one top folder, which is stripped; no absolute or '..' paths.
  listing=$(tar tzf "$archive") || die "$file is not a readable gzipped tar archive"
  tops=$(awk -F/ '{print $1}' <<<"$listing" | sort -u)
  [[ $(printf '%s\n' "$tops" | wc -l) -eq 1 && -n "$tops" ]] \
    || die "$file does not have exactly one top folder ($(tr '\n' ' ' <<<"$tops"))"
  if grep -qE '(^/|(^|/)\.\.(/|$))' <<<"$listing"; then
    die "$file holds absolute or '..' paths; refusing to unpack it"
  fi

  work=$(mktemp -d "$target/.unpack.XXXXXX")
  tar xzf "$archive" -C "$work" --strip-components=1 --no-same-owner \
    || { rm -rf "$work"; die "could not unpack $file"; }
  if [[ $prune -eq 1 && -n "$prune_paths" ]]; then
    read -ra patterns <<<"$prune_paths"  # split on blanks; read does not expand the globs
    for p in "${patterns[@]}"; do
      # shellcheck disable=SC2086  # $p is a glob, expanded only inside the unpacked folder
      (cd "$work" && rm -rf -- $p)
    done
  fi
  links=$(find "$work" -type l)
  [[ -z "$links" ]] || die "$file holds symbolic links: $(tr '\n' ' ' <<<"$links")"
  rm -rf "${dest:?}" "${stamps:?}/${name:?}"
  mv "$work" "$dest"
  work=""
  chmod -R u+rwX,go+rX "$dest"
  printf '%s\n' "$stamp" >"$stamps/$name"
  echo "$name $version: unpacked to $dest ($(find "$dest" -type f | wc -l) files)"
done
