"""The core does no I/O: it takes texts and bytes, and the drivers read and write the files (drivers/filereader.py,
the one bounded reader; drivers/inventory_files.py, an inventory's files), so that what the core answers depends on
its arguments alone and no core function can hang on a FIFO or fill memory from /dev/zero.

Read with `ast`, nothing imported: a call of open(); of os.open, os.fstat, os.stat, os.listdir, os.scandir,
os.walk or another os or os.path function that reads or changes the file system (by a renamed import too); of a
method that a Path uses to read, list, test or change the file system (read_text, iterdir, exists, mkdir, ...),
whatever it is called on, since ast cannot tell a Path from another object (no core method may take those names);
an import of shutil, tempfile, subprocess, socket, glob or fileinput, or of one of those os functions by name,
fails. No read is allowed: the shipped catalog is Python data (core/inventory/catalog.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hybridctl.core

CORE = Path(hybridctl.core.__file__).parent
# what a Path (or io, or os by the same name) reads, lists, tests or changes on the file system
_FILE_METHODS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob",
                           "rglob", "stat", "lstat", "exists", "is_file", "is_dir", "is_symlink", "mkdir", "rmdir",
                           "unlink", "touch", "chmod", "readlink"})
_OS_CALLS = frozenset({"open", "fstat", "stat", "lstat", "listdir", "scandir", "walk", "fwalk", "read", "write",
                       "remove", "unlink", "mkdir", "makedirs", "rmdir", "removedirs", "rename", "renames",
                       "replace", "readlink", "symlink", "link", "mkfifo", "access", "chmod", "truncate"})
_OS_PATH_CALLS = frozenset({"exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getatime",
                            "getctime", "samefile", "realpath"})
_IO_MODULES = frozenset({"shutil", "tempfile", "subprocess", "socket", "glob", "fileinput"})


def _os_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names the module binds to `os` and to `os.path` (`import os as o`, `from os import path`)."""
    os_names, path_names = {"os"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "os":
                    os_names.add(alias.asname or "os")
                elif alias.name == "os.path" and alias.asname:
                    path_names.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            path_names.update(alias.asname or "path" for alias in node.names if alias.name == "path")
    return os_names, path_names


def _is_os_path(owner: ast.expr, os_names: set[str], path_names: set[str]) -> bool:
    if isinstance(owner, ast.Name):
        return owner.id in path_names
    return (isinstance(owner, ast.Attribute) and owner.attr == "path" and isinstance(owner.value, ast.Name)
            and owner.value.id in os_names)


def file_io(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each call or import in a module's source that does I/O on files, processes or sockets."""
    tree = ast.parse(source)
    os_names, path_names = _os_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func
            if isinstance(called, ast.Name) and called.id == "open":
                yield node.lineno, "open()"
            elif isinstance(called, ast.Attribute):
                owner = called.value
                if isinstance(owner, ast.Name) and owner.id in os_names and called.attr in _OS_CALLS:
                    yield node.lineno, f"os.{called.attr}()"
                elif _is_os_path(owner, os_names, path_names) and called.attr in _OS_PATH_CALLS:
                    yield node.lineno, f"os.path.{called.attr}()"
                elif called.attr in _FILE_METHODS:
                    yield node.lineno, f"{called.attr}()"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] in _IO_MODULES:
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.partition(".")[0] in _IO_MODULES:
                yield node.lineno, f"from {node.module} import"
            else:
                functions = {"os": _OS_CALLS, "os.path": _OS_PATH_CALLS}.get(node.module, frozenset())
                for alias in node.names:
                    if alias.name in functions:
                        yield node.lineno, f"from {node.module} import {alias.name}"


def test_the_scan_finds_file_io_and_allows_paths_as_names() -> None:
    source = ("import os\nimport os.path as osp\nimport shutil\nfrom subprocess import run\nfrom os import listdir\n"
              "from pathlib import Path\n"
              "a = open('x')\nb = os.open('x', os.O_RDONLY)\nc = os.fstat(3)\nd = os.stat('x')\n"
              "e = list(os.scandir('.'))\nf = os.walk('.')\ng = Path('x').read_text()\nh = Path('x').iterdir()\n"
              "i = Path('x').exists()\nj = Path('d').mkdir()\nk = osp.isfile('x')\nl = os.path.getsize('x')\n"
              "m = Path('x').name\nn = Path('x').suffix\no = 'a'.replace('a', 'b')\np = os.sep\nq = os.path.join('a', 'b')\n"
              "r = fnmatch.fnmatch('a', '*')\ns = json.loads('1')\n")
    assert sorted(file_io(source)) == [
        (3, "import shutil"), (4, "from subprocess import"), (5, "from os import listdir"), (7, "open()"),
        (8, "os.open()"), (9, "os.fstat()"), (10, "os.stat()"), (11, "os.scandir()"), (12, "os.walk()"),
        (13, "read_text()"), (14, "iterdir()"), (15, "exists()"), (16, "mkdir()"), (17, "os.path.isfile()"),
        (18, "os.path.getsize()")]


def test_the_scan_follows_a_renamed_os_and_every_path_method() -> None:
    source = ("import os as o\nfrom os import path\nimport tempfile, socket\n"
              "a = o.listdir('.')\nb = path.exists('x')\n"
              + "".join(f"p.{method}()\n" for method in ("read_bytes", "write_text", "write_bytes", "glob", "rglob",
                                                         "open", "stat", "is_file", "is_dir", "unlink")))
    assert [what for _, what in sorted(file_io(source))] == [
        "import socket", "import tempfile", "os.listdir()", "os.path.exists()", "read_bytes()", "write_text()",
        "write_bytes()", "glob()", "rglob()", "open()", "stat()", "is_file()", "is_dir()", "unlink()"]


def test_no_core_module_does_io() -> None:
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 50  # the scan reads the core, not an empty directory
    found = {(m.relative_to(CORE).as_posix(), line, what) for m in modules
             for line, what in file_io(m.read_text(encoding="utf-8"))}
    done = sorted(f"core/{module}:{line}: {what}" for module, line, what in found)
    assert done == [], ("the core does I/O: take the text or the bytes as an argument, read or written by a driver "
                        "(drivers/filereader.py read_bounded, read_utf8):\n" + "\n".join(done))
