"""Plan -> the ordered steps that make it real, and deployed state -> the steps that take it down.

Pure. A step is a value: what to run (its kind and parameters), what it waits for, and an
identity. The identity is the step's id plus a digest of its kind and parameters, so a step
that already succeeded with the same inputs is not run again when an interrupted operation
resumes, while a step whose inputs changed is. The executor (hybridctl.executor) runs any
StepGraph — apply's, destroy's, or a failover runbook's — through the same journal.

Apply, in dependency order (steps of different sites do not wait for each other):
  1. cloud-pools/<site>          the GPU node pools of each cloud site (parallel across sites)
  2. cluster-queues/<cluster>    Kueue queues of each cluster, after its sites' pools
  3. preflight/<site>            checks of each on-prem/edge site's hosts
  4. node-baseline/<site>        node configuration, after that site's preflight
  5. model-sync/<site>/<model>   signed model bundles, after that site's baseline
Destroy runs the reverse: queues, then pools; node configuration is left as it is, the
hosts are only released from the state (see destroy_steps).
"""

from __future__ import annotations

import hashlib
import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property, partial
from types import MappingProxyType

from hybridctl.core.deploy.ansible_inventory import (
    AnsibleInventory,
    build_ansible_inventory,
    group_name,
    hosted_placements,
)
from hybridctl.core.deploy.gke_aks import other_cloud_stacks
from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
from hybridctl.core.deploy.stackreuse import StackConfigMemo
from hybridctl.core.deploy.stackvalues import PLAN_DIGEST_KEY, GpuPoolsStackConfig, QueuesStackConfig
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import Inventory, SiteKind
from hybridctl.core.jsontext import dumps_canonical_utf8
from hybridctl.core.plan.model import Placement, Plan

Params = Mapping[str, object]


class StepKind(StrEnum):
    CLOUD_POOLS = "cloud-pools"
    CLUSTER_QUEUES = "cluster-queues"
    PREFLIGHT = "preflight"
    NODE_BASELINE = "node-baseline"
    MODEL_SYNC = "model-sync"
    DESTROY_CLUSTER_QUEUES = "destroy-cluster-queues"
    DESTROY_CLOUD_POOLS = "destroy-cloud-pools"
    RELEASE_NODES = "release-nodes"


CLOUD_KINDS = frozenset({StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES, StepKind.DESTROY_CLUSTER_QUEUES,
                         StepKind.DESTROY_CLOUD_POOLS})
ANSIBLE_KINDS = frozenset({StepKind.PREFLIGHT, StepKind.NODE_BASELINE, StepKind.MODEL_SYNC})
_VOLATILE_CONFIG = frozenset({PLAN_DIGEST_KEY})
PLAYBOOKS = MappingProxyType({StepKind.PREFLIGHT: "preflight.yml", StepKind.NODE_BASELINE: "node.yml",
                              StepKind.MODEL_SYNC: "model-sync.yml"})
_PHASE: MappingProxyType[str, int] = MappingProxyType({
    StepKind.CLOUD_POOLS: 1, StepKind.CLUSTER_QUEUES: 2, StepKind.PREFLIGHT: 3, StepKind.NODE_BASELINE: 4,
    StepKind.MODEL_SYNC: 5, StepKind.DESTROY_CLUSTER_QUEUES: 1, StepKind.DESTROY_CLOUD_POOLS: 2,
    StepKind.RELEASE_NODES: 3})


class StepGraphError(ValueError):
    """A malformed graph: a duplicate id, a dependency on an unknown step, or a cycle."""


def canonical_json(value: object) -> bytes:
    """What digests hash: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False), in UTF-8."""
    return dumps_canonical_utf8(value)


def inputs_digest(kind: str, params: Params) -> str:
    return "sha256:" + hashlib.sha256(canonical_json({"kind": kind, "params": params})).hexdigest()


def params_digest(kind: str, params: Params) -> str:
    """The digest the steps hybridctl makes carry for this kind and params: inputs_digest of all of them, but a
    cloud stack's leaves out the plan digest its config is tagged with (_stack_identity). A step read back from a
    file whose digest is another was edited: the digest is in its key, and so in a runbook's id."""
    config = params.get("config")
    if kind in (StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES) and isinstance(config, Mapping):
        params = {**params, "config": {k: v for k, v in config.items() if k not in _VOLATILE_CONFIG}}
    return inputs_digest(kind, params)


