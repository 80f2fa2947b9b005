"""Steps read back from a runbook or a state, bound to the inventory and the plan they claim to come from
before any of them runs (core/deploy/stepbind.py): `runbook resume`, the teardown steps of apply, failover,
rollback and destroy (a state's deployed records). A step that is not what they make is refused, exit 4,
before the cloud driver is asked for anything. The digests stay, but a forger works them out again: they are
not what keeps a forged step from running.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hybridctl.core.deploy.steps import BundleRef, Step, StepKind
from hybridctl.core.failover.runbook import Runbook, RunbookKind
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.state import DirectoryBackend, State, StateStore
from hybridctl.errors import RefusedError, UsageError

_STATE_HINT = ("hybridctl's state is not edited by hand: restore it from a backup; a stack the inventory no longer "
               "names (a site taken out of it) is destroyed after putting the site back, or with pulumi itself")
_RUNBOOK_HINT = ("runbook files are not edited: restore it from a backup, or compute the runbook again with "
                 "`hybridctl failover EVENT…`")


def state_location(store: StateStore) -> str:
    """The state's file (a state directory's state.json) or its location, for messages."""
    return str(store.state_path) if isinstance(store.backend, DirectoryBackend) else store.location


def state_inventory(option: Path | None, state: State, command: str) -> Inventory:
    """The inventory a run binds its steps to: --inventory, else the one the state records as applied."""
    from hybridctl.drivers.inventory_files import load_inventory

    path = option or (Path(state.inventory_path) if state.inventory_path else None)
    if path is None:
        raise UsageError(f"{command}: the state records no inventory path: pass --inventory PATH",
                         hint="the inventory the state was applied from: what the state's steps are checked against")
    return load_inventory(path).inventory


def bind_teardown(steps: Iterable[Step], inventory: Inventory, where: str, hint: str = _STATE_HINT) -> None:
    """Every step that takes a stack down (its stack read from a state or a runbook) takes down one of the
    inventory's; `where` names the file it was read from."""
    from hybridctl.core.deploy.stepbind import TEARDOWN_KINDS, StepBindingError, check_teardown, stack_owners

    owners = stack_owners(inventory)
    for step in steps:
        if step.kind in TEARDOWN_KINDS:
            try:
                check_teardown(step, inventory, owners)
            except StepBindingError as exc:
                raise RefusedError(f"{where}: {exc}: a stack that is not this inventory's; nothing was run",
                                   hint=hint) from None


def bind_runbook(runbook: Runbook, steps: Iterable[Step], inventory: Inventory, where: str, *,
                 bundles: dict[str, BundleRef] | None, bundle_public_key: Path | None) -> None:
    """A runbook read back: its plan (after_plan) keeps the inventory's rules (a failover's, the inventory's under
    its events), and each step left to run is the step apply makes of that plan and the inventory, with the
    bundles and key this run was given."""
    from hybridctl.core.deploy.stackconfig import plan_digest
    from hybridctl.core.deploy.stepbind import DERIVED_KINDS, TEARDOWN_KINDS, StepBindingError, check_derived
    from hybridctl.core.deploy.steps import apply_steps, cloud_stacks
    from hybridctl.core.inventory.digest import inventory_digest
    from hybridctl.operations.run import assets_digest

    pending = [s for s in steps if s.kind in DERIVED_KINDS or s.kind in TEARDOWN_KINDS]
    if not pending:
        return
    runbook_plan = runbook.after
    if runbook_plan.inventory_digest != inventory_digest(inventory):
        raise RefusedError(f"{where}: its after_plan was made from another inventory than {inventory.name}'s as it "
                           "is now: its steps cannot be checked against it; nothing was run",
                           hint="compute a new runbook from the inventory as it is: hybridctl failover EVENT…")
    check_plan_rules(runbook_plan, _checked_inventory(runbook, inventory, where), f"{where}: its after_plan",
                     failover=runbook.kind is RunbookKind.FAILOVER)
    key = str(bundle_public_key.resolve()) if bundle_public_key else None
    derived = apply_steps(runbook_plan, inventory, stacks=cloud_stacks(inventory, runbook_plan,
                                                                       plan_digest(runbook_plan)),
                          bundles=bundles, bundle_public_key=key,
                          asset_digests=dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"),
                                                      assets_digest())).graph
    for step in pending:
        if step.kind not in DERIVED_KINDS:
            continue
        try:
            check_derived(step, derived, "its after_plan")
        except StepBindingError as exc:
            hint = _RUNBOOK_HINT
            if step.kind == StepKind.MODEL_SYNC:
                hint = ("pass the --bundles and --bundle-public-key the failover was given (the bundles are "
                        "verified again); or " + _RUNBOOK_HINT)
            raise RefusedError(f"{where}: {exc}: the step is not what the inventory and the runbook's plan make; "
                               "nothing was run", hint=hint) from None
    bind_teardown(pending, inventory, where, _RUNBOOK_HINT)


def _checked_inventory(runbook: Runbook, inventory: Inventory, where: str) -> Inventory:
    """The inventory a runbook's after_plan was checked against when it was made: a failover's, the inventory
    disrupted by its events (core/failover/pipeline.py); a rollback's, the inventory itself."""
    from hybridctl.core.failover.disrupt import disrupt
    from hybridctl.core.failover.events import parse_event
    from hybridctl.core.failover.replan import Replan, replanned_inventory

    if runbook.kind is not RunbookKind.FAILOVER:
        return inventory
    events = []
    for index, text in enumerate(runbook.events):
        kind, _, argument = text.partition(" ")
        events.append(parse_event(kind, argument, where=f"{where}: events[{index}]: "))
    return replanned_inventory(Replan(disrupt(inventory, events, runbook.before), runbook.before, runbook.after,
                                      {}, 0))


def check_plan_rules(plan: Plan, inventory: Inventory, what: str, *, failover: bool = False) -> None:
    """A plan read back from a runbook (what its steps are derived from) keeps the inventory's rules, as a plan
    file does (the independent checker, core/checker/verify.py); `failover`: a failover plan, `inventory` the
    disrupted one."""
    from hybridctl.core.checker.verify import plan_violations
    from hybridctl.operations.common import PROBLEMS_SHOWN

    problems = plan_violations(inventory, plan, failover=failover)
    if problems:
        shown = "\n  ".join(problems[:PROBLEMS_SHOWN])
        more = f"\n  … and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
        raise RefusedError(f"{what} breaks the inventory's rules; nothing was run:\n  {shown}{more}",
                           hint=_RUNBOOK_HINT)
