"""apply and destroy: preconditions, approval, execution, reports.

Imported only when one of those commands runs (it pulls in the executor and the drivers).
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.state import State, StateStore, now_iso
from hybridctl.errors import RefusedError, UsageError
from hybridctl.executor import RunReport, StepStatus, pending_for
from hybridctl.operations.common import (
    PROBLEMS_SHOWN,
    check_rules,
    looks_like_plan,
    plan_failure,
    read_plan,
)
from hybridctl.operations.run import (
    assets_digest,
    confirm,
    deployed_steps,
    execute_and_report,
    load_bundles,
    locked,
    open_store,
    prepare_cloud,
    runners_for,
    ssh_options,
    statuses,
)
from hybridctl.render.apply import (
    render_ansible_inventory,
    render_step_plan,
)
from hybridctl.render.terminal import Terminal

# --- apply ---------------------------------------------------------------------------------------


def check_fresh(plan: Plan, inventory: Inventory, state: State, plan_path: Path, inventory_path: Path) -> None:
    """Terraform's rule: what runs is what was reviewed, against the state it was reviewed against."""
    from hybridctl.core.inventory.digest import inventory_digest

    actual = inventory_digest(inventory)
    if plan.inventory_digest != actual:
        raise RefusedError(f"{plan_path} was made from another inventory: {inventory_path} has changed since "
                           f"(plan: {plan.inventory_digest[:19]}…, now: {actual[:19]}…)",
                           hint=f"make and review a new plan: hybridctl plan {inventory_path} --out {plan_path}")
    if plan.base_serial is None and state.serial != 0:
        raise RefusedError(f"{plan_path} does not record the state serial it was made against, and the state "
                           f"has changed since it was empty (serial {state.serial})",
                           hint=f"make a new plan: hybridctl plan {inventory_path} --out {plan_path}")
    if plan.base_serial is not None and plan.base_serial != state.serial:
        raise RefusedError(f"{plan_path} is stale: it was made against state serial {plan.base_serial}, and the "
                           f"state is now at serial {state.serial} (last applied {state.applied_at or 'never'})",
                           hint=f"make and review a new plan: hybridctl plan {inventory_path} --out {plan_path}")


def guard_failovers(store: StateStore, state: State, plan: Plan, end_failover: bool) -> list[str]:
    """Refuse to undo a failover silently: apply would put work back on the sites it fenced.

    Returns the failovers in effect, which a successful apply with --end-failover ends.
    """
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.operations.run import active_failovers, applied_of

    active = active_failovers(store)
    unfinished = state.pending.target if state.pending is not None and state.pending.operation == "runbook" else None
    if end_failover or not (active or unfinished):
        return active
    moves = []
    applied = applied_of(store, state)
    if applied is not None:
        changes = diff_plans(applied, plan).workloads
        moves = [f"{c.workload}: {c.describe()}" for c in changes if c.change in ("moved", "resized", "added")]
    shown = "".join(f"\n  {m}" for m in moves[:PROBLEMS_SHOWN])
    more = f"\n  … and {len(moves) - PROBLEMS_SHOWN} more" if len(moves) > PROBLEMS_SHOWN else ""
    what = (f"runbook {unfinished} is unfinished" if unfinished
            else f"failover {', '.join(active)} is in effect" if len(active) == 1
            else f"failovers {', '.join(active)} are in effect")
    raise RefusedError(
        f"{what}; applying now would undo it without a rollback. It would change {len(moves)} workload(s):"
        f"{shown}{more}" if moves else f"{what}; applying now would end it without a rollback",
        hint=("finish it with `hybridctl runbook resume`, or undo it with `hybridctl runbook rollback`"
              if unfinished else "undo it with `hybridctl runbook rollback` once the sites are back")
        + "; or pass --end-failover to apply anyway and end it")


