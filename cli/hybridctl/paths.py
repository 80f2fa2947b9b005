"""Where the files that travel with the tool live: stacks/, playbooks/, templates/, inventories/.

A wheel carries them under ``hybridctl/_assets``; an editable install finds them at the
top of the source tree, two levels above this package.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def asset_dir(name: str) -> Path:
    """The directory of one asset kind (``stacks``, ``playbooks``, ``templates``, ``inventories``)."""
    for candidate in (_PACKAGE_DIR / "_assets" / name, _PACKAGE_DIR.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"hybridctl is installed without its {name}/ directory; reinstall the package")


def stacks_dir() -> Path:
    return asset_dir("stacks")


def playbooks_dir() -> Path:
    return asset_dir("playbooks")


def templates_dir() -> Path:
    return asset_dir("templates")


def inventories_dir() -> Path:
    return asset_dir("inventories")
