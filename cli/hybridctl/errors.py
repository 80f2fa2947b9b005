"""Domain errors and the exit codes the CLI maps them to.

Every error a user can cause carries where it happened and how to fix it; the CLI renders
it once, at the edge, and never shows a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes CI can rely on. Documented in the README."""

    OK = 0
    FAILED = 1  # invalid inventory, infeasible plan, failed step
    USAGE = 2  # bad arguments, unreadable file, missing prerequisite; with --detailed-exitcode: changes
    LOCKED = 3  # the state is locked by another run
    REFUSED = 4  # stale plan, no approval, not applied yet


CHANGES = ExitCode.USAGE  # with --detailed-exitcode, as Terraform does


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
