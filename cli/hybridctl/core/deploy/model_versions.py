"""Which model version each host must run (from the applied model-sync steps) against the
version it really runs (read from the host). Pure: the reading is done by
``hybridctl.operations.model_versions`` through playbooks/model-status.yml."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from hybridctl.core.deploy.bundle import version_order


class VersionState(StrEnum):
    AS_PLANNED = "as planned"
    BEHIND = "behind"  # an older version is active: a rollback, or a sync that has not run
    AHEAD = "ahead"  # a newer version than the applied plan says
    MISSING = "not installed"
    UNKNOWN = "unknown"  # the host could not be read


@dataclass(frozen=True)
class ExpectedModel:
    host: str
    site: str | None
    workload: str
    model: str
    version: str


@dataclass(frozen=True)
class HostModelVersion:
    host: str
    site: str | None
    workload: str
    model: str
    expected: str
    active: str | None
    activated_at: str | None
    state: VersionState
    note: str | None = None


def expected_models(step_id: str, site: str | None, record: Mapping[str, object]) -> list[ExpectedModel]:
    """What one applied model-sync step (its id model-sync/<site>/<workload> and its params) expects."""
    extravars = record.get("extravars")
    inventory = record.get("inventory")
    if not isinstance(extravars, Mapping) or not isinstance(inventory, Mapping):
        return []
    hostvars = inventory.get("hostvars")
    model, version = extravars.get("hybridctl_model"), extravars.get("hybridctl_model_version")
    if not isinstance(hostvars, Mapping) or not isinstance(model, str) or not isinstance(version, str):
        return []
    workload = step_id.rsplit("/", 1)[-1]
    return [ExpectedModel(str(host), site, workload, model, version) for host in sorted(hostvars)]


def compare(expected: ExpectedModel, active: Mapping[str, object] | None, problem: str | None = None) -> HostModelVersion:
    """`active` is the host's report for this model ({current, activated_at}), None when it has none."""
    def row(state: VersionState, current: str | None = None, at: str | None = None,
            note: str | None = None) -> HostModelVersion:
        return HostModelVersion(expected.host, expected.site, expected.workload, expected.model, expected.version,
                                current, at, state, note)

    if problem is not None:
        return row(VersionState.UNKNOWN, note=problem)
    if active is None or not isinstance(active.get("current"), str) or not active.get("current"):
        return row(VersionState.MISSING)
    current = str(active["current"])
    at = str(active["activated_at"]) if active.get("activated_at") else None
    if current == expected.version:
        return row(VersionState.AS_PLANNED, current, at)
    older = version_order(current) < version_order(expected.version)
    return row(VersionState.BEHIND if older else VersionState.AHEAD, current, at)


def compare_all(expected: Iterable[ExpectedModel], reports: Mapping[str, Mapping[str, object]],
                problems: Mapping[str, str]) -> list[HostModelVersion]:
    """reports: host -> {model -> {current, activated_at}}; problems: host -> why it could not be read."""
    rows = []
    for item in expected:
        models = reports.get(item.host)
        active = models.get(item.model) if models is not None else None
        rows.append(compare(item, active if isinstance(active, Mapping) else None,
                            problems.get(item.host) or (None if models is not None else "no report from the host")))
    return sorted(rows, key=lambda r: (r.site or "", r.workload, r.host))
