"""The versioned JSON forms of a runbook and of a drill report.

A runbook's JSON is complete: its steps carry their parameters and digests, and both plans
ride along, so `--execute`, `runbook resume` and `runbook rollback` work from it alone. Loading
checks every step's digest against its kind and parameters, and what each step would run against what
this hybridctl ships for its kind (core/deploy/stepcheck.py): an edited runbook is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict

from hybridctl.core.deploy.stepcheck import check_step_params
from hybridctl.core.deploy.steps import Step, StepKind, canonical_json, params_digest
from hybridctl.core.failover.drill import DrillReport, ScenarioResult
from hybridctl.core.failover.impact import Arrival, Status, WorkloadImpact
from hybridctl.core.failover.runbook import (
    CONFIRM_KIND,
    MANUAL_KIND,
    RUNBOOK_FORMAT_VERSION,
    Deferred,
    Runbook,
    RunbookKind,
    RunbookStep,
    System,
)
from hybridctl.core.failover.timingrecord import timing_from_dict, timing_to_dict
from hybridctl.core.failover.worst import worst_segment_to_dict
from hybridctl.core.identitymemo import IdentityMemo
from hybridctl.core.jsontext import dumps_indented
from hybridctl.core.memo import RunMemo, Slot
from hybridctl.core.plan.jsonread import json_object
from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
from hybridctl.errors import HybridctlError

DRILL_FORMAT_VERSION = 1
JsonDict = dict[str, object]


class RunbookFileError(HybridctlError):
    pass


def impact_to_dict(i: WorkloadImpact) -> JsonDict:
    return {
        "workload": i.workload, "tier": i.tier, "type": i.type, "status": i.status.value,
        "before": dict(i.before), "after": dict(i.after),
        "replicas_wanted": i.replicas_wanted, "replicas_running": i.replicas_running,
        "arrivals": [{**asdict(a), "recovery_minutes": a.recovery_minutes} for a in i.arrivals],
        "fallback": i.fallback, "reason": i.reason,
        "outage_minutes": i.outage_minutes, "recovery_minutes": i.recovery_minutes,
        "rto_minutes": i.rto_minutes, "meets_rto": i.meets_rto, "loses_service": i.loses_service,
        "work_lost_minutes_max": i.work_lost_minutes_max, "restarts_from_scratch": i.restarts_from_scratch,
        "usd_per_month_before": i.usd_per_month_before, "usd_per_month_after": i.usd_per_month_after,
        "usd_per_month_delta": i.usd_per_month_delta, "expected_loss": i.expected_loss,
    }


def _step_to_dict(s: RunbookStep) -> JsonDict:
    return {
        "id": s.step.id, "kind": s.step.kind, "title": s.step.title, "group": s.group, "system": s.system.value,
        "site": s.step.site, "estimated_minutes": s.estimated_minutes, "workloads": list(s.workloads),
        "detail": s.detail, "depends_on": list(s.step.depends_on), "phase": s.step.phase,
        "deploys": s.step.deploys, "removes": list(s.step.removes), "digest": s.step.digest,
        "key": s.step.key, "params": dict(s.step.params),
    }


def steps_digest(steps: list[JsonDict]) -> str:
    """Over everything the executor acts on, so that an edited runbook file is refused."""
    fields = [[s["id"], s["kind"], s["params"], s["digest"], s["depends_on"], s["deploys"], s["removes"]] for s in steps]
    return "sha256:" + hashlib.sha256(canonical_json(fields)).hexdigest()


def runbook_to_dict(runbook: Runbook) -> JsonDict:
    steps = [_step_to_dict(s) for s in runbook.steps]
    counts = {status.value: sum(1 for i in runbook.impacts if i.status is status) for status in Status}
    return {
        "format_version": RUNBOOK_FORMAT_VERSION,
        "kind": runbook.kind.value,
        "id": runbook.id,
        "incident": runbook.incident,
        "inventory": runbook.inventory,
        "events": list(runbook.events),
        "base_serial": runbook.base_serial,
        "summary": {
            "workloads": counts,
            # cash, lost committed capacity still paid (pricing/incident.py)
            "usd_per_month_before": (cash := runbook.cash).before_usd_per_month,
            "usd_per_month_after": cash.after_usd_per_month,
            "usd_per_month_delta": cash.usd_per_month,
            # the delta split (incident.py): extra spend − work stopped, each stopped workload with what it paid
            "usd_per_month_extra": cash.extra_usd_per_month,
            "usd_per_month_work_stopped": cash.stopped_usd_per_month,
            "work_stopped": dict(cash.stopped),
            "committed_lost": {"gpus": cash.lost_gpus, "usd_per_month": cash.lost_usd_per_month},
            "usd_per_month_delta_by_team": cash.by_team(runbook.before.teams),
            "estimated_minutes": runbook.estimated_minutes,
            "rto_missed": sorted(i.workload for i in runbook.impacts if i.meets_rto is False),
            "down": sorted(i.workload for i in runbook.impacts if i.loses_service),
            "steps": len(runbook.steps),
            "deferred_steps": len(runbook.deferred),
        },
        "groups": [{"name": name, "title": title, "steps": [s.id for s in steps]}
                   for name, title, steps in runbook.groups()],
        "steps": steps,
        "steps_digest": steps_digest(steps),
        "deferred": [asdict(d) for d in runbook.deferred],
        "workloads": [impact_to_dict(i) for i in runbook.impacts],
        "notes": list(runbook.notes),
        "at": timing_to_dict(runbook.timing),
        "before_plan": plan_to_dict(runbook.before, plan_file=True),
        "after_plan": plan_to_dict(runbook.after, plan_file=True),
    }


# 0.7 s of encoding for a fleet's two plans; the failover command may print the text, write it to --out and keep it
# with the state. 2: the last runbooks.
RUNBOOK_TEXTS: Slot[IdentityMemo[Runbook, str]] = Slot("a runbook's JSON text", lambda: IdentityMemo(2))


def runbook_to_json(runbook: Runbook, run_memo: RunMemo | None = None) -> str:
    """json.dumps(indent=2, sort_keys=True, ensure_ascii=False)'s text. A fleet's runbook holds both of its plans
    (json's pure-Python indented encoder took 0.7 s over them), and one run may print it, write it to --out and
    keep it with the state: the run's memo keeps the last runbooks' texts (runbooks are not changed in place)."""
    if run_memo is None:
        return _runbook_text(runbook)
    return run_memo[RUNBOOK_TEXTS].get(runbook, _runbook_text)


def _runbook_text(runbook: Runbook) -> str:
    return dumps_indented(runbook_to_dict(runbook)) + "\n"


def _str(raw: Mapping[str, object], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise KeyError(key)
    return value


def _list(raw: Mapping[str, object], key: str) -> list[object]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} is not a list")
    return value


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _impact(raw: Mapping[str, object]) -> WorkloadImpact:
    def replicas(key: str) -> dict[str, int]:
        value = raw.get(key, {})
        return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}

    arrivals = tuple(Arrival(_str(a, "site"), _str(a, "pool"), int(_number(a.get("replicas")) or 0),
                             _str(a, "gpu_type"), _number(a.get("provision_minutes")) or 0.0,
                             _number(a.get("transfer_minutes")) or 0.0)
                     for a in _list(raw, "arrivals") if isinstance(a, dict))
    fallback = raw.get("fallback")
    return WorkloadImpact(
        workload=_str(raw, "workload"), tier=_str(raw, "tier"), type=_str(raw, "type"),
        status=Status(_str(raw, "status")), before=replicas("before"), after=replicas("after"),
        replicas_wanted=int(_number(raw.get("replicas_wanted")) or 0),
        replicas_running=int(_number(raw.get("replicas_running")) or 0), arrivals=arrivals,
        fallback=fallback if isinstance(fallback, str) else None, reason=_str(raw, "reason"),
        outage_minutes=_number(raw.get("outage_minutes")), recovery_minutes=_number(raw.get("recovery_minutes")) or 0.0,
        rto_minutes=_number(raw.get("rto_minutes")), work_lost_minutes_max=_number(raw.get("work_lost_minutes_max")),
        restarts_from_scratch=bool(raw.get("restarts_from_scratch")),
        usd_per_month_before=_number(raw.get("usd_per_month_before")) or 0.0,
        usd_per_month_after=_number(raw.get("usd_per_month_after")) or 0.0,
        expected_loss=bool(raw.get("expected_loss")))


_KINDS = frozenset({*StepKind, MANUAL_KIND, CONFIRM_KIND})
_REMAKE = ("runbook files are not edited: restore the file from a backup, or make the runbook again with "
           "`hybridctl failover EVENT…`")


def _check_step(step_id: str, kind: str, params: Mapping[str, object], digest: str, source: str) -> None:
    """A step as hybridctl makes it, before anything runs it: what it runs is what this hybridctl ships for its
    kind (stepcheck.py), and its digest is that of its kind and params. The digest is in the step's key, and the
    keys in the runbook's id, which the state knows the runbook by: an edit of a step's kind or params shows in
    that id. A forger can still work out every digest and id again, the state's names too (it is as writable as
    the runbook), so the checks of what a step runs are what keeps an edited runbook from running anything else."""
    if kind not in _KINDS:
        raise RunbookFileError(f"{source}: step {step_id}: kind {kind!r} is not a kind of step hybridctl makes",
                               hint=_REMAKE)
    try:
        check_step_params(kind, params)
    except ValueError as exc:
        raise RunbookFileError(f"{source}: step {step_id}: {exc}", hint=_REMAKE) from None
    if digest != params_digest(kind, params):
        raise RunbookFileError(f"{source}: step {step_id}: its digest is not that of its kind and params: the "
                               "runbook was edited", hint=_REMAKE)


def _step(raw: Mapping[str, object], source: str) -> RunbookStep:
    params = raw.get("params")
    if not isinstance(params, dict):
        raise TypeError("a step without params")
    kind = _str(raw, "kind")
    digest = _str(raw, "digest")
    site = raw.get("site")
    _check_step(_str(raw, "id"), kind, params, digest, source)
    step = Step(_str(raw, "id"), kind, _str(raw, "title"), params, digest,
                tuple(str(d) for d in _list(raw, "depends_on")), site if isinstance(site, str) else None,
                int(_number(raw.get("phase")) or 0), bool(raw.get("deploys")),
                tuple(str(r) for r in _list(raw, "removes")))
    return RunbookStep(step, _str(raw, "group"), System(_str(raw, "system")),
                       _number(raw.get("estimated_minutes")) or 0.0,
                       tuple(str(w) for w in _list(raw, "workloads")), str(raw.get("detail", "")))


def runbook_from_dict(raw: Mapping[str, object], source: str = "runbook") -> Runbook:
    version = raw.get("format_version")
    if version != RUNBOOK_FORMAT_VERSION:
        raise RunbookFileError(f"{source}: runbook format_version {version!r} is not supported (this hybridctl reads "
                               f"{RUNBOOK_FORMAT_VERSION})", hint="compute it again with this hybridctl")
    raw_steps = [s for s in _list(raw, "steps") if isinstance(s, dict)] if isinstance(raw.get("steps"), list) else []
    try:
        digest = steps_digest(raw_steps)
    except KeyError as exc:
        raise RunbookFileError(f"{source}: a step lacks {exc}", hint="compute a new runbook with `hybridctl failover`") \
            from None
    if digest != raw.get("steps_digest"):
        raise RunbookFileError(f"{source}: the steps do not match their digest: the runbook was edited",
                               hint="compute a new runbook with `hybridctl failover`")
    try:
        before, after = raw["before_plan"], raw["after_plan"]
        if not isinstance(before, dict) or not isinstance(after, dict):
            raise TypeError("plans must be objects")
        base_serial = raw.get("base_serial")
        return Runbook(
            kind=RunbookKind(_str(raw, "kind")), incident=_str(raw, "incident"), inventory=_str(raw, "inventory"),
            events=tuple(str(e) for e in _list(raw, "events")),
            base_serial=int(base_serial) if isinstance(base_serial, int) else None,
            before=plan_from_dict(before, f"{source}: before_plan"), after=plan_from_dict(after, f"{source}: after_plan"),
            impacts=tuple(_impact(i) for i in _list(raw, "workloads") if isinstance(i, dict)),
            steps=tuple(_step(s, source) for s in raw_steps),
            deferred=tuple(Deferred(_str(d, "step_id"), _str(d, "site"), _str(d, "reason"))
                           for d in _list(raw, "deferred") if isinstance(d, dict)),
            notes=tuple(str(n) for n in _list(raw, "notes")), timing=timing_from_dict(raw.get("at")))
    except (KeyError, TypeError, ValueError) as exc:
        raise RunbookFileError(f"{source}: not a hybridctl runbook ({type(exc).__name__}: {exc})",
                               hint="pass a file written by `hybridctl failover --format json`") from None


def runbook_from_json(text: str, source: str = "runbook") -> Runbook:
    raw = json_object(text, source, RunbookFileError, "runbook",
                      "pass a file written by `hybridctl failover --format json`")
    return runbook_from_dict(raw, source)


def _scenario_to_dict(r: ScenarioResult, timed: bool) -> JsonDict:
    return {
        "name": r.scenario.name,
        "description": r.scenario.description,
        "events": [str(e) for e in r.scenario.events],
        "passed": r.passed,
        "gate_failures": r.gate_failures,
        "moved": [i.workload for i in r.moved],
        "degraded": [{"workload": i.workload, "tier": i.tier, "fallback": i.fallback,
                      "replicas_running": i.replicas_running, "replicas_wanted": i.replicas_wanted}
                     for i in r.degraded],
        "lost": [{"workload": i.workload, "tier": i.tier, "reason": i.reason, "expected_loss": i.expected_loss}
                 for i in r.lost],
        "expected_losses": [i.workload for i in r.impacts if r.expected(i) and i.loses_service],
        "runbook_problem": r.runbook_problem,
        "runbook_steps": r.steps,
        "rollback_steps": r.rollback_steps,
        "usd_per_month_before": r.usd_per_month_before,
        "usd_per_month_after": r.usd_per_month_after,
        "usd_per_month_delta": r.usd_per_month_delta,
        "usd_per_month_delta_unlisted": r.unlisted_usd_per_month_delta,
        "usd_per_month_extra": r.extra_usd_per_month,
        "usd_per_month_work_stopped": r.stopped_usd_per_month,
        "work_stopped": dict(r.work_stopped),
        "usd_per_month_delta_by_team": dict(r.usd_per_month_delta_by_team),
        "committed_lost": {"gpus": r.committed_lost_gpus, "usd_per_month": r.committed_lost_usd_per_month},
        "recovery_minutes": r.recovery_minutes,
        "worst_outage_minutes": r.worst_outage_minutes,
        "rto_misses": [{"workload": i.workload, "tier": i.tier, "outage_minutes": i.outage_minutes,
                        "rto_minutes": i.rto_minutes} for i in r.rto_misses],
        "budget_problem": r.budget_problem,
        # cash above the monthly budget; the scenario file's allowance (null: not stated, over budget only warns)
        "over_budget_usd_per_month": r.over_budget_usd_per_month,
        "over_budget_allowed_usd_per_month": r.allowed_over_budget_usd_per_month,
        "unexpected_fixed_losses": [i.workload for i in r.unexpected_fixed_losses],
        "solver_status": r.solver_status,
        "seconds": r.seconds,
        "workloads": [impact_to_dict(i) for i in r.impacts],
        # a timed base plan's only (an untimed drill's JSON is as it was)
        **({"worst_segment": worst_segment_to_dict(r.worst_segment)} if timed else {}),
    }


def drill_to_dict(report: DrillReport) -> JsonDict:
    return {
        "format_version": DRILL_FORMAT_VERSION,
        "inventory": report.inventory,
        "passed": report.passed,
        "usd_per_month_base": report.base.total_usd_per_month,
        "scenarios": [_scenario_to_dict(r, bool(report.base.segments)) for r in report.results],
        "failed": [r.scenario.name for r in report.failed],
        "seconds": report.seconds,
    }


def drill_to_json(report: DrillReport) -> str:
    return dumps_indented(drill_to_dict(report)) + "\n"
