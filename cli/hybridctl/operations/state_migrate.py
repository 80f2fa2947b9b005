"""state migrate: a state and its journal copied to another backend (drivers/statemigrate.py copies and verifies)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hybridctl.render.terminal import Terminal

if TYPE_CHECKING:
    from hybridctl.drivers.state import StateStore
    from hybridctl.drivers.statemigrate import Migration


def migrate_state(source: str, target: str, view: Terminal) -> tuple[StateStore, StateStore, Migration]:
    """The two stores (each opened as --state opens it) and what was copied from the one to the other."""
    from hybridctl.drivers.statemigrate import migrate as copy_state
    from hybridctl.operations.run import open_store

    origin, destination = open_store(source, view), open_store(target, view)
    return origin, destination, copy_state(origin, destination)