@dataclass(frozen=True)
class Step:
    id: str  # stable across plans: "node-baseline/dc-fra"
    kind: str  # a StepKind, or a kind of the caller's own (a runbook's), with a runner registered for it
    title: str
    params: Params  # everything the runner needs; JSON only, never a secret in clear
    digest: str  # of kind and params: see make_step
    depends_on: tuple[str, ...] = ()
    site: str | None = None
    phase: int = 0  # display and tie-break order; dependencies decide what may run
    deploys: bool = False  # on success, the state records it as deployed (with params, for teardown and drift)
    removes: tuple[str, ...] = ()  # on success, these deployed step ids are gone

    @property
    def key(self) -> str:
        """The step's identity: id and inputs. The journal records it; resume compares it."""
        return f"{self.id}@{self.digest.removeprefix('sha256:')[:16]}"


def make_step(id: str, kind: str, title: str, params: Params, *, depends_on: Iterable[str] = (),
              site: str | None = None, phase: int | None = None, deploys: bool = False,
              removes: Iterable[str] = (), identity: Params | None = None, digest: str | None = None) -> Step:
    """A step whose digest covers `identity` (default: all of params): what, changed, must run again.
    `digest`: that digest, already worked out (CloudStack.identity_digest)."""
    digest = digest or inputs_digest(kind, params if identity is None else identity)
    return Step(id, kind, title, params, digest, tuple(sorted(set(depends_on))), site,
                _PHASE.get(kind, 0) if phase is None else phase, deploys, tuple(sorted(set(removes))))


@dataclass(frozen=True)
class StepGraph:
    """Steps in an order that respects every dependency (ties: phase, then id)."""

    steps: tuple[Step, ...]

    @staticmethod
    def of(steps: Iterable[Step]) -> StepGraph:
        listed = list(steps)
        by_id: dict[str, Step] = {}
        for step in listed:
            if step.id in by_id:
                raise StepGraphError(f"two steps have the id {step.id!r}")
            by_id[step.id] = step
        waiting: dict[str, int] = {}
        dependents: dict[str, list[str]] = defaultdict(list)
        for step in listed:
            for dep in step.depends_on:
                if dep not in by_id:
                    raise StepGraphError(f"step {step.id!r} depends on unknown step {dep!r}")
                dependents[dep].append(step.id)
            waiting[step.id] = len(step.depends_on)
        ready = [(s.phase, s.id) for s in listed if not s.depends_on]
        heapq.heapify(ready)
        ordered: list[Step] = []
        while ready:
            _, sid = heapq.heappop(ready)
            ordered.append(by_id[sid])
            for child in dependents[sid]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, (by_id[child].phase, child))
        if len(ordered) != len(listed):
            stuck = sorted(sid for sid, n in waiting.items() if n > 0)
            raise StepGraphError(f"the steps depend on each other in a cycle: {stuck}")
        return StepGraph(tuple(ordered))

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def get(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)

    def dependents(self, step_id: str) -> set[str]:
        """Every step that waits, directly or not, on step_id."""
        children: dict[str, list[str]] = defaultdict(list)
        for step in self.steps:
            for dep in step.depends_on:
                children[dep].append(step.id)
        found: set[str] = set()
        todo = [step_id]
        while todo:
            for child in children[todo.pop()]:
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found


@dataclass(frozen=True)
class StepPlan:
    """A graph, and what was left out of it and why (shown to the user before anything runs)."""

    graph: StepGraph
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CloudStack:
    """A Pulumi stack that a plan needs (from hybridctl.core.deploy.stackconfig), as the steps see it."""

    project: str  # a directory under stacks/
    stack_name: str
    config: Params  # the values stacks/<project> reads (stacks/README.md); never a secret
    site: str | None = None  # a pools stack: its cloud site
    cluster: str | None = None  # a queues stack: its cluster
    sites: tuple[str, ...] = ()  # a queues stack: the cloud sites whose pools it admits to

    @cached_property
    def identity_digest(self) -> str:
        """The digest of its step's identity (_stack_identity), worked out once: a drill's plans share most
        of their stacks (StackConfigMemo keeps them), and a fleet's queues serialise to megabytes."""
        kind = StepKind.CLOUD_POOLS if self.cluster is None else StepKind.CLUSTER_QUEUES
        return inputs_digest(kind, _stack_identity(self))

    def tagged(self, digest: str) -> CloudStack:
        """The same stack tagged with another plan's digest. Its identity leaves the tag out, so the
        digest worked out for this stack is handed on rather than worked out again over megabytes."""
        if self.config.get(PLAN_DIGEST_KEY) == digest:
            return self
        other = replace(self, config={**self.config, PLAN_DIGEST_KEY: digest})
        other.__dict__["identity_digest"] = self.identity_digest  # where cached_property keeps it
        return other


