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

# name | registry | version | archive file | sha256 of the archive | paths to prune (globs)
PINS=(
  "fastify|npm|5.12.8|fastify-5.12.8.tgz|459048aabd9311309f4f95b36e8ca065e3a4613ded292bcf50442926931e4748|"
  "cryptography|pypi|42.0.8|cryptography-42.0.8.tar.gz|8d09d05439ce7baa8e9e95b07ec5b6c886f548deb7e0f69ef25f64b3bce842f2|"
  "greenlet|pypi|3.5.6|greenlet-3.5.6.tar.gz|8e67c43bdfc88d5fee6db0d3e40175b362fc95fb85f0412d233b9b203c53a575|src/greenlet/platform/*.obj"
)

die() { echo "fetch.sh: $*" >&2; exit 1; }
work=""  # the folder being unpacked into; removed if the run stops half-way
trap '[[ -n "$work" && -d "$work" ]] && rm -rf "$work"' EXIT

prune=1
target=""
for arg in "$@"; do
  case "$arg" in
    --no-prune) prune=0 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $arg (see --help)" ;;
    *) [[ -z "$target" ]] || die "one TARGET folder at most (got '$target' and '$arg')"; target="$arg" ;;
  esac
done
target="${target:-data/raw-repos2}"
PYTHON="${PYTHON:-python3}"  # the interpreter whose pip downloads the sdists

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
  fi
}

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is needed ($2) but is not on PATH"; }
need tar "to unpack the archives"

mkdir -p "$target" || die "cannot create the target folder $target"
archives="$target/.archives"
stamps="$target/.fetched"
mkdir -p "$archives" "$stamps"

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
  rm -rf "${dest:?}" "${stamps:?}/${name:?}"
  mv "$work" "$dest"
  work=""
  chmod -R u+rwX,go+rX "$dest"
  printf '%s\n' "$stamp" >"$stamps/$name"
  echo "$name $version: unpacked to $dest ($(find "$dest" -type f | wc -l) files)"
done
