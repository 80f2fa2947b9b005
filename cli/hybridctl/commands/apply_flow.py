"""The flows behind apply, status and destroy: preconditions, approval, execution, reports.

Imported only when one of those commands runs (it pulls in the executor and the drivers).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console

from hybridctl.commands.common import (
    PROBLEMS_SHOWN,
    check_rules,
    looks_like_plan,
    read_plan,
    require_state_dir,
)
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.core.steps import CLOUD_KINDS, BundleRef, DeployedStep, StepGraph
from hybridctl.drivers.ansible import SshOptions
from hybridctl.drivers.pulumi import CloudDriver
from hybridctl.drivers.state import LockHolder, State, StateStore, is_database_url, now_iso, open_state
from hybridctl.errors import HybridctlError, PrerequisiteError, RefusedError, UsageError
from hybridctl.executor import RunReport, StepRunner, StepStatus, pending_for, run_operation
from hybridctl.paths import playbooks_dir, templates_dir
from hybridctl.render.apply import (
    PlainProgress,
    RichProgress,
    progress_for,
    render_ansible_inventory,
    render_run_report,
    render_step_plan,
)
from hybridctl.render.console import stderr, stdout
from hybridctl.runners import check_cloud_credentials, cloud_driver, default_runners

INTERRUPTED = 130
SKIP_CLOUD_HINT = "or pass --skip-cloud to configure only the on-prem and edge sites"


# --- shared pieces -------------------------------------------------------------------------------


def open_store(state: str | Path | None) -> StateStore:
    """The store --state / $HYBRIDCTL_STATE names: a directory, or a postgresql:// URL."""
    if state is not None and not is_database_url(str(state)):
        require_state_dir(Path(state))
    return open_state(state, notify=lambda message: stderr().print(message, markup=False))


