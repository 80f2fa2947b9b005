"""`bundle create --from` copied before it checked (issue 45, items 3 and 4): a character device in the source was
copied without bound (1.5 GB of /dev/zero in 20 s, until killed), a FIFO or a socket printed only "error: Error",
and a tree 1,200 directories deep crashed with a RecursionError (exit 70). The source is now walked with the
bundle's own bounded, no-follow walk and checked whole before a byte is copied: anything but a regular file or a
directory is refused, named, exit 2, and the bundle directory holds nothing."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.hostile import assert_refused, run

CREATE = ("bundle", "create", "--model", "vision", "--version", "1.0.0", "--source-commit", "abc1234")


@pytest.fixture(autouse=True)
def bounded_writes() -> Iterator[None]:
    """A regression must not fill the disk: the old code copied /dev/zero without bound (77 GB here before a
    run was stopped). Writes past 256 MiB fail (EFBIG, SIGXFSZ ignored) for this test only."""
    import resource
    import signal

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "artifacts"
    (root / "weights").mkdir(parents=True)
    (root / "weights" / "model.bin").write_bytes(b"w" * 1000)
    (root / "config.json").write_text("{}")
    return root


def create(source: Path, bundle: Path) -> object:
    return run(*CREATE, bundle, "--from", source)


def test_a_plain_source_is_copied(source: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (source / "weights" / "model.bin").chmod(0o640)
    result = run(*CREATE, bundle, "--from", source)
    assert result.code == 0, result.output
    assert (bundle / "weights" / "model.bin").read_bytes() == b"w" * 1000
    assert stat.S_IMODE((bundle / "weights" / "model.bin").stat().st_mode) == 0o640
    assert {p.name for p in bundle.iterdir()} == {"weights", "config.json", "manifest.json"}


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def _zero_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _file_link(path: Path) -> None:
    path.symlink_to("/etc/hostname")


SPECIAL = {"fifo": (_fifo, "a FIFO"), "socket": (_socket, "a socket"),
           "link-to-dev-zero": (_zero_link, "a symbolic link"), "link-to-a-file": (_file_link, "a symbolic link")}


@pytest.mark.timeout(60)  # /dev/zero copied without bound never ended
@pytest.mark.parametrize("name", sorted(SPECIAL))
@pytest.mark.parametrize("where", ["config.json", "weights/model.bin"], ids=["top", "nested"])
def test_anything_but_a_file_or_a_directory_is_refused_before_a_byte_is_copied(
        source: Path, tmp_path: Path, name: str, where: str) -> None:
    make, said = SPECIAL[name]
    (source / where).unlink()
    make(source / where)
    bundle = tmp_path / "bundle"
    result = run(*CREATE, bundle, "--from", source)
    assert_refused(result, f"cannot bundle {source / where}", said, "not a regular file or a directory",
                   "nothing was copied", codes=frozenset({2}))
    assert not bundle.exists() or not any(bundle.rglob("*"))


@pytest.mark.timeout(60)  # the old copy of a device never ended
@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_character_device_made_in_the_source(source: Path, tmp_path: Path) -> None:
    os.mknod(source / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's
    bundle = tmp_path / "bundle"
    result = run(*CREATE, bundle, "--from", source)
    assert_refused(result, f"cannot bundle {source / 'zero'}", "a character device", codes=frozenset({2}))
    assert not bundle.exists() or not any(bundle.rglob("*"))


@pytest.fixture
def deep_source(source: Path) -> Iterator[Path]:
    """`source` with a tree 1,200 directories deep in it, made and removed one level at a time: os.makedirs and
    shutil.rmtree recurse (left behind, it would crash pytest's own clean-up of old temporary directories)."""
    deep = source
    levels = []
    for _ in range(1200):
        deep = deep / "d"
        deep.mkdir()
        levels.append(deep)
    (deep / "x.bin").write_bytes(b"x")
    try:
        yield source
    finally:
        (deep / "x.bin").unlink()
        for level in reversed(levels):
            level.rmdir()


def test_a_tree_1200_directories_deep(deep_source: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    result = run(*CREATE, bundle, "--from", deep_source)
    assert_refused(result, "nested more than 32 directories deep", codes=frozenset({2}))
    assert not bundle.exists() or not any(bundle.rglob("*"))
