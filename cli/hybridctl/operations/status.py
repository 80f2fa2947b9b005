"""status: the applied plan, each site and pool, the last run, and drift.

Drift of cloud stacks comes from a Pulumi refresh in preview-only mode (nothing is written);
drift of nodes from node.yml in Ansible check mode with --diff: a host with a task that
would change has drifted. Both run under the state lock, so they never race an apply.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hybridctl.core.deploy.steps import Step, StepKind, make_step
from hybridctl.drivers.ansible import PlaybookResult, SshOptions
from hybridctl.drivers.state import Deployed, State, StateStore
from hybridctl.errors import ChangesFound, ExitCode, HybridctlError, PrerequisiteError, RefusedError
from hybridctl.render.terminal import Terminal

_CLOUD = (StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES)


@dataclass(frozen=True)
class DriftItem:
    step: str
    site: str | None
    drifted: bool | None  # None: could not be checked
    summary: str
    hosts: dict[str, str] = field(default_factory=dict)  # host -> what drifted or went wrong


@dataclass(frozen=True)
class DriftReport:
    items: tuple[DriftItem, ...]
    notes: tuple[str, ...]

    @property
    def found(self) -> bool:
        return any(i.drifted for i in self.items)

    @property
    def errors(self) -> bool:
        return any(i.drifted is None for i in self.items)


def _step_of(deployed: Deployed) -> Step:
    return make_step(deployed.step_id, deployed.kind, deployed.step_id, deployed.record, site=deployed.site)


def _cloud_drift(store: StateStore, cloud: list[Deployed], notes: list[str]) -> list[DriftItem]:
    from hybridctl.runners import cloud_driver, stack_spec

    if not cloud:
        return []
    try:
        driver = cloud_driver(store.root)
    except PrerequisiteError as exc:
        notes.append(f"cloud drift not checked: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
        return []
    items = []
    for deployed in cloud:
        spec = stack_spec(_step_of(deployed))
        try:
            result = driver.refresh(spec, preview_only=True)
        except Exception as exc:  # one stack that cannot be read must not hide the others
            items.append(DriftItem(deployed.step_id, deployed.site, None, f"refresh failed: {exc}"))
            continue
        changed = {op: n for op, n in result.summary.items() if op != "same" and n}
        summary = ", ".join(f"{n} {op}" for op, n in sorted(changed.items())) or "in sync"
        items.append(DriftItem(deployed.step_id, deployed.site, result.has_changes,
                               f"{spec.project}/{spec.stack_name}: {summary}",
                               {c.name: c.op for c in result.changes}))
    return items


def _node_drift(store: StateStore, nodes: list[Deployed], ssh: SshOptions, notes: list[str]) -> list[DriftItem]:
    from hybridctl import runners
    from hybridctl.executor import DEFAULT_PARALLELISM
    from hybridctl.paths import playbooks_dir

    def check(deployed: Deployed) -> PlaybookResult:
        return runners.run_ansible_step(_step_of(deployed), None, playbooks=playbooks_dir(), ssh=ssh,
                                        work_dir=store.ansible_dir, check=True, diff=True)

    # All sites at once, as apply configures them: each run waits mostly on its own hosts.
    with ThreadPoolExecutor(max_workers=max(1, min(len(nodes), DEFAULT_PARALLELISM))) as pool:
        results = list(pool.map(check, nodes))
    items = []
    for deployed, result in zip(nodes, results, strict=True):
        hosts: dict[str, str] = {}
        unknown = False
        for host in result.hosts:
            if host.state.value in ("failed", "timed_out", "canceled", "unreachable"):
                unknown = True
                hosts[host.host] = f"{host.state.value}: {(host.message or '').splitlines()[0][:200] if host.message else ''}"
            elif host.changed:
                hosts[host.host] = f"{host.changed} task(s) would change"
        drifted = any("would change" in v for v in hosts.values())
        no_kubelet = [h.host for h in result.hosts if "kubelet" in h.data and h.data["kubelet"] is None]
        if no_kubelet:
            notes.append(f"{deployed.site}: no kubelet on {', '.join(no_kubelet)}: not Kubernetes nodes "
                         "(their labels are only in /etc/hybridctl/node.yaml)")
        if not result.hosts and result.error:
            unknown = True
            hosts["-"] = result.error.splitlines()[-1][:200]
        summary = (f"{sum('would change' in v for v in hosts.values())} of {len(result.hosts)} host(s) drifted"
                   if drifted else f"{len(result.hosts)} host(s) in sync")
        items.append(DriftItem(deployed.step_id, deployed.site, True if drifted else (None if unknown else False),
                               summary + (" (some hosts could not be checked)" if unknown else ""), hosts))
    return items


def check_drift(store: StateStore, state: State, ssh: SshOptions,
                unreachable: dict[str, str] | None = None) -> DriftReport:
    """`unreachable`: site -> why (fenced or cut off by a failover in effect): its stacks and hosts are not
    checked (a host of a dark site would only time out, or be reported in sync from stale answers)."""
    notes: list[str] = []
    unreachable = unreachable or {}
    for site, why in sorted(unreachable.items()):
        if any(d.site == site for d in state.deployed.values()):
            notes.append(f"drift of {site} not checked: {why}")
    reachable = [d for d in state.deployed.values() if d.site not in unreachable]
    cloud = [d for d in reachable if d.kind in _CLOUD]
    nodes = [d for d in reachable if d.kind == StepKind.NODE_BASELINE]
    items = _cloud_drift(store, sorted(cloud, key=lambda d: d.step_id), notes)
    items += _node_drift(store, sorted(nodes, key=lambda d: d.step_id), ssh, notes)
    return DriftReport(tuple(items), tuple(notes))


def _site_kind(deployed: list[Deployed]) -> str:
    for d in deployed:
        if d.kind in _CLOUD:
            return "cloud"
        inventory = d.record.get("inventory", {})
        for hostvars in (inventory.get("hostvars", {}) if isinstance(inventory, dict) else {}).values():
            return str(hostvars.get("hybridctl_site_kind", "-"))
    return "-"


def status_document(store: StateStore, state: State, drift: DriftReport | None) -> dict[str, object]:
    plan = state.applied_plan or {}
    by_site: dict[str, list[Deployed]] = defaultdict(list)
    for d in state.deployed.values():
        by_site[d.site or f"cluster {d.record.get('cluster') or '-'}"].append(d)
    pools: dict[str, list[dict[str, object]]] = defaultdict(list)
    for pool in plan.get("pools", []):
        pools[pool["site"]].append({"pool": pool["pool"], "gpu": pool["gpu"], "capacity_type": pool["capacity_type"],
                                    "used_gpus": pool["used_gpus"], "capacity_gpus": pool["capacity_gpus"]})
    drift_of = {i.step: i for i in drift.items} if drift else {}
    sites = []
    for site in sorted(set(pools) | set(by_site)):
        steps = sorted(by_site.get(site, []), key=lambda d: d.step_id)
        sites.append({"site": site, "kind": state.site_kinds.get(site) or _site_kind(steps), "pools": pools.get(site, []), "steps": [
            {"step": d.step_id, "applied_at": d.applied_at, "key": d.key,
             "drift": None if d.step_id not in drift_of else {"drifted": drift_of[d.step_id].drifted,
                                                                "summary": drift_of[d.step_id].summary,
                                                                "hosts": drift_of[d.step_id].hosts}}
            for d in steps]})
    holder, alive = store.lock.holder_status()
    last = state.last_run.to_dict() if state.last_run else None
    if last is not None and last["status"] == "running" and (holder is None or alive is False):
        # Its process is gone (SIGKILL, power cut): the next run settles it as interrupted.
        who = f"pid {holder.pid} on {holder.host}" if holder is not None else f"pid {last['pid']} on {last['host']}"
        last = {**last, "status": "interrupted", "summary": f"{who} ended before the run did"}
    return {
        "format_version": 1, "state_dir": store.location, "serial": state.serial, "lineage": state.lineage,
        "applied": None if not plan else {
            "inventory": plan.get("inventory"), "plan_digest": state.applied_plan_digest,
            "applied_at": state.applied_at, "inventory_path": state.inventory_path,
            "total_usd_per_month": plan.get("total_usd_per_month"), "placements": len(plan.get("placements", [])),
            "placed_workloads": len({p.get("workload") for p in plan.get("placements", []) if isinstance(p, dict)})},
        "sites": sites,
        "last_run": last,
        "pending": None if not state.pending else {
            **state.pending.to_dict(), "resume": resume_command(
                state.pending.operation, store.option,
                holder.command if holder and not alive else _recorded_command(state.pending.detail)),
            # another operator's run holds the lock: resuming now would only wait for it
            "held_by": holder.describe() if holder is not None and alive is not False else None,
            # an unfinished runbook has two more ways out than finishing it
            "or": [] if state.pending.operation != "runbook" else [
                resume_command(state.pending.operation, store.option, None).replace(" resume ", " rollback "),
                resume_command(state.pending.operation, store.option, None).replace(" resume ", " abandon ")
                + " --reason TEXT"]},
        # A dead holder's record is not a lock; the token stays out: it would let a reader pose as the holder.
        "lock": {**holder.public(), "alive": alive} if holder is not None and alive is not False else None,
        "drift": None if drift is None else {"found": drift.found, "errors": drift.errors, "notes": list(drift.notes),
                                             "items": [i.__dict__ for i in drift.items]},
    }


def incident_document(store: StateStore, state: State) -> dict[str, object] | None:
    """The failovers in effect (oldest first), the sites they fenced or cut off and since when, and the command
    that returns from them; None when none is in effect."""
    import shlex

    from hybridctl.core.failover.events import EventKind
    from hybridctl.operations.failover import _read
    from hybridctl.operations.run import active_failovers

    try:
        chain = [_read(store, rid) for rid in active_failovers(store)]
    except HybridctlError as exc:  # status still shows the rest of the state, and says why not this
        return {"error": exc.message}
    if not chain:
        return None
    since = {r.target: r.finished_at for r in state.history if r.operation == "runbook" and r.status == "succeeded"}
    failovers, fenced, cut_off = [], [], []
    for runbook in chain:
        failovers.append({"runbook": runbook.id, "incident": runbook.incident, "events": list(runbook.events),
                          "since": since.get(runbook.id)})
        for event in runbook.events:
            kind, _, site = event.partition(" ")
            entry = {"site": site, "since": since.get(runbook.id), "runbook": runbook.id}
            if kind == EventKind.SITE_LOST.value:
                fenced.append(entry)
            elif kind == EventKind.LINK_DOWN.value:
                cut_off.append(entry)
    return {"failovers": failovers, "fenced_sites": fenced, "link_down_sites": cut_off,
            "rollback": f"hybridctl runbook rollback --state {shlex.quote(str(store.option))}"}


def unreachable_sites(incident: dict[str, object] | None) -> dict[str, str]:
    """site -> why, of the sites a failover in effect fenced or cut off."""
    if not incident or "error" in incident:
        return {}
    sites: dict[str, str] = {}
    for key, what in (("fenced_sites", "fenced by"), ("link_down_sites", "its link is down, since")):
        for entry in incident[key]:  # type: ignore[attr-defined]
            sites[entry["site"]] = f"{what} failover {entry['runbook']}"
    return sites


def _recorded_command(detail: Mapping[str, object]) -> str | None:
    command = detail.get("command")
    return command if isinstance(command, str) else None


def resume_command(operation: str, state_option: str, command: str | None) -> str:
    """The command that resumes an unfinished operation: complete, so that it runs (a dead holder's own command
    line, else the one the run recorded; an apply from before it recorded one names its argument)."""
    import shlex

    where = shlex.quote(str(state_option))
    if operation == "runbook":
        return f"hybridctl runbook resume --state {where}"
    if command is None and operation == "apply":
        command = "apply PLAN_OR_INVENTORY"  # recorded by no older run: the argument it was given is not known
    return f"hybridctl {command or operation} --state {where}"


def _running_now(state: State, at: datetime) -> dict[str, object] | None:
    """A timed applied plan's segment at `at`, and what it wants running (core/week/running.py); None otherwise."""
    from hybridctl.core.plan.serialize import plan_from_dict
    from hybridctl.core.week.clock import offsets_moved
    from hybridctl.core.week.running import RUNNING_VERSION, running_at, running_document
    from hybridctl.core.week.segments import parse_iso_week

    if not state.applied_plan or not state.applied_plan.get("segments"):
        return None
    try:
        applied = plan_from_dict(dict(state.applied_plan), "the state's applied plan")
    except HybridctlError as exc:  # status still shows the rest of the state, and says why not this
        return {"version": RUNNING_VERSION, "error": exc.message}
    now = running_at(applied, at)
    if now is None:
        return None
    doc = running_document(now)
    doc["clock_moved"] = [{"zone": z, "plan_utc_offset_minutes": then, "utc_offset_minutes": later}
                          for z, then, later in offsets_moved(_window_zones(state), parse_iso_week(applied.week).monday, at)]
    return doc


