# Fetch pinned packages from the registries and unpack each as TARGET/NAME/: the part every
# benchmarks/*/fetch.sh shares, sourced by each after it sets:
#
#   PINS=("name|registry|version|archive file|sha256 of the archive|subtree (.deb)|prune globs")
#   DEFAULT_TARGET=data/raw-...
#
# and then calls `fetch_pinned "$@"`. Registries: pypi (the sdist, through pip), npm (`npm
# pack`), debsrc (a Debian 12 source package's upstream tarball, through a private deb-src
# setup) and debian (a .deb, of which only its `subtree` folder is kept). A tarball's one top
# folder is stripped. Archives are kept in TARGET/.archives/ and checked by sha256; a package
# already unpacked from the same archive and pruning is left alone, so a re-run downloads
# nothing. An archive with absolute or '..' paths, or a tree left with symbolic links after
# pruning, is refused.

die() { echo "fetch.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is needed ($2) but is not on PATH"; }

# The folder being unpacked into; removed if the run stops half-way.
work=""
trap '[[ -n "$work" && -d "$work" ]] && rm -rf "$work"' EXIT
PYTHON="${PYTHON:-python3}"  # the interpreter whose pip downloads the sdists

# The deb-src list for Debian source packages (Debian 12, bookworm).
DEBSRC_LIST='Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg'

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
  fi
}

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

apt_download() {  # package=version into the current folder; as root, `apt-get update` once on failure
  apt-get download "$1" && return 0
  [[ $(id -u) -eq 0 && -z "${apt_updated:-}" ]] || return 1
  apt_updated=1
  echo "apt-get could not download $1; running apt-get update once and trying again" >&2
  apt-get update -qq && apt-get download "$1"
}

fetch_into() {  # tmp name registry version file: run the registry's download in tmp
  local tmp=$1 name=$2 registry=$3 version=$4 file=$5 what
  case "$registry" in
    pypi)
      "$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON -m pip is needed to download $name"
      what="pip could not download the sdist of $name==$version"
      PIP_REQUIRE_VIRTUALENV=0 "$PYTHON" -m pip download --no-deps --no-binary "$name" \
        --disable-pip-version-check -d "$tmp" "$name==$version" && return 0 ;;
    npm)
      need npm "to download $name from the npm registry"
      what="npm could not download $name@$version"
      (cd "$tmp" && npm pack "$name@$version" --loglevel=error) && return 0 ;;
    debsrc)
      need apt-get "to download the Debian source package $name $version"
      what="apt-get could not download the source of $name=$version (it needs Debian 12 bookworm's sources)"
      (cd "$tmp" && apt_source "$name=$version") && return 0 ;;
    debian)
      need apt-get "to download ${file%%_*} $version from Debian"
      what="apt-get could not download ${file%%_*}=$version (it needs Debian 12 bookworm's package lists: apt-get update)"
      (cd "$tmp" && apt_download "${file%%_*}=$version") && return 0 ;;
    *) die "unknown registry $registry for $name" ;;
  esac
  echo "$what" >"$tmp/.failed"
  return 1
}

download() {  # name registry version file -> the archive in $archives
  local name=$1 registry=$2 version=$3 file=$4 tmp log
  tmp=$(mktemp -d "$archives/.download.XXXXXX")
  log="$tmp/.log"
  if ! fetch_into "$tmp" "$name" "$registry" "$version" "$file" >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    local what
    what=$(cat "$tmp/.failed" 2>/dev/null || echo "the download of $name $version failed")
    rm -rf "$tmp"
    die "$what (its last lines are above)"
  fi
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

unpack_tarball() {  # archive file work: strip the one top folder
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

fetch_pinned() {  # [--no-prune] [TARGET]
  local prune=1 target="" arg pin name registry version file sha subtree prune_paths
  local dest stamp archive got links p stamps patterns
  for arg in "$@"; do
    case "$arg" in
      --no-prune) prune=0 ;;
      -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
      -*) die "unknown option: $arg (see --help)" ;;
      *) [[ -z "$target" ]] || die "one TARGET folder at most (got '$target' and '$arg')"; target="$arg" ;;
    esac
  done
  target="${target:-$DEFAULT_TARGET}"
  need tar "to unpack the archives"
  mkdir -p "$target" || die "cannot create the target folder $target"
  archives="$(cd "$target" && pwd)/.archives"  # absolute: downloads run in a folder of their own
  stamps="$target/.fetched"
  mkdir -p "$archives" "$stamps"

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
      *) unpack_tarball "$archive" "$file" "$work" ;;
    esac
    if [[ $prune -eq 1 ]]; then
      read -ra patterns <<<"$prune_paths"  # split on blanks; read does not expand the globs
      for p in "${patterns[@]}"; do
        # shellcheck disable=SC2086  # $p is a glob, expanded only inside the unpacked folder
        (cd "$work" && rm -rf -- $p)
      done
      links=$(find "$work" -type l)
      [[ -z "$links" ]] || die "$file holds symbolic links: $(tr '\n' ' ' <<<"$links")"
    fi
    rm -rf "${dest:?}" "${stamps:?}/${name:?}"
    mv "$work" "$dest"
    work=""
    chmod -R u+rwX,go+rX "$dest"
    printf '%s\n' "$stamp" >"$stamps/$name"
    echo "$name $version: unpacked to $dest ($(find "$dest" -type f | wc -l) files)"
  done
}
