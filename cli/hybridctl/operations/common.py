"""Small helpers the commands share: reading plans, writing files atomically, formats."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

# the --time-limit default of plan, failover and drill: commands read it here, since they import no core
from hybridctl.core.solver.effort import SAFETY_SECONDS as SAFETY_SECONDS
from hybridctl.errors import HybridctlError, RefusedError, UsageError

if TYPE_CHECKING:
    from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.memo import RunMemo
    from hybridctl.core.plan.model import Plan

# From this many placements a plan is checked in a forked child beside other work (`plan`, `failover`;
# drivers/background.py): about 0.2-0.3 s of checking at 10,000 against a 5 ms fork. Below, a fork costs
# more than it saves.
BACKGROUND_CHECK_PLACEMENTS = 10_000


class ReportFormat(StrEnum):
    """How plans, runbooks and drill reports are shown: rich tables, versioned JSON, or markdown."""

    table = "table"
    json = "json"
    markdown = "markdown"


def read_plan(path: Path, *, checked: bool = True) -> Plan:
    """A plan file, refused unless it is what `plan --out` wrote: its content digest, and (`checked`, for the
    commands that have no inventory to check it against: show, cost, report, plan --previous) its numbers
    and summaries (verify.plan_file_violations). A command that has the inventory passes checked=False and
    calls check_rules, which checks all of that and the inventory's rules."""
    from hybridctl.core.plan.serialize import plan_from_json
    from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_utf8

    try:
        text = read_utf8(path, DOCUMENT_LIMIT, what="a plan file")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such plan file", hint="write one with `hybridctl plan INVENTORY --out FILE`") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    plan = plan_from_json(text, str(path), verify_digest=True)
    if checked:
        from hybridctl.core.checker.verify import plan_file_violations

        _refuse(path, plan_file_violations(plan), "is not a plan `plan --out` wrote")
    return plan


def looks_like_plan(path: Path) -> bool:
    """A *.json file that is not an inventory. JSON is YAML, so an inventory may be called x.json:
    one whose top level has inventory keys and no placements is read as an inventory."""
    if not (path.is_file() and path.suffix == ".json"):
        return False
    import json

    from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_utf8

    try:
        raw = json.loads(read_utf8(path, DOCUMENT_LIMIT, what="a plan file"))
    except (OSError, ValueError, RecursionError, UsageError):
        return True  # reading it as a plan gives the located error
    return not (isinstance(raw, dict) and "placements" not in raw and INVENTORY_KEYS & raw.keys())


INVENTORY_KEYS = frozenset({"sites", "workloads", "datasets", "regions", "policies"})


def check_output_path(path: Path | None, option: str) -> None:
    """Refuse an output path that cannot be a file before any work is done (not after a long solve)."""
    if path is not None and path.is_dir():
        raise UsageError(f"{option} {path} is a directory", hint=f"give a file name, e.g. {option} "
                         f"{path / 'out.json'}")


def require_state_dir(path: Path) -> Path:
    """A state directory, or nothing yet (it is created on first use); never a file."""
    if path.exists() and not path.is_dir():
        hint = (f"pass the directory that holds it: --state {path.parent}" if path.name == "state.json"
                else "pass --state (or set HYBRIDCTL_STATE to) a directory; hybridctl creates it on first use")
        raise UsageError(f"{path} is a file, not a state directory", hint=hint)
    return path


def write_atomically(path: Path, text: str | bytes, option: str = "--out") -> None:
    from hybridctl.drivers.files import atomic_write_bytes

    check_output_path(path, option)
    with _named(path):
        atomic_write_bytes(path, text if isinstance(text, bytes) else text.encode("utf-8"))


