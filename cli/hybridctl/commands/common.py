"""Small helpers the commands share: reading plans, writing files atomically, formats."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.errors import UsageError

if TYPE_CHECKING:
    from hybridctl.core.plan.model import Plan


class ReportFormat(StrEnum):
    """How plans, runbooks and drill reports are shown: rich tables, versioned JSON, or markdown."""

    table = "table"
    json = "json"
    markdown = "markdown"


def read_plan(path: Path) -> Plan:
    from hybridctl.core.plan.serialize import plan_from_json

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such plan file", hint="write one with `hybridctl plan INVENTORY --out FILE`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    return plan_from_json(text, str(path), verify_digest=True)


def looks_like_plan(path: Path) -> bool:
    return path.is_file() and path.suffix == ".json"


def write_atomically(path: Path, text: str) -> None:
    from hybridctl.drivers.files import atomic_write_text

    atomic_write_text(path, text)