@dataclass(frozen=True)
class BundleRef:
    """A signed model bundle on the controller, already verified (drivers/bundle.py)."""

    workload: str
    path: str
    model: str
    version: str
    manifest_sha256: str


@dataclass(frozen=True)
class DeployedStep:
    """What the state says a step made: its kind, site and recorded parameters."""

    step_id: str
    kind: str
    site: str | None
    params: Params = field(default_factory=dict)


def _hosts(count: int) -> str:
    return f"{count} host" + ("" if count == 1 else "s")


def _stack_params(stack: CloudStack) -> dict[str, object]:
    return {"project": stack.project, "stack_name": stack.stack_name, "config": dict(stack.config),
            "site": stack.site, "cluster": stack.cluster, "sites": list(stack.sites)}


def _stack_identity(stack: CloudStack) -> dict[str, object]:
    """The stack's inputs without the plan digest it is tagged with: that changes with every plan,
    even when nothing about this stack does, and must not make an unchanged stack run again."""
    params = _stack_params(stack)
    params["config"] = {k: v for k, v in stack.config.items() if k not in _VOLATILE_CONFIG}
    return params


def cloud_stacks(inventory: Inventory, plan: Plan, digest: str | Callable[[], str] | None = None,
                 memo: StackConfigMemo | None = None) -> tuple[CloudStack, ...]:
    """The Pulumi stacks the plan needs: GPU pools per cloud site, queues per cluster.

    `digest` (default: the plan file's) tags the stacks; it is no part of a step's identity.
    `memo`: see stack_configs. With a memo, the stacks are derived under the digest of the memo's
    first plan and then tagged with this plan's: the tag is the only thing of a stack it changes,
    so a failover plan's stacks come from the applied plan's although the two plans' digests differ.
    A callable `digest` is asked for the tag only then, after the derivation: the failover command
    works out the failover plan's digest meanwhile.
    """
    first = memo.digest if memo is not None else None
    under = first if first is not None else _tag(plan, digest)
    configs = stack_configs(inventory, plan, under, memo=memo)
    cluster_of = {c.site: c.cluster_name for c in configs.gpu_pools}
    stacks: list[CloudStack] = []
    # a configuration the memo kept (one of the first plan's) keeps its stack, and so the stack's digest
    for pools in configs.gpu_pools:
        build = partial(_pools_stack, pools)
        stacks.append(build() if memo is None else memo.derived(pools, (), build))
    # the Google Cloud and Azure sites' GPU pools stacks (deploy/gke_aks.py), after the EKS ones
    stacks += [CloudStack(o.project, o.stack_name, o.values(), site=o.site)
               for o in other_cloud_stacks(inventory, plan, under, catalog())]
    for queues in configs.queues:
        sites = tuple(sorted(s for s, c in cluster_of.items() if c == queues.cluster_name))
        build = partial(_queues_stack, queues, sites)
        stacks.append(build() if memo is None else memo.derived(queues, sites, build))
    tag = under if first is None else _tag(plan, digest)
    return tuple(stacks) if under == tag else tuple(s.tagged(tag) for s in stacks)


def _tag(plan: Plan, digest: str | Callable[[], str] | None) -> str:
    return digest() if callable(digest) else digest or plan_digest(plan)


def _pools_stack(config: GpuPoolsStackConfig) -> CloudStack:
    return CloudStack(config.project, config.stack_name, config.values(), site=config.site)


def _queues_stack(config: QueuesStackConfig, sites: tuple[str, ...]) -> CloudStack:
    return CloudStack(config.project, config.stack_name, config.values(), cluster=config.cluster_name, sites=sites)


def _ansible_params(kind: StepKind, hosts: AnsibleInventory, extravars: Mapping[str, object],
                    asset_digests: Mapping[str, str]) -> dict[str, object]:
    playbook = PLAYBOOKS[kind]
    return {"playbook": playbook, "playbook_digest": asset_digests.get(playbook, ""),
            "inventory": hosts.to_params(), "extravars": dict(extravars)}