@contextlib.contextmanager
def locked(store: StateStore, command: str, timeout_s: float, err: Console) -> Iterator[StateStore]:
    """The state lock, saying so when it waits for another run or recovers a dead one's lock."""
    def recovered(holder: LockHolder) -> None:
        err.print(f"recovered the state lock: its holder, {holder.describe()}, is no longer running"
                  + (f"; stopped {holder.leftovers_stopped} process(es) it left running" if holder.leftovers_stopped
                     else ""))

    def waiting(holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "another process"
        err.print(f"the state is locked by {who}; waiting up to {timeout_s:g}s")

    with store.locked(command=command, timeout_s=timeout_s, on_recovered=recovered, on_wait=waiting) as held:
        yield held


def ssh_options(store: StateStore, known_hosts: Path | None, ssh_key: Path | None) -> SshOptions:
    """Host keys are always checked: against --known-hosts, or the state's own known_hosts file."""
    if known_hosts is not None:
        if not known_hosts.is_file():
            raise UsageError(f"--known-hosts {known_hosts}: no such file")
        path = known_hosts.resolve()
    else:
        path = store.known_hosts_path
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
    if ssh_key is not None and not ssh_key.is_file():
        raise UsageError(f"--ssh-key {ssh_key}: no such file")
    return SshOptions(known_hosts=path, private_key=ssh_key.resolve() if ssh_key else None)


def confirm(auto_approve: bool, what: str, question: str) -> None:
    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise RefusedError(f"{what} needs approval, and there is no terminal to ask on",
                           hint="review the steps above, then pass --auto-approve (e.g. in CI)")
    if not typer.confirm(question, default=False):
        raise RefusedError(f"{what} canceled: not approved")


def prepare_cloud(store: StateStore, graph: StepGraph, skip_cloud: bool, err: Console) -> tuple[CloudDriver | None, dict[str, str]]:
    """The cloud driver, checked before anything runs; or the cloud steps to skip."""
    cloud_steps = [s for s in graph if s.kind in CLOUD_KINDS]
    if not cloud_steps:
        return None, {}
    if skip_cloud:
        err.print(f"skipping {len(cloud_steps)} cloud step(s) (--skip-cloud): "
                  + ", ".join(s.id for s in cloud_steps))
        return None, {s.id: "skipped: --skip-cloud" for s in cloud_steps}
    try:
        driver = cloud_driver(store.root)
        check_cloud_credentials(driver, cloud_steps)
    except PrerequisiteError as exc:
        raise PrerequisiteError(f"the plan has cloud steps, but {exc.message}",
                                hint="; ".join(h for h in (exc.hint, SKIP_CLOUD_HINT) if h)) from None
    return driver, {}


def assets_digest() -> str:
    """One digest of the playbooks and node templates: an edited playbook re-runs its steps on resume."""
    digest = hashlib.sha256()
    for root in (playbooks_dir(), templates_dir() / "node"):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def runners_for(store: StateStore, driver: CloudDriver | None, ssh: SshOptions) -> dict[str, StepRunner]:
    return default_runners(cloud=driver, playbooks=playbooks_dir(), ssh=ssh, work_dir=store.ansible_dir)


def statuses(store: StateStore, state: State, operation: str, graph: StepGraph) -> dict[str, StepStatus]:
    pending = pending_for(state, operation)
    done = store.journal.done_keys(pending.run_ids) if pending else {}
    return {s.id: StepStatus.ALREADY_DONE if done.get(s.id) == s.key else StepStatus.PENDING for s in graph}


def execute_and_report(store: StateStore, graph: StepGraph, runners: dict[str, StepRunner], out: Console, *,
                       operation: str, target: str, skip: dict[str, str], parallelism: int,
                       on_success: Callable[[State, RunReport], State] | None, detail: Mapping[str, object] | None = None,
                       observer: PlainProgress | RichProgress | None = None, subject: str | None = None,
                       when_interrupted: str | None = None, retry: str = "run it again") -> int:
    """Run the steps through the executor, render the report, and say what to do next; the exit code."""
    observer = observer or progress_for(out)
    try:
        report = run_operation(store, graph, runners, operation=operation, target=target, detail=detail, skip=skip,
                               parallelism=parallelism, observer=observer, on_success=on_success)
    finally:
        observer.close()
    render_run_report(out, report)
    subject = subject or operation
    if report.status == "interrupted":
        out.print(f"{subject} interrupted: {when_interrupted or f'run `hybridctl {operation}` again to resume'}")
        return INTERRUPTED
    if not report.succeeded:
        out.print(f"{subject} failed: fix the cause, then {retry}; finished steps are not repeated")
        return 1
    return 0


def deployed_steps(state: State) -> dict[str, DeployedStep]:
    return {sid: DeployedStep(sid, d.kind, d.site, d.record) for sid, d in state.deployed.items()}


# --- apply ---------------------------------------------------------------------------------------


def check_fresh(plan: Plan, inventory: Inventory, state: State, plan_path: Path, inventory_path: Path) -> None:
    """Terraform's rule: what runs is what was reviewed, against the state it was reviewed against."""
    from hybridctl.core.plan.costs import inventory_digest

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
    from hybridctl.commands.failover_flow import active_failovers
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan.serialize import plan_from_dict

    active = active_failovers(store)
    unfinished = state.pending.target if state.pending is not None and state.pending.operation == "runbook" else None
    if end_failover or not (active or unfinished):
        return active
    moves = []
    if state.applied_plan is not None:
        changes = diff_plans(plan_from_dict(dict(state.applied_plan), "the applied plan"), plan).workloads
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


def load_bundles(directory: Path, public_key: Path | None, workloads: set[str], err: Console) -> dict[str, BundleRef]:
    """Verify every bundle the plan can use before anything runs: a bad bundle stops the apply here."""
    from hybridctl.drivers.bundle import verify_bundle

    if public_key is None:
        raise UsageError("--bundles needs --bundle-public-key FILE: bundles are verified before they are synced")
    if not directory.is_dir():
        raise UsageError(f"--bundles {directory}: no such directory")
    refs: dict[str, BundleRef] = {}
    for workload in sorted(workloads):
        bundle = directory / workload
        if not bundle.is_dir():
            continue
        verification = verify_bundle(bundle, public_key)
        manifest = verification.manifest
        assert manifest is not None and verification.manifest_sha256 is not None
        refs[workload] = BundleRef(workload, str(bundle.resolve()), manifest.model, manifest.version,
                                   verification.manifest_sha256)
        err.print(f"bundle {workload}: {manifest.model} {manifest.version} verified")
    return refs


def run_apply(*, source: Path, inventory: Path | None, state: str | None, lock_timeout_s: float, auto_approve: bool,
              skip_cloud: bool, bundles: Path | None, bundle_public_key: Path | None, known_hosts: Path | None,
              ssh_key: Path | None, parallelism: int, end_failover: bool = False,
              allow_machine_removal: bool = False, verify_full: bool = False) -> int:
    from hybridctl.commands.failover_flow import end_failovers
    from hybridctl.core.inventory.loader import load_inventory
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan.planner import budget_violation
    from hybridctl.core.plan.planner import plan as make_plan
    from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
    from hybridctl.core.plan.verify import verified
    from hybridctl.core.plan_summary import summarize
    from hybridctl.core.stackconfig import plan_digest
    from hybridctl.core.steps import apply_steps
    from hybridctl.drivers.files import atomic_write_text
    from hybridctl.render.plan import render_plan

    out, err = stdout(), stderr()
    store = open_store(state)
    ssh = ssh_options(store, known_hosts, ssh_key)
    with locked(store, f"apply {source}", lock_timeout_s, err):
        current = store.read()
        if looks_like_plan(source):
            if inventory is None:
                raise UsageError(f"apply {source} needs --inventory PATH: the inventory the plan was made from",
                                 hint="it is checked against the plan's inventory digest, and lists the hosts")
            the_plan = read_plan(source)
            loaded = load_inventory(inventory)
            check_fresh(the_plan, loaded.inventory, current, source, inventory)
            check_rules(the_plan, loaded.inventory, source)
            inventory_path = inventory
        else:
            loaded = load_inventory(source)
            inventory_path = source
            previous = plan_from_dict(dict(current.applied_plan)) if current.applied_plan else None
            the_plan = replace(verified(loaded.inventory, make_plan(loaded.inventory, previous=previous)),
                               base_serial=current.serial)
            changes = diff_plans(previous, the_plan) if previous else None
            render_plan(out, the_plan, changes, summary=summarize(the_plan, changes, "applied"))
            violation = budget_violation(the_plan)
            if violation:
                raise HybridctlError(violation, hint="raise policies.monthly_budget_usd, or reduce replicas or hours")
        failovers = guard_failovers(store, current, the_plan, end_failover)
        digest = plan_digest(the_plan)
        refs = None
        if bundles is not None:
            refs = load_bundles(bundles, bundle_public_key, {p.workload for p in the_plan.placements}, err)
        step_plan = apply_steps(the_plan, loaded.inventory, bundles=refs,
                                bundle_public_key=str(bundle_public_key.resolve()) if bundle_public_key else None,
                                deployed=deployed_steps(current), verify_full=verify_full,
                                asset_digests=dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"),
                                                            assets_digest()))
        driver, skip = prepare_cloud(store, step_plan.graph, skip_cloud, err)
        pending = pending_for(current, "apply")
        shown = statuses(store, current, "apply", step_plan.graph)
        if pending:
            done = sum(1 for s in shown.values() if s is StepStatus.ALREADY_DONE)
            out.print(f"resuming the unfinished apply ({len(pending.run_ids)} earlier run(s)): "
                      f"{done} step(s) already done are not run again")
        render_step_plan(out, f"apply {digest[:19]}… (state serial {current.serial})", step_plan, shown, skip)
        if not skip_cloud:
            from hybridctl.commands.cloud_changes import approve_destructive

            applied = plan_from_dict(dict(current.applied_plan)) if current.applied_plan else None
            approve_destructive(out, loaded.inventory, the_plan, applied, auto_approve=auto_approve,
                                allow_machine_removal=allow_machine_removal)
        if any(s is StepStatus.PENDING for s in shown.values()) or not current.applied_plan:
            confirm(auto_approve, "apply", "Apply these steps?")
        from hybridctl.core.ansible_inventory import build_ansible_inventory

        atomic_write_text(store.ansible_dir / "inventory.yml",
                          render_ansible_inventory(build_ansible_inventory(loaded.inventory, the_plan),
                                                   loaded.inventory.name), mode=0o600)

        def record_applied(state_: State, report: RunReport) -> State:
            del report
            if failovers:
                end_failovers(store)
            return replace(state_, applied_plan=plan_to_dict(the_plan, plan_file=True), applied_plan_digest=digest,
                           applied_at=now_iso(), inventory_path=str(inventory_path.resolve()),
                           site_kinds={s.name: s.kind.value for s in loaded.inventory.sites})

        return execute_and_report(store, step_plan.graph, runners_for(store, driver, ssh), out, operation="apply",
                                  target=digest, skip=skip, parallelism=parallelism, on_success=record_applied)


