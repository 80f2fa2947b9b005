"""A small model of how Kueue v0.19 admits and dispatches, from its documentation, for the tests to
run what `synth` writes against. Verified only against the documentation (no Kueue runs here):

- MultiKueue (docs, concepts/multikueue): a workload reserves quota in the manager's ClusterQueue
  first, then is dispatched; "the quota in the manager cluster should equal the total quota
  available in all worker clusters": a lower quota leaves workers idle. The manager does not run
  the work of a dispatching queue, and "role sharing where the manager cluster is also one of
  workers for itself" is not supported; regular jobs run on the manager only through a dedicated
  (non-dispatching) ClusterQueue.
- The incremental dispatcher (Configuration `multiKueue.dispatcherName:
  kueue.x-k8s.io/multikueue-dispatcher-incremental`) nominates `stepSize` workers a round, in the
  MultiKueueConfig's `spec.clusters` order (feature gate MultiKueueIncrementalDispatcherRespectConfigOrder,
  beta and on in v0.19; pkg/controller/workloaddispatcher/incrementaldispatcher.go); with step 1, the
  first worker whose queue admits the workload gets it.
- A MultiKueueCluster's kubeconfig may not use an exec credential plugin (Kueue refuses it: the
  cluster stays inactive); a kubeconfig with a service-account token is what the docs' setup
  script (create-multikueue-kubeconfig.sh) makes.
- A ClusterQueue admits a workload while its flavors' free quota (nominal, plus what it may borrow
  from its cohort) covers it; with admission checks, the workload is admitted only once every check
  is Ready: the ProvisioningRequest check is Ready when Cluster Autoscaler provisioned nodes for all
  of the workload's pods (class best-effort-atomic-scale-up: all or none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

GPU = "nvidia.com/gpu"


def _gpu_quota(spec: Mapping[str, Any]) -> int:
    return sum(int(r["nominalQuota"]) for g in spec.get("resourceGroups", []) for f in g["flavors"]
               for r in f["resources"] if r["name"] == GPU)


@dataclass
class Cluster:
    """One cluster's Kueue objects (as synth writes them) and the GPUs its queues have admitted."""

    name: str
    objects: list[dict[str, Any]]
    used: dict[str, int] = field(default_factory=dict)  # ClusterQueue -> GPUs admitted

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def cluster_queue_of(self, namespace: str, local_queue: str) -> dict[str, Any] | None:
        lq = next((o for o in self.of("LocalQueue")
                   if o["metadata"]["namespace"] == namespace and o["metadata"]["name"] == local_queue), None)
        if lq is None:
            return None
        return next(o for o in self.of("ClusterQueue") if o["metadata"]["name"] == lq["spec"]["clusterQueue"])

    def checks(self, queue: Mapping[str, Any]) -> list[str]:
        return [c["name"] for c in queue["spec"].get("admissionChecksStrategy", {}).get("admissionChecks", [])]

    def dispatches(self, queue: Mapping[str, Any]) -> bool:
        by_name = {c["metadata"]["name"]: c for c in self.of("AdmissionCheck")}
        return any(by_name[c]["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue" for c in self.checks(queue))

    def workers(self) -> list[str]:
        (config,) = self.of("MultiKueueConfig") or [{"spec": {"clusters": []}}]
        return list(config["spec"]["clusters"])

    def free(self, queue: Mapping[str, Any]) -> int:
        """GPUs the queue may still admit: its nominal quota, plus the cohort's shared pool on its flavors
        when it is in the cohort and may borrow (the model ignores other queues' idle quota)."""
        name = queue["metadata"]["name"]
        mine = _gpu_quota(queue["spec"])
        if queue["spec"].get("cohortName"):
            flavors = {f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]}
            for cohort in self.of("Cohort"):
                mine += sum(int(r["nominalQuota"]) for g in cohort.get("spec", {}).get("resourceGroups", [])
                            for f in g["flavors"] if f["name"] in flavors for r in f["resources"] if r["name"] == GPU)
        return mine - self.used.get(name, 0)

    def admit(self, queue: Mapping[str, Any], gpus: int, ready_checks: Sequence[str] = ()) -> bool:
        """Kueue's verdict on a workload of `gpus` GPUs in `queue`: quota, then every admission check Ready."""
        if self.free(queue) < gpus or any(c not in ready_checks for c in self.checks(queue) if not self.dispatches(queue)):
            return False
        self.used[queue["metadata"]["name"]] = self.used.get(queue["metadata"]["name"], 0) + gpus
        return True


def kubeconfig_accepted(kubeconfig: Mapping[str, Any]) -> bool:
    """Whether MultiKueue accepts a worker's kubeconfig: no exec credential plugin; a token or a client
    certificate authenticates."""
    users = [u.get("user", {}) for u in kubeconfig.get("users", [])]
    return bool(users) and all("exec" not in u and ("token" in u or "client-certificate-data" in u) for u in users)


def submit(clusters: Mapping[str, Cluster], at: str, namespace: str, local_queue: str, gpus: int,
           ready_checks: Sequence[str] = ()) -> str | None:
    """Where a job of `gpus` GPUs submitted to `at`'s LocalQueue runs (a cluster name), or None (it waits).

    A dispatching queue admits it on the manager's quota, then the incremental dispatcher (step 1) tries
    the workers in MultiKueueConfig order: the first whose queue for the same namespace and LocalQueue
    admits it runs it. Any other queue runs it where it was submitted."""
    here = clusters[at]
    queue = here.cluster_queue_of(namespace, local_queue)
    if queue is None or not here.admit(queue, gpus, ready_checks):
        return None
    if not here.dispatches(queue):
        return at
    for worker in here.workers():
        assert worker != at, "Kueue does not support the manager as one of its own workers"
        remote = clusters[worker].cluster_queue_of(namespace, local_queue)
        if remote is not None and clusters[worker].admit(remote, gpus, ready_checks):
            return worker
    here.used[queue["metadata"]["name"]] -= gpus  # no worker admits it: it stays pending
    return None
