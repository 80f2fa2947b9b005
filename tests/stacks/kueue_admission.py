"""A small model of Kueue v0.19's admission (classical preemption, no fair sharing), written from its
documentation and its CRDs' field descriptions, for the tests to run real Job specs against what
`synth` writes. Verified only against the documentation (no Kueue runs here):

- A workload's requests are its pod sets' (pods x each pod's requests: the sum of its containers',
  or their limits where a request is not set), less the resources whose names start with one of the
  Configuration's `resources.excludeResourcePrefixes` (docs, reference/kueue-config: "resources to be
  ignored by Kueue"). A resource left that no resource group of the ClusterQueue covers makes the
  workload **inadmissible** (concepts/cluster_queue: "a workload ... requesting resources that are not
  covered by the ClusterQueue is not admitted").
- A ClusterQueue admits only workloads of namespaces its `namespaceSelector` matches, through a
  LocalQueue of theirs pointing at it.
- Per resource group, a pod set gets the first flavor, in the queue's order, where every requested
  resource of the group fits: its usage plus the request within its nominal quota, or beyond it by
  borrowing, within its `borrowingLimit` and what the cohort has unused (concepts/cluster_queue,
  "Borrowing"): the cohort's own quota plus each member's lendable quota (its `lendingLimit`, else its
  nominal), less what the members use beyond the part they keep (nominal - lendingLimit).
- When no flavor fits, preemption (concepts/preemption, the CRD's `preemption` descriptions): only
  workloads of ClusterQueues using more than their nominal quota on the flavor are candidates in the
  cohort; `reclaimWithinCohort` (Any, or LowerPriority: lower priority only) applies when the pending
  workload fits within its own nominal quota, `borrowWithinCohort` (LowerPriority, up to its
  `maxPriorityThreshold`) when it needs to borrow; `withinClusterQueue: LowerPriority` preempts lower
  priorities in its own queue. Candidates go lowest priority first, newest first, until it fits.
- A workload's priority is its WorkloadPriorityClass's `value` (label `kueue.x-k8s.io/priority-class`).
- With admission checks, quota is reserved and the workload admitted once every check is Ready.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(value: object) -> float:
    """A Kubernetes quantity ("500m", "32Gi", 8) as a number."""
    match = QUANTITY.match(str(value))
    assert match, f"not a quantity: {value!r}"
    return float(match.group(1)) * SCALE[match.group(2)]


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, float]:
    """One pod's requests: its containers' summed, a limit standing for a request not set."""
    out: dict[str, float] = defaultdict(float)
    for container in pod_spec.get("containers", []):
        resources = container.get("resources", {})
        asked = {**resources.get("limits", {}), **resources.get("requests", {})}
        for name, value in asked.items():
            out[name] += quantity(value)
    return dict(out)


@dataclass(frozen=True)
class PodSet:
    count: int
    requests: Mapping[str, float]  # per pod

    def total(self, resource: str) -> float:
        return self.count * self.requests.get(resource, 0.0)


@dataclass
class Workload:
    name: str
    namespace: str
    local_queue: str
    priority: int
    pod_sets: tuple[PodSet, ...]
    admitted_on: dict[str, str] = field(default_factory=dict)  # resource -> flavor, once admitted
    cluster_queue: str = ""
    order: int = 0  # admission order: newest preempted first


def of_job(job: Mapping[str, Any], priorities: Mapping[str, int]) -> Workload:
    """The Workload Kueue makes of a batch/v1 Job: one pod set of `parallelism` pods."""
    meta = job["metadata"]
    labels = meta.get("labels", {})
    pods = PodSet(int(job["spec"].get("parallelism", 1)), pod_requests(job["spec"]["template"]["spec"]))
    return Workload(meta["name"], meta["namespace"], labels["kueue.x-k8s.io/queue-name"],
                    priorities.get(labels.get("kueue.x-k8s.io/priority-class", ""), 0), (pods,))


class Inadmissible(Exception):
    """Kueue will never admit the workload as it is (a resource not covered, no queue for it)."""


FlavorResource = tuple[str, str]  # (flavor, resource)


@dataclass
class Queue:
    name: str
    spec: Mapping[str, Any]
    nominal: dict[FlavorResource, float]
    borrowing: dict[FlavorResource, float]  # limits set
    lending: dict[FlavorResource, float]
    used: dict[FlavorResource, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def cohort(self) -> str | None:
        return self.spec.get("cohortName")

    def groups(self) -> list[tuple[list[str], list[str]]]:
        """(covered resources, flavors in order) of each resource group."""
        return [(list(g["coveredResources"]), [f["name"] for f in g["flavors"]]) for g in self.spec.get("resourceGroups", [])]

    def kept(self, fr: FlavorResource) -> float:
        """What it keeps for itself (never lent)."""
        return self.nominal.get(fr, 0.0) - self.lending.get(fr, self.nominal.get(fr, 0.0))

    def borrowing_now(self, fr: FlavorResource) -> bool:
        return self.used[fr] > self.nominal.get(fr, 0.0)


def _quotas(resource_groups: Sequence[Mapping[str, Any]]) -> tuple[dict[FlavorResource, float], ...]:
    nominal, borrowing, lending = {}, {}, {}
    for group in resource_groups:
        for flavor in group["flavors"]:
            for r in flavor["resources"]:
                fr = (flavor["name"], r["name"])
                nominal[fr] = quantity(r["nominalQuota"])
                if "borrowingLimit" in r:
                    borrowing[fr] = quantity(r["borrowingLimit"])
                if "lendingLimit" in r:
                    lending[fr] = quantity(r["lendingLimit"])
    return nominal, borrowing, lending


class Kueue:
    """One cluster's Kueue: its objects as synth writes them, its Configuration, what it has admitted."""

    def __init__(self, objects: Sequence[Mapping[str, Any]], configuration: Mapping[str, Any]) -> None:
        self.objects = list(objects)
        self.excluded = tuple(configuration.get("resources", {}).get("excludeResourcePrefixes", ()))
        self.queues = {o["metadata"]["name"]: Queue(o["metadata"]["name"], o["spec"], *_quotas(o["spec"].get("resourceGroups", [])))
                       for o in self.of("ClusterQueue")}
        self.cohort_quota: dict[str, dict[FlavorResource, float]] = {
            o["metadata"]["name"]: _quotas(o.get("spec", {}).get("resourceGroups", []))[0] for o in self.of("Cohort")}
        self.priorities = {o["metadata"]["name"]: int(o["value"]) for o in self.of("WorkloadPriorityClass")}
        self.flavors = {o["metadata"]["name"] for o in self.of("ResourceFlavor")}
        self.running: list[Workload] = []
        self._order = 0

    def of(self, kind: str) -> list[Mapping[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    # --- which queue -------------------------------------------------------------------------
    def queue_of(self, wl: Workload) -> Queue:
        lq = next((o for o in self.of("LocalQueue") if o["metadata"]["namespace"] == wl.namespace
                   and o["metadata"]["name"] == wl.local_queue), None)
        if lq is None:
            raise Inadmissible(f"LocalQueue {wl.namespace}/{wl.local_queue} does not exist")
        queue = self.queues.get(lq["spec"]["clusterQueue"])
        if queue is None:
            raise Inadmissible(f"ClusterQueue {lq['spec']['clusterQueue']} does not exist")
        ns = next((o for o in self.of("Namespace") if o["metadata"]["name"] == wl.namespace), None)
        labels = (ns or {}).get("metadata", {}).get("labels", {})
        for expr in queue.spec.get("namespaceSelector", {}).get("matchExpressions", []):
            assert expr["operator"] == "In"
            if labels.get(expr["key"]) not in expr["values"]:
                raise Inadmissible(f"namespace {wl.namespace} is not one ClusterQueue {queue.name} admits")
        missing = [f for _, flavors in queue.groups() for f in flavors if f not in self.flavors]
        if missing:
            raise Inadmissible(f"ClusterQueue {queue.name} is inactive: no ResourceFlavor {', '.join(missing)}")
        return queue

    def counted(self, pod_set: PodSet) -> list[str]:
        """The resources Kueue counts of a pod set: those asked, less the excluded prefixes."""
        return sorted(r for r, v in pod_set.requests.items() if v and not r.startswith(self.excluded))

    # --- quota ------------------------------------------------------------------------------
    def members(self, cohort: str | None) -> list[Queue]:
        return [q for q in self.queues.values() if cohort is not None and q.cohort == cohort]

    def cohort_free(self, cohort: str, fr: FlavorResource) -> float:
        members = self.members(cohort)
        pool = self.cohort_quota.get(cohort, {}).get(fr, 0.0) + sum(
            q.lending.get(fr, q.nominal.get(fr, 0.0)) for q in members)
        return pool - sum(max(0.0, q.used[fr] - q.kept(fr)) for q in members)

    def fits(self, queue: Queue, fr: FlavorResource, amount: float) -> bool:
        """Whether `amount` more of fr fits the queue now: in the part of its quota it keeps, then in what its
        cohort has unused (its own lendable part included), within its borrowingLimit beyond its nominal."""
        if fr not in queue.nominal:
            return False
        used, nominal = queue.used[fr], queue.nominal[fr]
        if queue.cohort is None:
            return used + amount <= nominal + 1e-9
        if used + amount - nominal > queue.borrowing.get(fr, float("inf")) + 1e-9:
            return False
        local = max(0.0, queue.kept(fr) - used)
        return amount <= local or amount - local <= self.cohort_free(queue.cohort, fr) + 1e-9

    def _assign(self, queue: Queue, wl: Workload) -> dict[str, str] | None:
        """Resource -> flavor for every counted resource, or None when nothing fits now."""
        assignment: dict[str, str] = {}
        for pod_set in wl.pod_sets:
            for covered, flavors in queue.groups():
                asked = [r for r in self.counted(pod_set) if r in covered]
                if not asked:
                    continue
                chosen = next((f for f in flavors if all(self.fits(queue, (f, r), self._need(wl, r)) for r in asked)), None)
                if chosen is None:
                    return None
                assignment.update(dict.fromkeys(asked, chosen))
        return assignment

    @staticmethod
    def _need(wl: Workload, resource: str) -> float:
        return sum(p.total(resource) for p in wl.pod_sets)

    # --- admission --------------------------------------------------------------------------
    def submit(self, wl: Workload) -> str:
        """'admitted', 'admitted after preempting N', or 'pending' (waits for quota). Raises Inadmissible."""
        queue = self.queue_of(wl)
        for pod_set in wl.pod_sets:
            uncovered = [r for r in self.counted(pod_set) if not any(r in covered for covered, _ in queue.groups())]
            if uncovered:
                raise Inadmissible(f"ClusterQueue {queue.name} does not cover {', '.join(uncovered)}")
        assignment = self._assign(queue, wl)
        if assignment is not None:
            self._admit(queue, wl, assignment)
            return "admitted"
        victims = self._preemption(queue, wl)
        if victims is None:
            return "pending"
        for victim in victims:
            self.finish(victim)
        assignment = self._assign(queue, wl)
        assert assignment is not None
        self._admit(queue, wl, assignment)
        return f"admitted after preempting {len(victims)}"

    def _admit(self, queue: Queue, wl: Workload, assignment: Mapping[str, str]) -> None:
        for resource, flavor in assignment.items():
            queue.used[(flavor, resource)] += self._need(wl, resource)
        wl.admitted_on, wl.cluster_queue = dict(assignment), queue.name
        self._order += 1
        wl.order = self._order
        self.running.append(wl)

    def finish(self, wl: Workload) -> None:
        """The workload ends, or is preempted: its quota is released."""
        queue = self.queues[wl.cluster_queue]
        for resource, flavor in wl.admitted_on.items():
            queue.used[(flavor, resource)] -= self._need(wl, resource)
        self.running.remove(wl)

    def _preemption(self, queue: Queue, wl: Workload) -> list[Workload] | None:
        """The workloads Kueue would preempt for `wl` on the first flavor where that makes it fit, or None."""
        policy = queue.spec.get("preemption", {})
        for covered, flavors in queue.groups():
            asked = [r for p in wl.pod_sets for r in self.counted(p) if r in covered]
            for flavor in flavors:
                if not asked or not all((flavor, r) in queue.nominal for r in asked):
                    continue
                within_nominal = all(queue.used[(flavor, r)] + self._need(wl, r) <= queue.nominal[(flavor, r)] for r in asked)
                candidates = [c for c in self.running if self._may_preempt(queue, policy, wl, c, flavor, asked, within_nominal)]
                candidates.sort(key=lambda c: (c.priority, -c.order))
                chosen: list[Workload] = []
                saved = {q.name: dict(q.used) for q in self.queues.values()}
                for victim in candidates:
                    if all(self.fits(queue, (flavor, r), self._need(wl, r)) for r in asked):
                        break
                    chosen.append(victim)
                    vq = self.queues[victim.cluster_queue]
                    for resource, f in victim.admitted_on.items():
                        vq.used[(f, resource)] -= self._need(victim, resource)
                ok = all(self.fits(queue, (flavor, r), self._need(wl, r)) for r in asked)
                for q in self.queues.values():
                    q.used = defaultdict(float, saved[q.name])
                if ok and chosen:
                    return chosen
        return None

    def _may_preempt(self, queue: Queue, policy: Mapping[str, Any], wl: Workload, victim: Workload, flavor: str,
                     asked: Sequence[str], within_nominal: bool) -> bool:
        if flavor not in victim.admitted_on.values():
            return False
        if victim.cluster_queue == queue.name:
            return policy.get("withinClusterQueue", "Never") == "LowerPriority" and victim.priority < wl.priority
        other = self.queues[victim.cluster_queue]
        if other.cohort is None or other.cohort != queue.cohort:
            return False
        if not any(other.borrowing_now((flavor, r)) for r in asked):
            return False  # Kueue preempts in the cohort only from queues using more than their nominal quota
        if within_nominal:
            reclaim = policy.get("reclaimWithinCohort", "Never")
            return reclaim == "Any" or (reclaim == "LowerPriority" and victim.priority < wl.priority)
        borrow = policy.get("borrowWithinCohort", {})
        return (borrow.get("policy", "Never") == "LowerPriority" and victim.priority < wl.priority
                and victim.priority <= borrow.get("maxPriorityThreshold", victim.priority))
