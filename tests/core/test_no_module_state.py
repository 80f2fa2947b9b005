"""No module of the core keeps state of its own: every memo lives on a context object its caller makes for one
run (core/memo.py's RunMemo, the drill's DemandCache, a StackConfigMemo) and passes down; none is bound at import.

Read with `ast`, nothing imported: a module-level binding of a mutable value or of a memo (a list, dict or set,
shown or called for; a deque, a ContextVar, an IdentityMemo or any other *Memo or *Cache), whatever its name, a
`global` statement (a function rebinding module state), or a function cached across calls (functools' cache and
lru_cache, but for the shipped catalog file and the plan file's adapters, which are static data) fails.
Module-level constants are ALL_CAPS and immutable: tuples, frozensets, MappingProxyType, strings, numbers,
compiled regexes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import hybridctl.core
import pytest

CORE = Path(hybridctl.core.__file__).parent
_MUTABLE_CALLS = frozenset({"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque",
                            "ChainMap", "ContextVar", "IdentityMemo", "local", "WeakKeyDictionary",
                            "WeakValueDictionary", "WeakSet", "SimpleQueue", "Queue"})
_MEMO_CLASS = re.compile(r"(Memo|Cache)$")  # RunMemo, PlacementMemo, StackConfigMemo, DemandCache, ...
_CACHES = frozenset({"cache", "lru_cache"})
# static data: the shipped catalog file, and a plan part's pydantic adapter (made when first needed, per class)
_STATIC_CACHES = frozenset({("inventory/catalog.py", "catalog"), ("plan/serialize.py", "_adapter")})


def _name(node: ast.expr) -> str | None:
    """The name a call or decorator names last (`functools.lru_cache(4)` -> "lru_cache")."""
    if isinstance(node, ast.Call):
        return _name(node.func)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _mutable(value: ast.expr) -> str | None:
    """Why `value`, bound at module level, would be state (None: it would not)."""
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return f"a {type(value).__name__.lower()}"
    if isinstance(value, ast.Call):
        called = _name(value.func)
        if called in _MUTABLE_CALLS or (called is not None and _MEMO_CLASS.search(called)):
            return f"{called}(...)"
        return None
    if isinstance(value, ast.Tuple):  # a, b = [], {}
        return next(filter(None, map(_mutable, value.elts)), None)
    if isinstance(value, ast.BinOp):
        return _mutable(value.left) or _mutable(value.right)
    if isinstance(value, ast.BoolOp):
        return next(filter(None, map(_mutable, value.values)), None)
    if isinstance(value, ast.IfExp):
        return _mutable(value.body) or _mutable(value.orelse)
    return None


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import: the module's, and those of its top-level if, try and with blocks."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.With):
            yield from _module_level(statement.body)
            yield from _module_level(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody,
                          *(handler.body for handler in statement.handlers)):
                yield from _module_level(block)


def _targets(statement: ast.stmt) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return [statement.target]
    return []


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _names(element)]
    return []


def module_state(source: str, path: str) -> list[str]:
    """What in this module's source keeps state at module level, one line each (none: an empty list)."""
    tree = ast.parse(source, path)
    found: list[str] = []
    for statement in _module_level(tree.body):
        value = getattr(statement, "value", None)
        targets = _targets(statement)
        if value is None or not targets:
            continue
        why = _mutable(value)  # whatever the name: an ALL_CAPS constant is an immutable one
        if why is not None:
            found.append(f"{path}:{statement.lineno}: {', '.join(n for t in targets for n in _names(t))} is {why}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{path}:{node.lineno}: global {', '.join(node.names)} (module state rebound at run time)")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (path, node.name) not in _STATIC_CACHES:
            found += [f"{path}:{node.lineno}: {node.name} is cached across calls (@{_name(d)})"
                      for d in node.decorator_list if _name(d) in _CACHES]
    return found


def _core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_the_core_is_found() -> None:
    assert len(_core_modules()) > 40 and (CORE / "memo.py").exists()


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: p.relative_to(CORE).as_posix())
def test_no_core_module_keeps_state(path: Path) -> None:
    assert module_state(path.read_text(encoding="utf-8"), path.relative_to(CORE).as_posix()) == []


@pytest.mark.parametrize("source", [
    "_memo: IdentityMemo[Sequence[Any], int] = IdentityMemo(6)",  # nameindex.py's, before RunMemo
    "_memo: list[PlacementDelta] = []",  # plan/delta.py's
    "_grouped: IdentityMemo[Sequence[Placement], int] = \\\n    IdentityMemo(2)",
    "_sited = IdentityMemo(2)",
    "_digests: IdentityMemo[Plan, str | Callable[[], str]] = IdentityMemo(4)",
    "_queued: ContextVar[deque[Task] | None] = ContextVar('hybridctl_beside_solver', default=None)",
    "_pending = collections.deque()",
    "_known = {}",
    "_seen = set()",
    "_by_id: dict[int, str] = dict()",
    "_cache = defaultdict(list)",
    "_run = RunMemo()",
    "_demands = DemandCache()",
    "_memo, _other = [], None",
    "_kept = [] if True else None",
    "if True:\n    _late = []",
    "try:\n    _late = {}\nexcept ImportError:\n    pass",
    "EFA_NETWORK_CARDS = {'p4d.24xlarge': 4}",  # a constant, but a mutable one
    "KINDS = ['a', 'b']",
    "def keep(x):\n    global _last\n    _last = x",
    "from functools import cache\n@cache\ndef pools(inventory):\n    return inventory.pools",
    "import functools\n@functools.lru_cache(maxsize=4)\ndef pools(inventory):\n    return inventory.pools",
])
def test_what_keeps_state_is_found(source: str) -> None:
    assert module_state(source, "example.py")


@pytest.mark.parametrize("source", [
    "KEPT = 8",
    "_TIERS = frozenset({'fixed', 'burst'})",
    "ORDER = ('stack', 'node-group')",
    "CARDS = MappingProxyType({'p4d.24xlarge': 4})",
    "_ZONE = re.compile(r'^[a-z]{2}$')",
    "_FLOAT_MAX = sys.float_info.max",
    "NAME = 'hybridctl'",
    "_LIMIT = 1e-4, 1e16",
    "_WORKLOAD = attrgetter('workload')",
    "_A, _B = (attrgetter(a) for a in ('a', 'b'))",
    "N = TypeVar('N')",
    "JsonDict = dict[str, object]",
    "StepsFor = Callable[[Plan], StepPlan]",
    "class Memo:\n    def __init__(self):\n        self.kept = []",
    "def fresh():\n    known = {}\n    return known",
    "from functools import cache\n@cache\ndef catalog():\n    return 1",
])
def test_constants_and_state_on_objects_pass(source: str) -> None:
    path = "inventory/catalog.py" if "catalog" in source else "example.py"
    assert module_state(source, path) == []
