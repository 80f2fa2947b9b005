"""An inventory read from the file system: one file, or a directory's *.yaml and *.yml, each read by
the bounded reader; the core (core/inventory/loader.py load_sources) takes the texts from here."""

from __future__ import annotations

from pathlib import Path

from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import LoadedInventory, load_sources
from hybridctl.drivers.filereader import INVENTORY_FILE_LIMIT, read_utf8
from hybridctl.errors import Location, UsageError


def read_inventory_sources(path: Path) -> list[Source]:
    """The inventory's files: the file itself, or a directory's *.yaml and *.yml in sorted order.

    Every entry of the directory with such a name is read, whatever it is: one that is not a regular
    file (a dangling symbolic link, a loop, a FIFO, a device, a directory) is an error, never skipped,
    since an inventory missing a file is another inventory (one without its workloads)."""
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"{path}: no such file or directory", hint="pass the inventory file or directory")
    files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
    if not files:
        raise UsageError(f"{path}: the directory holds no *.yaml or *.yml files",
                         hint="an inventory directory holds one or more YAML files")
    return [Source(str(file), _read_file(file, in_directory=file is not path)) for file in files]


def _read_file(file: Path, *, in_directory: bool) -> str:
    hint = (f"every *.yaml and *.yml entry of an inventory directory is read: replace {file} with a regular "
            "file, or remove it (or rename it to another suffix)") if in_directory else None
    try:
        return read_utf8(file, INVENTORY_FILE_LIMIT, what="an inventory file", hint=hint,
                         too_large_hint="split the inventory into several files in one directory")
    except FileNotFoundError:
        raise UsageError(f"{file}: no such file or directory", location=Location(str(file)),
                         hint="pass the inventory file or directory") from None
    except OSError as exc:
        raise UsageError(f"{file}: cannot read: {exc.strerror}", location=Location(str(file))) from None


def load_inventory(path: Path, *, feasibility: bool = True) -> LoadedInventory:
    """The inventory at `path`, read and then loaded by the core (load_sources: its arguments' meaning)."""
    return load_sources(read_inventory_sources(path), feasibility=feasibility)
