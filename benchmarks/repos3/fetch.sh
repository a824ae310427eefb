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

die() { echo "fetch.sh: $*" >&2; exit 1; }
work=""  # the folder being unpacked into; removed if the run stops half-way
trap '[[ -n "$work" && -d "$work" ]] && rm -rf "$work"' EXIT

prune=1
target=""
for arg in "$@"; do
  case "$arg" in
    --no-prune) prune=0 ;;
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option: $arg (see --help)" ;;
    *) [[ -z "$target" ]] || die "one TARGET folder at most (got '$target' and '$arg')"; target="$arg" ;;
  esac
done
target="${target:-data/raw-repos3}"
PYTHON="${PYTHON:-python3}"  # the interpreter whose pip downloads the sdist

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

apt_download() {  # package=version into the current folder; as root, `apt-get update` once on failure
  apt-get download "$1" && return 0
  [[ $(id -u) -eq 0 && -z "${apt_updated:-}" ]] || return 1
  apt_updated=1
  echo "apt-get could not download $1; running apt-get update once and trying again" >&2
  apt-get update -qq && apt-get download "$1"
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
    debian)
      local package="${file%%_*}"
      need apt-get "to download $package $version from Debian"
      if ! (cd "$tmp" && apt_download "$package=$version") >"$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -rf "$tmp"
        die "apt-get could not download $package=$version (its last lines are above; it needs Debian 12 bookworm's package lists: apt-get update)"
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

no_odd_paths() {  # file listing: no absolute or '..' paths
  if grep -qE '(^/|(^|/)\.\.(/|$))' <<<"$2"; then
    die "$1 holds absolute or '..' paths; refusing to unpack it"
  fi
}

unpack_sdist() {  # archive file work: strip the one top folder
  local listing tops
  listing=$(tar tzf "$1") || die "$2 is not a readable gzipped tar archive"
  tops=$(awk -F/ '{print $1}' <<<"$listing" | sort -u)
  [[ $(printf '%s\n' "$tops" | wc -l) -eq 1 && -n "$tops" ]] \
    || die "$2 does not have exactly one top folder ($(tr '\n' ' ' <<<"$tops"))"
  no_odd_paths "$2" "$listing"
  tar xzf "$1" -C "$3" --strip-components=1 --no-same-owner || die "could not unpack $2"
}

unpack_deb() {  # archive file work subtree: keep only the subtree, as the root of work
  local listing depth
  need dpkg-deb "to unpack the Debian package $2"
  dpkg-deb --info "$1" >/dev/null 2>&1 || die "$2 is not a readable Debian package"
  listing=$(dpkg-deb --fsys-tarfile "$1" | tar tf -) || die "cannot list the files of $2"
  no_odd_paths "$2" "$listing"
  grep -qxF "$4/" <<<"$listing" || die "$2 has no folder $4; refusing to unpack it"
  depth=$(awk -F/ '{print NF}' <<<"$4")  # "./usr/share/..." -> the components to strip
  dpkg-deb --fsys-tarfile "$1" | tar xf - -C "$3" --strip-components="$depth" --no-same-owner "$4/" \
    || die "could not unpack $4 of $2"
}

for pin in "${PINS[@]}"; do
  IFS='|' read -r name registry version file sha subtree prune_paths <<<"$pin"
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

  work=$(mktemp -d "$target/.unpack.XXXXXX")
  case "$registry" in
    debian) unpack_deb "$archive" "$file" "$work" "$subtree" ;;
    *) unpack_sdist "$archive" "$file" "$work" ;;
  esac
  if [[ $prune -eq 1 && -n "$prune_paths" ]]; then
    read -ra patterns <<<"$prune_paths"  # split on blanks; read does not expand the globs
    for p in "${patterns[@]}"; do
      # shellcheck disable=SC2086  # $p is a glob, expanded only inside the unpacked folder
      (cd "$work" && rm -rf -- $p)
    done
  fi
  if [[ $registry == debian && $prune -eq 1 ]]; then
    links=$(find "$work" -type l)
    [[ -z "$links" ]] || die "$file holds symbolic links out of its tree: $(tr '\n' ' ' <<<"$links")"
  fi
  rm -rf "${dest:?}" "${stamps:?}/${name:?}"
  mv "$work" "$dest"
  work=""
  chmod -R u+rwX,go+rX "$dest"
  printf '%s\n' "$stamp" >"$stamps/$name"
  echo "$name $version: unpacked to $dest ($(find "$dest" -type f | wc -l) files)"
done
