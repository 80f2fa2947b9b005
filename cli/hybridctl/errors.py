"""Domain errors and the exit codes the CLI maps them to.

Every error a user can cause carries where it happened and how to fix it; the CLI renders
it once, at the edge, and never shows a traceback.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes CI can rely on. Documented in docs/commands.md (Exit codes)."""

    OK = 0
    FAILED = 1  # invalid inventory, infeasible plan, failed step
    USAGE = 2  # bad arguments, unreadable file, missing prerequisite
    LOCKED = 3  # the state is locked by another run
    REFUSED = 4  # stale plan, no approval, not applied yet
    CUT_SHORT = 5  # the solver's safety net (--time-limit) struck: a valid plan, but one that may differ run to run


# With --detailed-exitcode, as Terraform: 0 nothing changed, CHANGES something did, and ExitCode.FAILED
# for every error (usage, locked, refused, a bug alike: commands/app.py run), so that CI can tell a
# change from a broken job.
CHANGES = 2


class ChangesFound(Exception):
    """With --detailed-exitcode: the command succeeded and something changed (exit CHANGES). An exception
    of its own rather than typer.Exit(2), which is also how click ends on its own usage errors: only this
    one leaves the CLI's edge as 2 under --detailed-exitcode."""


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


class HybridctlError(Exception):
    """An error the user can act on: what is wrong, where, and how to fix it."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, location: Location | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint


class UsageError(HybridctlError):
    exit_code = ExitCode.USAGE


class PrerequisiteError(HybridctlError):
    """A tool or credential the command needs is missing (e.g. the pulumi CLI)."""

    exit_code = ExitCode.USAGE


class StateLockedError(HybridctlError):
    exit_code = ExitCode.LOCKED


class RefusedError(HybridctlError):
    """The tool refuses to act: a stale plan, no approval, nothing applied yet."""

    exit_code = ExitCode.REFUSED


class EnvironmentProblem(HybridctlError):
    """The machine, not the input and not hybridctl: a read-only or full disk, a directory where a
    file belongs, a file where a directory belongs, no permission. Exit 2, like a missing prerequisite."""

    exit_code = ExitCode.USAGE


# errno → what to do about it. Errors not named here still get their operating system's words.
_OS_HINTS: dict[int, str] = {
    errno.EROFS: "the file system is read-only: use a writable directory (e.g. --state DIR or --out FILE "
                 "elsewhere), or remount it read-write",
    errno.EACCES: "check the owner and mode of the file and of its directory, or use another path",
    errno.EPERM: "check the owner and mode of the file and of its directory, or use another path",
    errno.ENOSPC: "the disk is full: free some space, or use a directory on another disk",
    errno.EDQUOT: "the disk quota is exhausted: free some space, or use a directory on another disk",
    errno.EISDIR: "a directory is where hybridctl needs a file: pass a file path, or move the directory away",
    errno.ENOTDIR: "a file is where hybridctl needs a directory (e.g. --state pointing at a file): pass a "
                   "directory, or move the file away",
    errno.EEXIST: "something already exists at that path: remove or rename it, or choose another path",
    errno.ENOENT: "check the path; the directory holding it must exist",
    errno.ELOOP: "a symbolic link loops: fix or remove the link",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.EMFILE: "too many open files: raise `ulimit -n` and run again",
}


def environment_problem(error: OSError) -> EnvironmentProblem:
    """An OSError that reached the CLI's edge, as a message a person can act on."""
    reason = error.strerror or type(error).__name__
    # a rename names the temp file first and the target second: the target is what the user knows
    where = str(error.filename2 if error.filename2 is not None else error.filename or "")
    message = f"{where}: {reason}" if where else reason
    return EnvironmentProblem(message, hint=_OS_HINTS.get(error.errno or -1,
                              "a problem of the machine or the file system, not of the inventory"))