@contextmanager
def _named(path: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.filename is None:  # a failed write() names no file; the message should
            exc.filename = str(path)
        raise


class StagedFile:
    """write_atomically in steps: the content goes to a temp file beside `path` (`fill`, which a forked
    child may do), and `commit` renames it over `path` once it may be written; used as a context
    manager, the temp file is gone on exit unless committed."""

    def __init__(self, path: Path, option: str = "--out") -> None:
        from hybridctl.drivers.files import reserve_sibling

        check_output_path(path, option)
        self.path = path
        with _named(path):
            self.temp = reserve_sibling(path)

    def fill(self, data: bytes) -> None:
        from hybridctl.drivers.files import fill

        with _named(self.path):
            fill(self.temp, data)

    def commit(self) -> None:
        from hybridctl.drivers.files import replace_atomically

        with _named(self.path):
            replace_atomically(self.temp, self.path)

    def __enter__(self) -> StagedFile:
        return self

    def __exit__(self, *_: object) -> None:
        Path(self.temp).unlink(missing_ok=True)


def check_rules(plan: Plan, inventory: Inventory, plan_path: Path, run_memo: RunMemo | None = None) -> None:
    """Refuse a plan file that breaks the inventory's rules, before anything acts on it."""
    from hybridctl.core.checker.verify import plan_violations

    _refuse(plan_path, plan_violations(inventory, plan, run_memo), "breaks the inventory's rules")


def plan_of_inventory(plan_path: Path, inventory_path: Path,
                      run_memo: RunMemo | None = None) -> tuple[Plan, Inventory]:
    """A plan file and the inventory it was made from, checked against it (a rehearsal, synth of a plan file);
    `run_memo`: the caller's (its check of the plan file reads the inventory as the caller does). A plan of
    another inventory is refused (exit 4), as apply refuses it."""
    from hybridctl.core.inventory.digest import inventory_digest
    from hybridctl.drivers.inventory_files import load_inventory

    the_plan = read_plan(plan_path, checked=False)  # check_rules below checks it with the inventory
    inventory = load_inventory(inventory_path).inventory
    if the_plan.inventory_digest != inventory_digest(inventory):
        raise RefusedError(f"{plan_path} was made from another inventory: {inventory_path} has changed since, or is "
                           "not the inventory of this plan",
                           hint=f"make a new plan: hybridctl plan {inventory_path} --out {plan_path}")
    check_rules(the_plan, inventory, plan_path, run_memo)  # a plan file is untrusted: refused (exit 4), not a bug
    return the_plan, inventory


def _refuse(plan_path: Path, problems: list[str], what: str) -> None:
    if problems:
        shown = "\n  ".join(problems[:PROBLEMS_SHOWN])
        more = f"\n  … and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
        raise RefusedError(f"{plan_path} {what}; nothing was changed:\n  {shown}{more}",
                           hint="plan files are not edited by hand: change the inventory and run "
                                "`hybridctl plan --out` again")


PROBLEMS_SHOWN = 20


def plan_failure(plan: Plan, *, allow_unplaced: bool = False, fail_on_unplaced: bool = False,
                 allow_over_budget: bool = False) -> HybridctlError | None:
    """Why a plan may not be applied though it breaks no rule: over the budget (unless allow_over_budget), or
    work left unplaced that must run (fixed-tier work by default; any with fail_on_unplaced; none with
    allow_unplaced). `plan` exits 1 with this, and writes the plan file only of a plan over budget (marked so:
    spec, "Budget"); `apply` (of an inventory or of a plan file) refuses with it, exit 1."""
    from hybridctl.core.placement.planner import budget_violation, unplaced_failure

    violation = None if allow_over_budget else budget_violation(plan)
    if violation:
        return HybridctlError(violation, hint="raise policies.monthly_budget_usd, shed lower tiers' work with "
                              "policies.budget_action: shed, or reduce replicas or hours; apply takes the plan as it "
                              "is with --allow-over-budget")
    failing = unplaced_failure(plan, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced)
    if failing:
        return HybridctlError(failing, hint="the Unplaced table says which constraint bound each one; "
                              + ("pass --allow-unplaced to accept it" if not fail_on_unplaced
                                 else "drop --fail-on-unplaced to accept unplaced work outside the fixed tier"))
    return None


def site_hosts(inventory_path: Path, sites: Sequence[str]) -> AnsibleInventory:
    """The on-prem and edge hosts of an inventory (only those at `sites`, when any are named),
    with the variables the playbooks read, for a playbook run outside apply (discover, bundle trust)."""
    from hybridctl.core.deploy.ansible_inventory import build_ansible_inventory
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.operations.week import planned

    loaded = load_inventory(inventory_path).inventory
    unknown = sorted(set(sites) - {s.name for s in loaded.sites})
    if unknown:
        raise UsageError(f"--site {', '.join(unknown)}: no such site in the inventory")
    hosts = build_ansible_inventory(loaded, planned(loaded))
    if sites:
        hosts = hosts.restrict(h for h, v in hosts.hostvars.items() if v.get("hybridctl_site") in sites)
    if not hosts.hosts:
        raise UsageError("the inventory declares no on-prem or edge hosts" + (" at those sites" if sites else ""))
    return hosts