# --- destroy -------------------------------------------------------------------------------------


def run_destroy(*, site: str | None, state: str | None, lock_timeout_s: float, auto_approve: bool, skip_cloud: bool,
                known_hosts: Path | None, ssh_key: Path | None, parallelism: int) -> int:
    from hybridctl.core.steps import destroy_steps

    out, err = stdout(), stderr()
    store = open_store(state)
    ssh = ssh_options(store, known_hosts, ssh_key)
    with locked(store, "destroy" + (f" --site {site}" if site else ""), lock_timeout_s, err):
        current = store.read()
        step_plan = destroy_steps(deployed_steps(current), site=site)
        if not len(step_plan.graph):
            where = f" at site {site}" if site else ""
            out.print(f"nothing to destroy{where}: the state in {store.location} records nothing hybridctl made there")
            return 0
        driver, skip = prepare_cloud(store, step_plan.graph, skip_cloud, err)
        render_step_plan(out, "destroy" + (f" --site {site}" if site else ""), step_plan,
                         statuses(store, current, "destroy", step_plan.graph), skip)
        confirm(auto_approve, "destroy", "Destroy these resources?")

        def record_destroyed(state_: State, report: RunReport) -> State:
            del report
            if state_.deployed:
                return state_
            return replace(state_, applied_plan=None, applied_plan_digest=None, applied_at=None, site_kinds={})

        return execute_and_report(store, step_plan.graph, runners_for(store, driver, ssh), out, operation="destroy",
                                  target=f"site={site}" if site else "all", skip=skip, parallelism=parallelism,
                                  on_success=record_destroyed)


def run_status(*, state: str | None, drift: bool, detailed_exitcode: bool, as_json: bool, lock_timeout_s: float,
               known_hosts: Path | None, ssh_key: Path | None) -> int:
    from hybridctl.commands.status_flow import status_report

    return status_report(open_store(state), drift=drift, detailed_exitcode=detailed_exitcode, as_json=as_json,
                         lock_timeout_s=lock_timeout_s, ssh_factory=lambda store: ssh_options(store, known_hosts, ssh_key))