def apply_steps(plan: Plan, inventory: Inventory, *, stacks: Sequence[CloudStack] | None = None,
                bundles: Mapping[str, BundleRef] | None = None, bundle_public_key: str | None = None,
                deployed: Mapping[str, DeployedStep] | None = None,
                asset_digests: Mapping[str, str] | None = None, verify_full: bool = False,
                hosted: Sequence[Placement] | None = None) -> StepPlan:
    """The steps that make `plan` real. `bundles` None means no bundles were given at all.

    `verify_full` makes model sync re-hash installed versions (and so re-runs its steps).

    `deployed` (from the state) adds the teardown of cloud stacks the new plan no longer has.
    `asset_digests` (playbook file -> digest) makes an edited playbook re-run its steps.
    `hosted`: the plan's placements that hosts run (hosted_placements), when already known (a drill
    derives them from its base plan's): all the steps read of the plan beside its stacks.
    """
    assets = asset_digests or {}
    stacks = cloud_stacks(inventory, plan) if stacks is None else stacks
    steps: list[Step] = []
    notes: list[str] = []
    pools_of_site: dict[str, str] = {}
    for stack in sorted(stacks, key=lambda s: (s.cluster is not None, s.stack_name)):
        if stack.cluster is None:
            cloud_site = stack.site or stack.stack_name
            step_id = f"cloud-pools/{cloud_site}"
            pools_of_site[cloud_site] = step_id
            steps.append(make_step(step_id, StepKind.CLOUD_POOLS, f"GPU pools of cloud site {cloud_site}",
                                   _stack_params(stack), site=cloud_site, deploys=True,
                                   digest=stack.identity_digest))
    for stack in stacks:
        if stack.cluster is not None:
            deps = [pools_of_site[s] for s in stack.sites if s in pools_of_site]
            steps.append(make_step(f"cluster-queues/{stack.cluster}", StepKind.CLUSTER_QUEUES,
                                   f"Kueue queues of cluster {stack.cluster}", _stack_params(stack),
                                   depends_on=deps, site=None, deploys=True, digest=stack.identity_digest))
    # the hosts' placements only: a fleet has tens of thousands of placements, mostly on cloud pools
    hosted = hosted_placements(inventory, plan.placements) if hosted is None else hosted
    ansible = build_ansible_inventory(inventory, plan, hosted)
    placed_pools: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # site -> workload -> pools
    for placement in hosted:
        placed_pools[placement.site][placement.workload].add(placement.pool)
    needs_models = False
    for site in inventory.sites:
        if site.kind is SiteKind.CLOUD:
            continue
        hosts = ansible.restrict(ansible.group(group_name("site", site.name)))
        if not hosts.hostvars:
            notes.append(f"site {site.name} lists no hosts: nothing for Ansible to configure there")
            continue
        preflight = make_step(f"preflight/{site.name}", StepKind.PREFLIGHT, f"preflight of {site.name} "
                              f"({_hosts(len(hosts.hostvars))})", _ansible_params(StepKind.PREFLIGHT, hosts, {}, assets),
                              site=site.name)
        baseline = make_step(f"node-baseline/{site.name}", StepKind.NODE_BASELINE, f"node baseline of {site.name}",
                             _ansible_params(StepKind.NODE_BASELINE, hosts, {}, assets),
                             depends_on=[preflight.id], site=site.name, deploys=True)
        steps += [preflight, baseline]
        targets_of: dict[frozenset[str], AnsibleInventory] = {}  # a site's workloads share a few pools
        for workload, pools in sorted(placed_pools[site.name].items()):
            key = frozenset(pools)
            targets = targets_of.get(key)
            if targets is None:
                targets = targets_of[key] = hosts.restrict(h for p in pools for h in ansible.group(group_name("pool", p)))
            if not targets.hostvars:
                continue
            if bundles is None:
                needs_models = True
                continue
            bundle = bundles.get(workload)
            if bundle is None:
                notes.append(f"no bundle for workload {workload}: its model sync at {site.name} is skipped")
                continue
            extravars: dict[str, object] = {
                "hybridctl_bundle_dir": bundle.path, "hybridctl_model": bundle.model,
                "hybridctl_model_version": bundle.version, "hybridctl_bundle_sha256": bundle.manifest_sha256,
            }
            if bundle_public_key is not None:
                extravars["hybridctl_bundle_public_key_file"] = bundle_public_key
            if verify_full:
                extravars["hybridctl_common_verify_full"] = True
            steps.append(make_step(f"model-sync/{site.name}/{workload}", StepKind.MODEL_SYNC,
                                   f"model {bundle.model} {bundle.version} to {_hosts(len(targets.hostvars))} at {site.name}",
                                   _ansible_params(StepKind.MODEL_SYNC, targets, extravars, assets),
                                   depends_on=[baseline.id], site=site.name, deploys=True))
    if needs_models:
        notes.append("model sync skipped: no --bundles directory given")
    steps += _teardown_of_dropped(steps, deployed or {})
    return StepPlan(StepGraph.of(steps), tuple(notes))