def run_apply(*, source: Path, inventory: Path | None, state: str | None, lock_timeout_s: float, auto_approve: bool,
              skip_cloud: bool, bundles: Path | None, bundle_public_key: Path | None, known_hosts: Path | None,
              ssh_key: Path | None, parallelism: int, end_failover: bool = False,
              allow_machine_removal: bool = False, verify_full: bool = False, allow_unplaced: bool = False,
              fail_on_unplaced: bool = False, allow_over_budget: bool = False, view: Terminal) -> int:
    from hybridctl.core.deploy.stackconfig import plan_digest
    from hybridctl.core.deploy.steps import apply_steps, cloud_stacks
    from hybridctl.core.placement.planner import WorkloadFacts
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan.serialize import plan_to_dict
    from hybridctl.core.plan.summary import summarize
    from hybridctl.drivers.files import atomic_write_text
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.operations.run import applied_of, set_active_failovers
    from hybridctl.operations.week import planned
    from hybridctl.render.plan import render_plan

    store = open_store(state, view)
    ssh = ssh_options(store, known_hosts, ssh_key)
    with locked(store, f"apply {source}", lock_timeout_s, view):
        current = store.read()
        if looks_like_plan(source):
            if inventory is None:
                raise UsageError(f"apply {source} needs --inventory PATH: the inventory the plan was made from",
                                 hint="it is checked against the plan's inventory digest, and lists the hosts")
            the_plan = read_plan(source, checked=False)  # check_rules checks it with the inventory
            loaded = load_inventory(inventory)
            check_fresh(the_plan, loaded.inventory, current, source, inventory)
            check_rules(the_plan, loaded.inventory, source)
            # who owns a workload and what type it is are the inventory's, as `plan` wrote them: a forged plan's
            # `teams` moved a workload's showback to another team, and no rule of the checker looks at them
            facts = WorkloadFacts.of(loaded.inventory)
            the_plan = replace(the_plan, workload_types=facts.types, teams=facts.teams)
            inventory_path = inventory
            failure = plan_failure(the_plan, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced,
                                   allow_over_budget=allow_over_budget)
            if failure is not None:  # what `plan` fails on: a plan file made so, or marked over budget
                raise failure
        else:
            loaded = load_inventory(source)
            inventory_path = source
            previous = applied_of(store, current)
            the_plan = replace(planned(loaded.inventory, previous=previous), base_serial=current.serial)
            changes = diff_plans(previous, the_plan) if previous else None
            render_plan(view.out, the_plan, changes, summary=summarize(the_plan, changes, "applied"))
            failure = plan_failure(the_plan, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced,
                                   allow_over_budget=allow_over_budget)
            if failure is not None:  # as `plan` fails on it: over budget, or work unplaced that must run
                raise failure
        failovers = guard_failovers(store, current, the_plan, end_failover)
        digest = plan_digest(the_plan)
        refs = None
        if bundles is not None:
            refs = load_bundles(bundles, bundle_public_key, {p.workload for p in the_plan.placements}, view)
        # the stacks tagged with the digest worked out above (serialising a fleet's plan again would give the same)
        step_plan = apply_steps(the_plan, loaded.inventory, stacks=cloud_stacks(loaded.inventory, the_plan, digest),
                                bundles=refs,
                                bundle_public_key=str(bundle_public_key.resolve()) if bundle_public_key else None,
                                deployed=deployed_steps(current), verify_full=verify_full,
                                asset_digests=dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"),
                                                            assets_digest()))
        from hybridctl.operations.binding import bind_teardown, state_location

        # the stacks of the state that the plan drops are taken down: the inventory's own, or nothing runs
        bind_teardown(step_plan.graph, loaded.inventory, state_location(store))
        driver, skip = prepare_cloud(store, step_plan.graph, skip_cloud, view)
        pending = pending_for(current, "apply")
        shown = statuses(store, current, "apply", step_plan.graph)
        if pending:
            done = sum(1 for s in shown.values() if s is StepStatus.ALREADY_DONE)
            view.say(f"resuming the unfinished apply ({len(pending.run_ids)} earlier run(s)): "
                      f"{done} step(s) already done are not run again")
        render_step_plan(view.out, f"apply {digest[:19]}… (state serial {current.serial})", step_plan, shown, skip)
        if not skip_cloud:
            from hybridctl.operations.cloud_changes import approve_destructive

            applied = applied_of(store, current)
            approve_destructive(view.out, loaded.inventory, the_plan, applied, auto_approve=auto_approve,
                                allow_machine_removal=allow_machine_removal)
        if any(s is StepStatus.PENDING for s in shown.values()) or not current.applied_plan:
            confirm(auto_approve, "apply", "Apply these steps?", view)
        from hybridctl.core.deploy.ansible_inventory import build_ansible_inventory

        atomic_write_text(store.ansible_dir / "inventory.yml",
                          render_ansible_inventory(build_ansible_inventory(loaded.inventory, the_plan),
                                                   loaded.inventory.name), mode=0o600)

        def record_applied(state_: State, report: RunReport) -> State:
            del report
            if failovers:
                set_active_failovers(store, [])
            return replace(state_, applied_plan=plan_to_dict(the_plan, plan_file=True), applied_plan_digest=digest,
                           applied_at=now_iso(), inventory_path=str(inventory_path.resolve()),
                           site_kinds={s.name: s.kind.value for s in loaded.inventory.sites})

        again = shlex.join(["apply", str(source), *(["--inventory", str(inventory)] if looks_like_plan(source) and
                                                      inventory is not None else [])])
        return execute_and_report(store, step_plan.graph, runners_for(store, driver, ssh), view, operation="apply",
                                  target=digest, skip=skip, parallelism=parallelism, on_success=record_applied,
                                  detail={"command": again})


