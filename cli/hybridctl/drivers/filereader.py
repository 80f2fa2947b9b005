"""The one reader for every file hybridctl reads: bounded in size, and only from regular files.

A path can name something that never ends (`/dev/zero`), blocks forever (a FIFO with no writer), or
is not what it seems (a symbolic link into another directory). Every inventory file, plan file,
state file, journal, runbook, scenario, drill report, synth index, bundle manifest, signature and
key is read here, so none of these can exhaust memory or hang a run:

- the path is stat'ed first and refused unless it is a regular file (a FIFO, a device, a socket or a
  directory is never opened); with ``follow_symlinks=False`` a symbolic link is refused too;
- it is opened with O_NONBLOCK (a FIFO swapped in after the stat cannot block the open) and
  O_NOFOLLOW where links are refused, and fstat'ed again: the file read is the file checked;
- at most ``limit`` + 1 bytes are read, whatever the file claims its size is.

Every reader goes through it (the inventory's files through drivers/inventory_files.py, the core taking
only their texts), so there is one rule and one set of messages.
A missing file is a FileNotFoundError, for the caller to word ("no such plan file"); a directory is an
IsADirectoryError (the CLI's edge says what to do about it); anything else refused is a
FileRefusedError (exit 2), one message naming the path, what it is, and how to fix it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from hybridctl.errors import Location, UsageError

KIB = 1024
MIB = 1024 * KIB
# What each kind of file may hold at most. Generous: a fleet of 100,000 workloads stays far below.
INVENTORY_FILE_LIMIT = 64 * MIB  # one inventory file (a directory may hold several)
DOCUMENT_LIMIT = 1024 * MIB  # plan files, state.json, the journal, runbooks, drill reports, synth's index
SCENARIO_LIMIT = 64 * MIB  # drill scenario files
MANIFEST_LIMIT = 64 * MIB  # a bundle's manifest.json
SIGNATURE_LIMIT = 4 * KIB  # a bundle's manifest.sig (an Ed25519 signature is 64 bytes)
KEY_LIMIT = 64 * KIB  # a PEM key file
SMALL_RECORD_LIMIT = 64 * KIB  # the lock holder record

_CHUNK = 1 * MIB


class FileRefusedError(UsageError):
    """A path hybridctl will not read: not a regular file, a symbolic link where none is allowed, or
    larger than the limit for its kind."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def describe_mode(mode: int) -> str:
    """What a file of this st_mode is, in words."""
    for test, words in _KINDS:
        if test(mode):
            return words
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _refuse(path: Path, what: str, problem: str, hint: str | None) -> FileRefusedError:
    return FileRefusedError(f"{path}: {problem}", location=Location(str(path)),
                            hint=hint or f"{what} must be a regular file: replace {path} with one, or remove it")


def _check_mode(path: Path, mode: int, what: str, hint: str | None) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if stat.S_ISLNK(mode):
        raise _refuse(path, what, "a symbolic link, which hybridctl does not follow here", hint)
    raise _refuse(path, what, f"{describe_mode(mode)}, not a regular file", hint)


def _dangling(path: Path, what: str, hint: str | None) -> FileRefusedError | None:
    """A FileNotFoundError at a path that is itself a symbolic link: say so (it exists, its target does not)."""
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return _refuse(path, what, f"a symbolic link to {target}, which does not exist", hint)


def read_bounded(path: Path | str, limit: int, *, what: str, follow_symlinks: bool = True,
                 hint: str | None = None, too_large_hint: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (see the module's docstring).

    `what` names the kind of file in messages ("an inventory file", "the bundle manifest"); `hint`
    says what to do about a path that is not a regular file, `too_large_hint` about one over the limit.
    """
    path = Path(path)
    try:
        before = os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        dangling = _dangling(path, what, hint) if follow_symlinks else None
        if dangling is not None:
            raise dangling from None
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, what, "a loop of symbolic links", hint) from None
        raise
    _check_mode(path, before.st_mode, what, hint)
    _check_size(path, before.st_size, limit, what, too_large_hint, exact=True)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a symbolic link since the stat
            raise _refuse(path, what, "a symbolic link, which hybridctl does not follow here", hint) from None
        raise
    try:
        opened = os.fstat(descriptor)
        _check_mode(path, opened.st_mode, what, hint)  # swapped since the stat: check what was opened
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            try:
                # the whole file in one read as a rule (it says its size), never more than limit + 1
                chunk = os.read(descriptor, min(max(opened.st_size + 1 - size, _CHUNK), limit + 1 - size))
            except OSError as exc:
                if exc.filename is None:
                    exc.filename = str(path)
                raise
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        _check_size(path, size, limit, what, too_large_hint, exact=False)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _check_size(path: Path, size: int, limit: int, what: str, hint: str | None, *, exact: bool) -> None:
    if size > limit:
        # what the stat says is the size; what a read found is only "more" (it stops at limit + 1)
        amount = f"{size:,} bytes is larger" if exact else "larger"
        raise FileRefusedError(f"{path}: {amount} than the {limit:,}-byte limit for {what}",
                               location=Location(str(path)),
                               hint=hint or "check the path: no file hybridctl reads is this large")


def read_utf8(path: Path | str, limit: int, *, what: str, follow_symlinks: bool = True,
              hint: str | None = None, too_large_hint: str | None = None) -> str:
    """read_bounded, decoded as UTF-8; text that is not UTF-8 is refused at its first bad byte."""
    data = read_bounded(path, limit, what=what, follow_symlinks=follow_symlinks, hint=hint,
                        too_large_hint=too_large_hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefusedError(f"{path}: not UTF-8 text (byte {exc.start})", location=Location(str(path)),
                               hint=f"{what} is UTF-8 text: check the path") from None