def _teardown_of_dropped(planned: list[Step], deployed: Mapping[str, DeployedStep]) -> list[Step]:
    """Destroy steps for cloud stacks that were deployed and that the new plan no longer has."""
    planned_ids = {s.id for s in planned}
    dropped = {sid: d for sid, d in deployed.items()
               if d.kind in (StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES) and sid not in planned_ids}
    if not dropped:
        return []
    queue_steps = [s.id for s in planned if s.kind == StepKind.CLUSTER_QUEUES]
    teardown = destroy_steps(dropped).graph.steps
    # A dropped pool goes after the queues that admitted to it have been updated to forget it.
    return [s if s.kind != StepKind.DESTROY_CLOUD_POOLS else
            make_step(s.id, s.kind, s.title, s.params, depends_on=(*s.depends_on, *queue_steps), site=s.site,
                      removes=s.removes)
            for s in teardown]


def destroy_steps(deployed: Mapping[str, DeployedStep], *, site: str | None = None) -> StepPlan:
    """Take down what the state says was made, in reverse dependency order; `site` limits it to one site.

    A cluster's queues go only when every cloud site they admit to goes too. On-prem and edge
    hosts are not un-configured (there is no teardown playbook): release-nodes forgets them, and
    their node configuration and models stay until the hosts are re-imaged or re-purposed.
    """
    chosen = {sid: d for sid, d in deployed.items()
              if site is None or d.site == site or (d.kind == StepKind.CLUSTER_QUEUES and site in _admitted(d))}
    pools_going = {d.site for d in chosen.values() if d.kind == StepKind.CLOUD_POOLS}
    steps: list[Step] = []
    notes: list[str] = []
    queue_destroys: list[str] = []
    for sid, d in sorted(chosen.items()):
        if d.kind != StepKind.CLUSTER_QUEUES:
            continue
        admitted = _admitted(d)
        remaining = {x.site for x in deployed.values() if x.kind == StepKind.CLOUD_POOLS} - pools_going
        if site is not None and admitted & remaining:
            notes.append(f"{sid} stays: it also admits to {', '.join(sorted(admitted & remaining))}")
            continue
        cluster = str(d.params.get("cluster") or sid.split("/", 1)[-1])
        step = make_step(f"destroy/{sid}", StepKind.DESTROY_CLUSTER_QUEUES, f"destroy Kueue queues of cluster {cluster}",
                         d.params, removes=[sid])
        steps.append(step)
        queue_destroys.append(step.id)
    for sid, d in sorted(chosen.items()):
        if d.kind == StepKind.CLOUD_POOLS:
            steps.append(make_step(f"destroy/{sid}", StepKind.DESTROY_CLOUD_POOLS,
                                   f"destroy GPU pools of cloud site {d.site}", d.params,
                                   depends_on=queue_destroys, site=d.site, removes=[sid]))
    released: dict[str, list[str]] = defaultdict(list)
    for sid, d in sorted(chosen.items()):
        if d.kind in (StepKind.NODE_BASELINE, StepKind.MODEL_SYNC) and d.site is not None:
            released[d.site].append(sid)
    for node_site, sids in sorted(released.items()):
        steps.append(make_step(f"release/{node_site}", StepKind.RELEASE_NODES,
                               f"release the hosts of {node_site} from the state", {"site": node_site, "steps": sids},
                               site=node_site, removes=sids))
    if released:
        notes.append("on-prem and edge hosts keep their node configuration and models: destroy only "
                     "releases them from the state")
    return StepPlan(StepGraph.of(steps), tuple(notes))


def _admitted(queues: DeployedStep) -> set[str]:
    """The cloud sites a deployed queues stack admits to."""
    raw = queues.params.get("sites", [])
    return {str(s) for s in raw} if isinstance(raw, list | tuple) else set()