# --- destroy -------------------------------------------------------------------------------------


def run_destroy(*, site: str | None, state: str | None, lock_timeout_s: float, auto_approve: bool, skip_cloud: bool,
                known_hosts: Path | None, ssh_key: Path | None, parallelism: int, view: Terminal,
                inventory: Path | None = None) -> int:
    """`inventory`: what the state's stacks are bound to (default: the one the state records as applied)."""
    from hybridctl.core.deploy.stepbind import TEARDOWN_KINDS
    from hybridctl.core.deploy.steps import destroy_steps
    from hybridctl.operations.binding import bind_teardown, state_inventory, state_location

    store = open_store(state, view)
    ssh = ssh_options(store, known_hosts, ssh_key)
    with locked(store, "destroy" + (f" --site {site}" if site else ""), lock_timeout_s, view):
        current = store.read()
        step_plan = destroy_steps(deployed_steps(current), site=site)
        if not len(step_plan.graph):
            where = f" at site {site}" if site else ""
            view.say(f"nothing to destroy{where}: the state in {store.location} records nothing hybridctl made there")
            return 0
        if any(s.kind in TEARDOWN_KINDS for s in step_plan.graph):
            # a stack is destroyed only if it is the inventory's: a state names it, and a state can be edited
            bind_teardown(step_plan.graph, state_inventory(inventory, current, "destroy"), state_location(store))
        driver, skip = prepare_cloud(store, step_plan.graph, skip_cloud, view)
        render_step_plan(view.out, "destroy" + (f" --site {site}" if site else ""), step_plan,
                         statuses(store, current, "destroy", step_plan.graph), skip)
        confirm(auto_approve, "destroy", "Destroy these resources?", view)

        def record_destroyed(state_: State, report: RunReport) -> State:
            del report
            if state_.deployed:
                return state_
            return replace(state_, applied_plan=None, applied_plan_digest=None, applied_at=None, site_kinds={})

        return execute_and_report(store, step_plan.graph, runners_for(store, driver, ssh), view, operation="destroy",
                                  target=f"site={site}" if site else "all", skip=skip, parallelism=parallelism,
                                  on_success=record_destroyed,
                                  detail={"command": shlex.join(["destroy", *(["--site", site] if site else [])])})
