"""The one bounded reader (drivers/filereader.py): only regular files, never more than the limit + 1 bytes,
never blocked by a FIFO, symbolic links refused where they are not allowed (issue 34, finding 9)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hybridctl.drivers.filereader import FileRefusedError, read_bounded, read_utf8
from hypothesis import given, settings
from hypothesis import strategies as st


class Blocked(BaseException):
    """Raised by the alarm: not an OSError (nor an Exception) that a reader's handler would take for a read error."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail, rather than hang, if the block takes longer (a FIFO open or read that blocks)."""
    def expired(*_: object) -> None:
        raise Blocked(f"blocked for more than {seconds}s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert read_bounded(path, 1000, what="a test file") == b"x" * 1000


def test_a_file_one_byte_over_the_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(FileRefusedError, match=r"1,001 bytes is larger than the 1,000-byte limit for a test file"):
        read_bounded(path, 1000, what="a test file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_is_refused_without_reading_it(device: str) -> None:
    with within(5), pytest.raises(FileRefusedError, match=f"{device}: a character device, not a regular file") as caught:
        read_bounded(device, 1000, what="a test file")
    assert caught.value.exit_code == 2 and caught.value.hint and "must be a regular file" in caught.value.hint


def test_a_symbolic_link_to_a_device_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "inventory.yaml"
    link.symlink_to("/dev/zero")
    with within(5), pytest.raises(FileRefusedError, match="a character device"):
        read_bounded(link, 64 * 1024 * 1024, what="an inventory file")


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    with within(5), pytest.raises(FileRefusedError, match=r"plan.json: a FIFO \(named pipe\), not a regular file"):
        read_bounded(fifo, 1000, what="a plan file")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(FileRefusedError, match="a socket, not a regular file"):
            read_bounded(path, 1000, what="a test file")


def test_a_directory_is_an_is_a_directory_error_for_the_edge_to_word(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as caught:
        read_bounded(tmp_path, 1000, what="a test file")
    assert caught.value.filename == str(tmp_path)


def test_missing_is_file_not_found_but_a_dangling_link_says_where_it_points(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "nope", 1000, what="a test file")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(FileRefusedError, match=f"a symbolic link to {tmp_path / 'gone'}, which does not exist"):
        read_bounded(link, 1000, what="a test file")


def test_a_loop_of_links_is_named(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(FileRefusedError, match="a loop of symbolic links"):
        read_bounded(tmp_path / "a", 1000, what="a test file")


def test_a_link_is_refused_where_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"{}")
    link = tmp_path / "manifest.json"
    link.symlink_to(target)
    assert read_bounded(link, 100, what="a test file") == b"{}"
    with pytest.raises(FileRefusedError, match="a symbolic link, which hybridctl does not follow here"):
        read_bounded(link, 100, what="the manifest", follow_symlinks=False)


def test_text_that_is_not_utf8_is_refused_at_its_byte(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"ok\xff")
    with pytest.raises(FileRefusedError, match="not UTF-8 text \\(byte 2\\)"):
        read_utf8(path, 100, what="a test file")


def test_a_file_that_grows_past_its_stat_is_cut_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The size the stat reports is not trusted: what is read is counted (a file growing as it is read,
    or one whose size the file system does not know, as in /proc)."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    real_stat, real_fstat = os.stat, os.fstat

    def sizeless(result: os.stat_result) -> os.stat_result:
        fields = list(result[:10])
        fields[6] = 0  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", lambda p, *, follow_symlinks=True: sizeless(real_stat(p, follow_symlinks=follow_symlinks)))
    monkeypatch.setattr(os, "fstat", lambda descriptor: sizeless(real_fstat(descriptor)))
    with pytest.raises(FileRefusedError) as caught:
        read_bounded(path, 5, what="a test file")
    monkeypatch.undo()
    assert caught.value.message == f"{path}: larger than the 5-byte limit for a test file"


@settings(max_examples=60, deadline=None)
@given(size=st.integers(min_value=0, max_value=4096), limit=st.integers(min_value=0, max_value=4096))
def test_fuzz_sizes_around_the_limit(tmp_path_factory: pytest.TempPathFactory, size: int, limit: int) -> None:
    path = tmp_path_factory.mktemp("sizes") / "f"
    data = os.urandom(size)
    path.write_bytes(data)
    if size <= limit:
        assert read_bounded(path, limit, what="a test file") == data
    else:
        with pytest.raises(FileRefusedError, match=f"{size:,} bytes is larger than the {limit:,}-byte limit"):
            read_bounded(path, limit, what="a test file")