def _window_zones(state: State) -> list[str]:
    """The zones of the applied inventory's windows (the file the state names, as it is now); none when it
    cannot be read (status shows the rest)."""
    from hybridctl.drivers.inventory_files import load_inventory

    if not state.inventory_path:
        return []
    try:
        inventory = load_inventory(Path(state.inventory_path)).inventory
    except HybridctlError:
        return []
    return sorted({w.tz for wl in inventory.workloads if wl.schedule is not None for w in wl.schedule.windows})


def status_report(store: StateStore, *, drift: bool, detailed_exitcode: bool, as_json: bool, lock_timeout_s: float,
                  ssh_factory: Callable[[StateStore], SshOptions], view: Terminal, at: datetime | None = None) -> int:
    """`at`: the moment whose segment of a timed plan's week is shown (aware; default: now)."""
    if not store.exists():
        raise RefusedError(f"nothing has been applied with the state in {store.location}",
                           hint="run `hybridctl apply`, or point --state / HYBRIDCTL_STATE at the state directory")
    state = store.read()
    report = None
    incident = incident_document(store, state)
    models: list[dict[str, object]] | None = None  # per host: active model version against the plan's
    if drift and state.deployed:
        from hybridctl.operations.model_versions import check_model_versions, model_versions_document
        from hybridctl.operations.run import locked

        ssh = ssh_factory(store)
        with locked(store, "status --drift", lock_timeout_s, view):
            state = store.read()
            report = check_drift(store, state, ssh, unreachable_sites(incident))
            models = model_versions_document(check_model_versions(store, state, ssh))
    doc = status_document(store, state, report)
    doc["failover"] = incident
    if models is not None:
        doc["models"] = models
    now = _running_now(state, at or datetime.now(UTC))
    if now is not None:
        doc["now"] = now
    if as_json:
        view.document(json.dumps(doc, indent=2, sort_keys=True, default=str), newline=True)
    else:
        from hybridctl.render.status import render_model_versions, render_status

        render_status(view.out, doc)
        if now is not None:
            from hybridctl.render.status_week import render_running_now

            render_running_now(view.out, now)
        render_model_versions(view.out, models or [])
    models_differ = any(m["state"] not in ("as planned", "unknown") for m in models or [])
    # a check that failed (a host unreachable) fails status, drift found elsewhere or not: with
    # --detailed-exitcode, 2 says everything was checked and something drifted
    if (report is not None and report.errors) or any(m["state"] == "unknown" for m in models or []):
        return int(ExitCode.FAILED)
    if ((report is not None and report.found) or models_differ) and detailed_exitcode:
        raise ChangesFound
    return 0


def run_status(*, state: str | None, drift: bool, detailed_exitcode: bool, as_json: bool, lock_timeout_s: float,
               known_hosts: Path | None, ssh_key: Path | None, view: Terminal, at: str = "now") -> int:
    """`at`: --at's text (`now`, or an ISO 8601 date-time with its offset)."""
    from hybridctl.operations.moments import parse_moment
    from hybridctl.operations.run import open_store, ssh_options

    moment = parse_moment(at)
    return status_report(open_store(state, view), drift=drift, detailed_exitcode=detailed_exitcode, as_json=as_json,
                         lock_timeout_s=lock_timeout_s, ssh_factory=lambda store: ssh_options(store, known_hosts, ssh_key),
                         view=view, at=moment)
