"""Properties of failover on every example inventory: for every single event the standard drill generates
(and for random pairs of them), `failover --execute` then `runbook rollback`, through the recording cloud
double, with the examples' hosts removed (no SSH here: the real-host loop is test_failover_hosts.py).

Each case asserts: every step of the runbook and of its rollback ends done; the final placements equal the
original ones; no step acts on a lost site and no data is read from one; workloads the events did not touch
did not move, unless the replan moved them to make room for displaced work, and the runbook says so.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import hybridctl.commands.apply_cmds
import hybridctl.commands.failover_cmds  # noqa: F401  (registers the commands run_cli calls)
import pytest
import yaml
from hybridctl.core.failover.events import Event, EventKind, provider_sites
from hybridctl.core.failover.runbook import MANUAL_KIND
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.inventory.models import Inventory
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.state import JournalEvent, StateStore
from support.examples import EXAMPLE_PATHS
from support.inproc import run_cli

DRIVER = "support.recording_cloud:factory"
PAIRS_PER_EXAMPLE = 3


def without_hosts(path: Path) -> dict[str, Any]:
    """The example as one document, its hosts removed (JSON is YAML: the loader reads it)."""
    merged: dict[str, Any] = {}
    for file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
        for key, value in yaml.safe_load(file.read_text()).items():
            if isinstance(value, list):
                merged.setdefault(key, []).extend(value)
            else:
                merged[key] = value
    for site in merged.get("sites", []):
        site.pop("hosts", None)
    return merged


def single_events(inventory: Inventory) -> list[Event]:
    seen: dict[str, Event] = {}
    for scenario in standard_scenarios(inventory):
        for event in scenario.events:
            seen.setdefault(str(event), event)
    return list(seen.values())


def _cases() -> tuple[list[Any], list[Any]]:
    singles: list[Any] = []
    pairs: list[Any] = []
    for path in EXAMPLE_PATHS:
        events = single_events(load_inventory(path).inventory)
        singles += [pytest.param(path.stem, (e,), id=f"{path.stem}:{e}") for e in events]
        chosen = random.Random(f"pairs-{path.stem}").sample(list(combinations(events, 2)), PAIRS_PER_EXAMPLE)
        pairs += [pytest.param(path.stem, pair, id=f"{path.stem}:{pair[0]}+{pair[1]}") for pair in chosen]
    return singles, pairs


SINGLE_CASES, PAIR_CASES = _cases()


@dataclass(frozen=True)
class Applied:
    inventory_file: Path
    inventory: Inventory
    state: Path
    placements: dict[tuple[str, str, str], int]  # (workload, demand, pool) -> replicas


def placements_of(plan: dict[str, Any]) -> dict[tuple[str, str, str], int]:
    return {(p["workload"], p.get("demand") or p["workload"], p["pool"]): p["replicas"] for p in plan["placements"]}


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Applied]]:
    """Each example applied once; every case works on its own copy of that state."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("HYBRIDCTL_CLOUD_DRIVER", DRIVER)
    monkeypatch.setenv("NO_COLOR", "1")
    examples: dict[str, Applied] = {}
    for path in EXAMPLE_PATHS:
        root = tmp_path_factory.mktemp(path.stem)
        inventory_file = root / "inventory.yaml"
        inventory_file.write_text(json.dumps(without_hosts(path), indent=1))
        state = root / "state"
        done = run_cli("apply", str(inventory_file), "--state", str(state), "--auto-approve")
        assert done.code == 0, done.output
        plan = StateStore(state).read().applied_plan
        assert plan is not None
        examples[path.stem] = Applied(inventory_file, load_inventory(inventory_file).inventory, state,
                                      placements_of(dict(plan)))
    yield examples
    monkeypatch.undo()


def step_sites(step: dict[str, Any]) -> set[str]:
    sites = {step["site"]} if step.get("site") else set()
    listed = step.get("params", {}).get("sites")
    return sites | set(listed) if isinstance(listed, list) else sites


def run_ids_of(store: StateStore) -> list[str]:
    return [r.run_id for r in store.read().history if r.operation == "runbook"]


def done_steps(store: StateStore, run_id: str) -> set[str]:
    return {r.step for r in store.journal.records() if r.run == run_id and r.event == JournalEvent.STEP_DONE
            and r.step is not None}


def lost_sites(inventory: Inventory, events: tuple[Event, ...]) -> set[str]:
    """The sites the events lose: site-lost's, and every site of a provider-lost's provider (revision 4)."""
    return ({e.target for e in events if e.kind is EventKind.SITE_LOST}
            | {s for e in events if e.kind is EventKind.PROVIDER_LOST for s in provider_sites(inventory, e.target)})


