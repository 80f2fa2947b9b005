"""Steps read back bound to their source: a runbook's steps and a state's deployed records are files anyone
who can write the state can edit, digests and ids included (a forger works them out again with hybridctl's
own functions). What a step does is therefore held to what hybridctl makes of the inventory and the plan the
step claims to come from, before anything runs:

- a step apply makes (cloud pools, queues, preflight, node baseline, model sync) must be the step of that id
  that apply's derivation gives for the plan and the inventory, parameter for parameter: a cloud stack's whole
  configuration, an Ansible step's hosts (the inventory's hosts of that site) and its bundle and key paths
  (those this run was given; `derived` is built with them);
- a stack a step takes down (destroy, the teardown of a stack a plan dropped) must be named
  `<inventory name>-<site or cluster>` for a cloud site or a cluster of the inventory, its kind's project, and
  its configuration must name that inventory and that site or cluster.

Pure; StepBindingError names the step and the field that differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hybridctl.core.deploy.steps import Step, StepGraph, StepKind, canonical_json
from hybridctl.core.inventory.models import Inventory, SiteKind

# the kinds whose steps apply derives from a plan, and the kinds that take a deployed stack down
DERIVED_KINDS = frozenset({StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES, StepKind.PREFLIGHT,
                           StepKind.NODE_BASELINE, StepKind.MODEL_SYNC})
TEARDOWN_KINDS = frozenset({StepKind.DESTROY_CLOUD_POOLS, StepKind.DESTROY_CLUSTER_QUEUES})
# the digest of the playbooks a step ran with: an upgraded hybridctl ships others, and the playbook itself is
# always the one shipped for the kind (stepcheck.py); it names no host, path or value
_UNBOUND_PARAMS = frozenset({"playbook_digest"})
_SHOWN = 200  # characters of a value in a message


class StepBindingError(ValueError):
    """A step read back that is not what the inventory and its plan make."""


def _differs(path: str, got: object, made: object) -> str | None:
    """The first field (a dotted path) where `got` is not `made`, with both values; None when they agree."""
    if isinstance(got, Mapping) and isinstance(made, Mapping):
        for key in sorted({*map(str, got), *map(str, made)}):
            if key not in got:
                return f"{path}.{key}: missing (the plan makes {_shown(made[key])})"
            if key not in made:
                return f"{path}.{key}: {_shown(got[key])} is not something the plan makes"
            found = _differs(f"{path}.{key}", got[key], made[key])
            if found is not None:
                return found
        return None
    if isinstance(got, list | tuple) and isinstance(made, list | tuple):
        if len(got) != len(made):
            return f"{path}: {len(got)} item(s), the plan makes {len(made)}"
        for i, (one, other) in enumerate(zip(got, made, strict=True)):
            found = _differs(f"{path}[{i}]", one, other)
            if found is not None:
                return found
        return None
    # JSON's equality: a runbook read back holds lists for tuples, 2.0 where the plan made 2.0
    return None if canonical_json(got) == canonical_json(made) else \
        f"{path}: {_shown(got)}, the plan makes {_shown(made)}"


def _shown(value: object) -> str:
    text = canonical_json(value).decode("utf-8", "replace")
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _bound_params(params: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in params.items() if k not in _UNBOUND_PARAMS}


def check_derived(step: Step, derived: StepGraph, source: str) -> None:
    """A step of a kind apply derives: the very step `derived` (apply's steps for the plan it claims to come
    from, with this run's bundles and key) has under its id. `source` names that plan in the message."""
    if step.id not in derived.ids:
        raise StepBindingError(f"step {step.id}: {source} makes no such step")
    made = derived.get(step.id)
    if made.kind != step.kind:
        raise StepBindingError(f"step {step.id}: kind {step.kind!r}, {source} makes a {made.kind} step")
    found = _differs("params", _bound_params(step.params), _bound_params(made.params))
    if found is not None:
        raise StepBindingError(f"step {step.id}: {found.replace('the plan', source)}")


def stack_owners(inventory: Inventory) -> dict[str, tuple[StepKind, str]]:
    """The stacks the inventory's steps may take down: stack name -> (the kind that makes it, its cloud site
    or cluster)."""
    owners: dict[str, tuple[StepKind, str]] = {}
    for site in inventory.sites:
        if site.kind is SiteKind.CLOUD:
            owners[f"{inventory.name}-{site.name}"] = (StepKind.CLOUD_POOLS, site.name)
    for cluster in sorted({s.cluster for s in inventory.sites if s.cluster}):
        owners[f"{inventory.name}-{cluster}"] = (StepKind.CLUSTER_QUEUES, cluster)
    return owners


def check_teardown(step: Step, inventory: Inventory, owners: Mapping[str, tuple[StepKind, str]] | None = None) -> None:
    """A step that takes a stack down: the stack is one of the inventory's (stack_owners), of the kind the step
    takes down, and what its parameters say of it (site or cluster, and its configuration's inventory and site
    or cluster) is that stack's. A state that names another environment's stack is refused here."""
    owners = stack_owners(inventory) if owners is None else owners
    made_by = StepKind.CLOUD_POOLS if step.kind == StepKind.DESTROY_CLOUD_POOLS else StepKind.CLUSTER_QUEUES
    name = step.params.get("stack_name")
    owner = owners.get(name) if isinstance(name, str) else None
    what = "cloud site" if made_by is StepKind.CLOUD_POOLS else "cluster"
    if owner is None or owner[0] is not made_by:
        raise StepBindingError(f"step {step.id}: params.stack_name: {_shown(name)} is not the stack of a {what} of "
                               f"inventory {inventory.name} (<inventory name>-<{what.split()[-1]}>)")
    label = owner[1]
    field_, config_key = ("site", "site") if made_by is StepKind.CLOUD_POOLS else ("cluster", "clusterName")
    if step.params.get(field_) != label:
        raise StepBindingError(f"step {step.id}: params.{field_}: {_shown(step.params.get(field_))} is not "
                               f"{label}, whose stack {name} is")
    config = step.params.get("config", {})
    expected = {"inventoryName": inventory.name, config_key: label}
    for key, value in expected.items():
        if isinstance(config, Mapping) and key in config and config[key] != value:
            raise StepBindingError(f"step {step.id}: params.config.{key}: {_shown(config[key])} is not {value}, "
                                   f"of stack {name}")


def check_bound(steps: Iterable[Step], derived: StepGraph, inventory: Inventory, source: str) -> None:
    """Every step that acts, bound: derived kinds by check_derived, teardown by check_teardown. Other kinds (a
    runbook's confirmations and manual steps, release-nodes, which only forgets hosts in the state) act on
    nothing outside hybridctl."""
    owners = stack_owners(inventory)
    for step in steps:
        if step.kind in DERIVED_KINDS:
            check_derived(step, derived, source)
        elif step.kind in TEARDOWN_KINDS:
            check_teardown(step, inventory, owners)
