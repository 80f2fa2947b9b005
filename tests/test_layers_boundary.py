"""The output boundary between the layers, read from the source (nothing is imported or run).

commands/ parse options and call an operation: they reach the core and the drivers only through
operations/. operations/ do the work and return values: whatever they say goes through render/
(a view handed to them, or a result the command renders), never straight to a terminal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cli" / "hybridctl"
COMMANDS = sorted((PACKAGE / "commands").glob("*.py"))
OPERATIONS = sorted((PACKAGE / "operations").glob("*.py"))
BELOW_COMMANDS = ("hybridctl.core", "hybridctl.drivers")

# the printing APIs: a call of one of these names, or of one of these methods on anything (a console under
# whatever name), is output; rich's Console constructed is a terminal of the operation's own
PRINTING_CALLS = {"print", "Console"}
PRINTING_METHODS = {"print", "log", "rule", "echo", "secho"}
STREAM_WRITES = {("stdout", "write"), ("stderr", "write")}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imported_modules(tree: ast.Module) -> list[tuple[int, str]]:
    """Every module an import names, at module level or inside a function (relative ones resolved under
    hybridctl.<layer>)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from ..core import y: within hybridctl
                found.append((node.lineno, "hybridctl." + "." * (node.level - 1) + (node.module or "")))
            else:
                found.append((node.lineno, node.module or ""))
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                          if node.module == "hybridctl"]
    return found


def _below(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in BELOW_COMMANDS) \
        or module.startswith(("hybridctl..core", "hybridctl..drivers"))


def _printing_calls(tree: ast.Module) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in PRINTING_CALLS:
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute):
            owner = func.value
            owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) \
                else ""
            if func.attr in PRINTING_METHODS or func.attr in PRINTING_CALLS \
                    or (owner_name, func.attr) in STREAM_WRITES:
                found.append((node.lineno, f"{owner_name}.{func.attr}"))
    return found


def test_the_layers_are_where_this_test_looks() -> None:
    assert len(COMMANDS) > 5 and len(OPERATIONS) > 5


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: p.name)
def test_no_command_imports_the_core_or_the_drivers(path: Path) -> None:
    below = [f"{path.name}:{line} imports {module}" for line, module in _imported_modules(_tree(path))
             if _below(module)]
    assert not below, "a command reaches the core or the drivers only through an operation:\n" + "\n".join(below)


@pytest.mark.parametrize("path", OPERATIONS, ids=lambda p: p.name)
def test_no_operation_prints(path: Path) -> None:
    printing = [f"{path.name}:{line} calls {name}" for line, name in _printing_calls(_tree(path))]
    assert not printing, "an operation says what it has to through render/:\n" + "\n".join(printing)


def test_the_checks_see_what_they_forbid() -> None:
    """Each kind of breach, written as the layers could write it, is seen (a check that sees nothing passes
    on anything)."""
    imports = _tree_of("def f():\n    from hybridctl.core.inventory.loader import load_inventory\n"
                       "import hybridctl.drivers.state\nfrom hybridctl import drivers\n")
    assert sorted(m for _, m in _imported_modules(imports) if _below(m)) == [
        "hybridctl.core.inventory.loader", "hybridctl.drivers", "hybridctl.drivers.state"]
    calls = _tree_of("print(1)\nstdout().print(2)\nerr.log(3)\nconsole.rule()\ntyper.echo(4)\ntyper.secho(5)\n"
                     "sys.stdout.write('6')\nsys.stderr.write('7')\nConsole(stderr=True)\nrich.console.Console()\n")
    assert len(_printing_calls(calls)) == 10
    assert not _printing_calls(_tree_of("view.say('x')\nview.note('y')\nrender_plan(view.out, plan)\n"))


def _tree_of(source: str) -> ast.Module:
    return ast.parse(source)
