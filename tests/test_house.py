"""The layout holds, read from the source (nothing imported or run): no folder of core/ past 20 modules,
no import circle but typer's command registration, and no process or thread started from the core.

The other rules of the layers have their own files: commands import neither core nor drivers and
operations print nothing (test_layers_boundary.py), the core does no I/O (core/test_core_does_no_io.py),
keeps no state bound at import (core/test_no_module_state.py) and reads no clock
(core/test_core_reads_no_clock.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cli" / "hybridctl"
CORE = PACKAGE / "core"
MOST_MODULES_IN_A_FOLDER = 20
# typer registers a command when its module runs: a *_cmds.py module imports the typer app it decorates
# its functions onto (commands/bundle_trust_cmds.py adds `bundle trust` to bundle_cmds.py's), and that
# module imports it back so that the commands exist. That is the one kind of circle the layout allows.
TYPER_REGISTRATION = "hybridctl.commands"
# what starts a process or a thread
SPAWNERS = {"subprocess", "threading", "multiprocessing", "concurrent", "asyncio", "_thread", "pty"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(under: Path) -> list[Path]:
    return sorted(under.rglob("*.py"))


def _top_level_imports(path: Path) -> Iterator[str]:
    """What a module imports when it is imported: its module-level statements, `if TYPE_CHECKING:`
    blocks left out (they never run); imports inside functions run later and close no circle at import."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]

    def walk(body: list[ast.stmt]) -> Iterator[str]:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                yield from walk(node.orelse)
            elif isinstance(node, ast.If | ast.Try):
                for block in (node.body, node.orelse, *([h.body for h in node.handlers] if isinstance(node, ast.Try)
                                                        else []), getattr(node, "finalbody", [])):
                    yield from walk(block)
            elif isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                yield base
                yield from (f"{base}.{alias.name}" for alias in node.names)

    yield from walk(tree.body)


def _import_graph() -> dict[str, set[str]]:
    known = {_module_name(p): p for p in _modules(PACKAGE)}
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        graph[name] = {target for target in _top_level_imports(path) if target in known and target != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_folder_of_the_core_holds_more_than_twenty_modules() -> None:
    folders = {CORE, *(p for p in CORE.rglob("*") if p.is_dir() and p.name != "__pycache__")}
    crowded = {str(f.relative_to(PACKAGE)): n for f in folders if (n := len(list(f.glob("*.py")))) > MOST_MODULES_IN_A_FOLDER}
    assert not crowded, f"folders of core/ past {MOST_MODULES_IN_A_FOLDER} modules: {crowded}"


def test_no_import_circle_but_typers_registration() -> None:
    circles = [c for c in _circles(_import_graph())
               if not all(m.startswith(TYPER_REGISTRATION) for m in c)]
    assert not circles, f"import circles: {circles}"


def test_the_registration_circles_join_command_modules_only() -> None:
    for circle in _circles(_import_graph()):
        if all(m.startswith(TYPER_REGISTRATION) for m in circle):
            assert all(m.endswith("_cmds") for m in circle), circle


def test_a_circle_is_found() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", _modules(CORE), ids=lambda p: str(p.relative_to(CORE)))
def test_the_core_starts_no_process_or_thread(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not imported & SPAWNERS, f"{path.name} imports {sorted(imported & SPAWNERS)}"
    assert not calls & {"os.fork", "os.system", "os.popen", "os.execv", "os.spawnv", "os.posix_spawn"}
