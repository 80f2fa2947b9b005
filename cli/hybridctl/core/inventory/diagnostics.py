"""Diagnostics: the findings of validation, each with a place in the user's files and a hint."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from hybridctl.errors import HybridctlError, Location


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    code: str  # stable identifier, e.g. "unknown-field", "unresolved-reference"
    message: str
    location: Location | None = None
    hint: str | None = None
    severity: Severity = Severity.ERROR
    related: tuple[Location, ...] = ()  # other places involved, e.g. the first definition of a duplicate


@dataclass
class Diagnostics:
    """An ordered collection that validation steps append to."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, code: str, message: str, location: Location | None, hint: str | None = None,
              related: tuple[Location, ...] = ()) -> None:
        self.items.append(Diagnostic(code, message, location, hint, Severity.ERROR, related))

    def warning(self, code: str, message: str, location: Location | None, hint: str | None = None,
                related: tuple[Location, ...] = ()) -> None:
        self.items.append(Diagnostic(code, message, location, hint, Severity.WARNING, related))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.WARNING]


class InvalidInventoryError(HybridctlError):
    """Raised when an inventory cannot be used; carries every diagnostic found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        first = diagnostics[0]
        super().__init__(first.message, location=first.location, hint=first.hint)
        self.diagnostics = diagnostics