def untouched(inventory: Inventory, events: tuple[Event, ...], before: dict[tuple[str, str, str], int],
              after: dict[tuple[str, str, str], int]) -> set[str]:
    """Workloads with nothing on a pool the events touched, no data at a lost site, all replicas placed."""
    lost = lost_sites(inventory, events)
    sites = lost | {e.target for e in events if e.kind is EventKind.LINK_DOWN}
    pools = {e.target for e in events if e.kind not in (EventKind.SITE_LOST, EventKind.LINK_DOWN,
                                                          EventKind.PROVIDER_LOST)}
    pools |= {p.name for s in inventory.sites if s.name in sites for p in s.pools}
    held = {d.name for d in inventory.datasets if set(d.holders) & lost}
    wanted = {w.name: w.replicas for w in inventory.workloads}
    placed: dict[str, int] = {}
    touched = {w.name for w in inventory.workloads if set(w.datasets) & held}
    for (workload, demand, pool), replicas in before.items():
        placed[demand] = placed.get(demand, 0) + replicas
        if pool in pools:
            touched.add(workload)
    touched |= {d.split("@")[0] for d, n in placed.items() if "@" not in d and n < wanted.get(d, 0)}
    touched |= {w.name for w in inventory.workloads if not any(k[0] == w.name for k in before)}
    return {w.name for w in inventory.workloads} - touched


def check_failover_and_rollback(applied: dict[str, Applied], tmp_path: Path, example: str,
                                events: tuple[Event, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRIDCTL_CLOUD_DRIVER", DRIVER)
    base = applied[example]
    state = tmp_path / "state"
    shutil.copytree(base.state, state)
    store = StateStore(state)
    base_state_plan = store.read().applied_plan
    words = [w for e in events for w in str(e).split(" ", 1)]
    runbook_file = tmp_path / "runbook.json"
    done = run_cli("failover", *words, "--state", str(state), "-i", str(base.inventory_file), "--execute",
                   "--auto-approve", "--manual-steps-done", "--format", "json", "--out", str(runbook_file))
    assert done.code == 0, done.output
    runbook = json.loads(runbook_file.read_text())
    if not runbook["steps"]:  # nothing to run: no run, no failover recorded, apply stays free (issue 46)
        assert store.read().applied_plan == base_state_plan and store.read().pending is None
        nothing = run_cli("runbook", "rollback", "--state", str(state), "--auto-approve")
        assert nothing.code == 4 and "no failover is in effect" in nothing.output
        return
    failover_run = run_ids_of(store)[-1]
    assert done_steps(store, failover_run) == {s["id"] for s in runbook["steps"]}

    lost = lost_sites(base.inventory, events)
    for step in runbook["steps"]:
        if step["kind"] == MANUAL_KIND:
            continue  # the operator fencing the lost site
        assert not step_sites(step) & lost, f"step {step['id']} acts on a lost site"
    after_plan = runbook["after_plan"]
    assert not {p["site"] for p in after_plan["placements"]} & lost
    assert not {m["from_site"] for m in after_plan["data_movements"]} & lost, "data read from a lost site"
    applied_after = store.read().applied_plan
    assert applied_after is not None
    after = placements_of(dict(applied_after))
    reasons = {w["workload"]: w["reason"] for w in runbook["workloads"]}
    for workload in sorted(untouched(base.inventory, events, base.placements, after)):
        mine = {k: v for k, v in base.placements.items() if k[0] == workload}
        if {k: v for k, v in after.items() if k[0] == workload} != mine:
            # a chain of moves (C moves so that B can, so that A fits) is the only reason to move it, and says so
            assert reasons.get(workload, "").startswith("moved to make room for workloads the events displaced"), \
                f"{workload} moved: {reasons.get(workload)}"

    back = run_cli("runbook", "rollback", "--state", str(state), "-i", str(base.inventory_file), "--auto-approve",
                   "--format", "json")
    assert back.code == 0, back.output
    rollback = json.loads(back.stdout)
    assert done_steps(store, run_ids_of(store)[-1]) == {s["id"] for s in rollback["steps"]}
    final = store.read()
    assert final.pending is None and final.applied_plan is not None
    assert placements_of(dict(final.applied_plan)) == base.placements


@pytest.mark.parametrize(("example", "events"), SINGLE_CASES)
def test_every_single_event_fails_over_and_rolls_back(applied: dict[str, Applied], tmp_path: Path, example: str,
                                                      events: tuple[Event, ...],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    check_failover_and_rollback(applied, tmp_path, example, events, monkeypatch)


@pytest.mark.parametrize(("example", "events"), PAIR_CASES)
def test_random_pairs_of_events_fail_over_and_roll_back(applied: dict[str, Applied], tmp_path: Path, example: str,
                                                        events: tuple[Event, ...],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    check_failover_and_rollback(applied, tmp_path, example, events, monkeypatch)
