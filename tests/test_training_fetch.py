"""training.fetch's pure parts and its failure reporting, on real files and without a network:
the pins (a Debian epoch included), whether apt's lists folder has been filled, and a pin that
ends without its folder being a named failure with exit 1."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from training import fetch

HEADER = "# name\tregistry\tversion\tarchive\tsha256\tlanguage\n"


def _tar_gz(path: Path, files: dict[str, bytes | None]) -> None:
    """A gzipped tar; a member whose data is None is a folder."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def _line(name: str, registry: str, version: str, archive: str, sha: str = "0" * 64) -> str:
    return f"{name}\t{registry}\t{version}\t{archive}\t{sha}\tc\n"


def test_zlib_is_pinned_with_its_epoch_and_every_debian_file_name_fits_its_version() -> None:
    pins = {pin.name: pin for pin in fetch.read_pins()}
    assert len(pins) == 97
    zlib = pins["zlib"]
    assert zlib.version == "1:1.2.13.dfsg-1"
    assert fetch.apt_request(zlib) == "zlib=1:1.2.13.dfsg-1"
    assert fetch.debian_file_prefix(zlib) == "zlib_1.2.13.dfsg.orig."
    assert zlib.archive.startswith(fetch.debian_file_prefix(zlib))


def test_debian_file_names_drop_the_epoch_or_escape_it(tmp_path: Path) -> None:
    pins_file = tmp_path / "packages.tsv"
    pins_file.write_text(
        HEADER
        + _line("zlib", "debsrc", "1:1.2.13.dfsg-1", "zlib_1.2.13.dfsg.orig.tar.bz2")
        + _line("libevent", "debsrc", "2.1.12-stable-8", "libevent_2.1.12-stable.orig.tar.gz")
        + _line("libfoo-dev", "deb", "2:1.0-3", "libfoo-dev_2%3a1.0-3_amd64.deb")
        + _line("foo", "pypi", "1.0", "foo-1.0.tar.gz"),
        encoding="utf-8")
    pins = fetch.read_pins(pins_file)
    assert [fetch.apt_request(p) for p in pins[:3]] == [
        "zlib=1:1.2.13.dfsg-1", "libevent=2.1.12-stable-8", "libfoo-dev=2:1.0-3"]
    assert fetch.debian_file_prefix(pins[3]) == ""


@pytest.mark.parametrize("archive", ["libfoo-dev_2:1.0-3_amd64.deb",
                                     "libfoo-dev_1.0-3_amd64.deb"])
def test_a_deb_archive_name_that_does_not_fit_the_version_is_refused(
        tmp_path: Path, archive: str) -> None:
    pins_file = tmp_path / "packages.tsv"
    pins_file.write_text(HEADER + _line("libfoo-dev", "deb", "2:1.0-3", archive),
                         encoding="utf-8")
    with pytest.raises(fetch.FetchError, match="libfoo-dev.*should start libfoo-dev_2%3a1.0-3_"):
        fetch.read_pins(pins_file)


def test_lists_count_as_filled_only_with_a_package_list(tmp_path: Path) -> None:
    lists = tmp_path / ".apt-lists"
    assert not fetch.has_package_lists(lists)
    (lists / "partial").mkdir(parents=True)
    assert not fetch.has_package_lists(lists)
    (lists / "lock").write_bytes(b"")
    (lists / "deb.debian.org_debian_dists_bookworm_InRelease").write_text("x")
    assert not fetch.has_package_lists(lists)
    (lists / "deb.debian.org_debian_dists_bookworm_main_source_Sources.lz4").write_bytes(b"x")
    assert fetch.has_package_lists(lists)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "deb.debian.org_debian_dists_bookworm_main_source_Sources").write_text("x")
    assert fetch.has_package_lists(plain)


def test_a_relative_target_is_refused_by_fetch(tmp_path: Path) -> None:
    pin = fetch.Pin("demo", "pypi", "1.0", "demo-1.0.tar.gz", "0" * 64, "python")
    with pytest.raises(ValueError, match="absolute"):
        fetch.fetch(pin, Path("data/train/raw"))


def test_an_unknown_name_to_only_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert fetch.main(["--only", "no-such-package"]) == 1
    assert "no pin named no-such-package" in capsys.readouterr().err


def test_a_pin_that_ends_without_files_fails_by_name_and_the_run_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two pins whose archives are already in place (so nothing is downloaded), run with a
    relative --target: one unpacks, the other's archive holds only folders."""
    archives = tmp_path / "raw" / ".archives"
    archives.mkdir(parents=True)
    _tar_gz(archives / "good-1.0.tar.gz", {"good-1.0/good.py": b"x = 1\n"})
    _tar_gz(archives / "hollow-1.0.tar.gz", {"hollow-1.0": None, "hollow-1.0/sub": None})
    pins_file = tmp_path / "packages.tsv"
    pins_file.write_text(HEADER + "".join(
        _line(name, "pypi", "1.0", f"{name}-1.0.tar.gz",
              hashlib.sha256((archives / f"{name}-1.0.tar.gz").read_bytes()).hexdigest())
        for name in ("good", "hollow")), encoding="utf-8")
    monkeypatch.setattr(fetch, "PINS", pins_file)
    monkeypatch.chdir(tmp_path)

    assert fetch.main(["--target", "raw"]) == 1
    out, err = capsys.readouterr()
    assert "[1/2] good 1.0 (c): unpacked" in out
    assert "[2/2] hollow 1.0 (c): FAILED: unpacking hollow-1.0.tar.gz left no file for" in err
    assert f"1 of 2 failed (hollow); the others are in {tmp_path / 'raw'}" in err
    assert (tmp_path / "raw" / "good" / "good.py").is_file()
    assert not (tmp_path / "raw" / ".fetched" / "hollow").exists()
    assert not (tmp_path / "raw" / "hollow").exists()

    assert fetch.main(["--target", "raw", "--only", "good"]) == 0
    assert "[1/1] good 1.0 (c): up to date" in capsys.readouterr().out
