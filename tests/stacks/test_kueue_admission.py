"""Real Jobs run through a model of Kueue's admission (kueue_admission.py) over what `synth` writes for
every example: every queue admits a pod asking cpu, memory and GPUs (and EFA interfaces on EFA pools),
quotas add up to at most the GPUs the pools have, the tiers share a pool the way Kueue means it (fixed
never preempted, burst preempting opportunistic when its window opens), and a day of the
train-onprem-serve-cloud example, its Dublin data centre run as a Kubernetes cluster, admits the 19:00
training run."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.deploy.stackvalues import StackConfigs
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import CapacityType, Inventory, SiteKind
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.paths import stacks_dir
from kueue_admission import Kueue, of_job
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

EXAMPLES = [p.name for p in EXAMPLE_PATHS]
GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"


DUBLIN = "train-onprem-serve-cloud.yaml with dub-k8s"


@cache
def synthesized(name: str) -> tuple[StackConfigs, dict[str, ProgramRun]]:
    inventory = with_dublin_cluster() if name == DUBLIN else example(name)
    configs = stack_configs(inventory, plan(inventory, options=AT_PLAN_WEEK), "sha256:test")
    return configs, {c.cluster_name: synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in configs.queues}


@cache
def example(name: str) -> Inventory:
    return load_inventory(Path(EXAMPLE_PATHS[0]).parent / name).inventory


def kueue_of(run: ProgramRun) -> Kueue:
    return Kueue([r.inputs for r in run.resources if r.type.startswith("kubernetes:")], run.outputs["kueueConfiguration"])


def efa_pools(configs: StackConfigs) -> set[str]:
    return {p.name for c in configs.gpu_pools for p in c.node_pools if p.efa_interfaces}


def job(name: str, namespace: str, queue: str, priority: str, pods: int, **per_pod: Any) -> dict[str, Any]:
    """A batch/v1 Job as a user writes it: the queue and priority labels, a main container asking `per_pod`
    (its limits equal to its requests, as a GPU and EFA need)."""
    resources = {k.replace("_", "-").replace("gpu", GPU).replace("efa", EFA): v for k, v in per_pod.items()}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority}},
            "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                     "template": {"spec": {"restartPolicy": "Never", "containers": [
                         {"name": "main", "image": "example.com/trainer:1", "resources": {"requests": resources, "limits": resources}}]}}}}


def service_pod(namespace: str, queue: str, priority: str, efa: bool) -> dict[str, Any]:
    """A 1-GPU service replica: 8 cores, 32 GiB, an EFA interface where the pool has them."""
    return job("serve", namespace, queue, priority, 1, gpu=1, cpu="8", memory="32Gi", ephemeral_storage="50Gi",
               **({"efa": 1} if efa else {}))


def training_gang(namespace: str, queue: str, priority: str) -> dict[str, Any]:
    """A 64-GPU training gang: 8 pods of a p5.48xlarge each, every GPU with its EFA interfaces."""
    return job("pretrain", namespace, queue, priority, 8, gpu=8, efa=32, cpu="180", memory="1800Gi", hugepages_2Mi="5120Mi")


def sidecar(namespace: str, queue: str, priority: str) -> dict[str, Any]:
    """A CPU-only helper (a data loader, a metrics exporter) in a workload's namespace."""
    return job("loader", namespace, queue, priority, 1, cpu="500m", memory="512Mi")


def entry_points(kueue: Kueue) -> list[tuple[str, str, str, str]]:
    """(ClusterQueue, namespace, LocalQueue, priority class) for every queue: one of its workloads' LocalQueues."""
    out = []
    tiers = {o["metadata"]["name"]: o["metadata"]["labels"]["hybridctl.io/tier"] for o in kueue.of("Namespace")}
    classes = {o["metadata"]["labels"]["hybridctl.io/tier"]: o["metadata"]["name"] for o in kueue.of("WorkloadPriorityClass")}
    for name in kueue.queues:
        lq = next(o for o in kueue.of("LocalQueue") if o["spec"]["clusterQueue"] == name)
        ns = lq["metadata"]["namespace"]
        out.append((name, ns, lq["metadata"]["name"], classes[tiers[ns]]))
    return out


def reaches_efa(kueue: Kueue, queue: str, efa: set[str]) -> bool:
    return any(f in efa for _, flavors in kueue.queues[queue].groups() for f in flavors)


@pytest.mark.parametrize("name", EXAMPLES)
class TestEveryQueueAdmitsRealPods:
    def test_a_one_gpu_service_asking_cpu_memory_and_efa_is_admitted_by_every_queue(self, name: str) -> None:
        """Before: every queue covered nvidia.com/gpu only and Kueue excluded nothing: cpu and memory were
        uncovered, so Kueue never admitted it."""
        configs, runs = synthesized(name)
        for run in runs.values():
            for queue, ns, lq, priority in entry_points(kueue_of(run)):
                kueue = kueue_of(run)  # an empty cluster each time
                wl = of_job(service_pod(ns, lq, priority, reaches_efa(kueue, queue, efa_pools(configs))), kueue.priorities)
                assert kueue.submit(wl) == "admitted", (run.stack, queue)

    def test_a_cpu_only_sidecar_is_admitted_without_taking_gpu_quota(self, name: str) -> None:
        _, runs = synthesized(name)
        for run in runs.values():
            for _, ns, lq, priority in entry_points(kueue_of(run)):
                kueue = kueue_of(run)
                wl = of_job(sidecar(ns, lq, priority), kueue.priorities)
                assert kueue.submit(wl) == "admitted" and wl.admitted_on == {}

    def test_quotas_add_up_to_at_most_the_gpus_each_pool_has(self, name: str) -> None:
        """Before: the enterprise example put 24 GPUs of quota (two burst queues' planned 16 and 8) on one
        8-GPU reserved p5: Kueue admitted work that no machine could run."""
        inventory = example(name)
        _, runs = synthesized(name)
        for run in runs.values():
            kueue = kueue_of(run)
            for cohort, own in kueue.cohort_quota.items():
                total: dict[str, float] = {f: g for (f, r), g in own.items() if r == GPU}
                for q in kueue.members(cohort):
                    for (f, r), g in q.nominal.items():
                        if r == GPU:
                            total[f] = total.get(f, 0) + g
                for flavor, gpus in total.items():
                    assert gpus <= pool_gpus(inventory, flavor), (run.stack, flavor, gpus)


def pool_gpus(inventory: Inventory, pool_name: str) -> int:
    """The GPUs a pool's machines have: owned, reserved, or a pay-per-use pool's quota in whole machines."""
    for site in inventory.sites:
        for pool in site.pools:
            if pool.name == pool_name:
                if site.kind is SiteKind.ONPREM:
                    return pool.gpus or 0
                gpn = catalog().instances[pool.instance_type or ""].gpus_per_node
                return (pool.max_gpus or 0) // gpn * gpn
    raise AssertionError(pool_name)


class TestTrainingGang:
    def test_a_64_gpu_gang_with_efa_is_admitted_whole_where_its_quota_is(self) -> None:
        """cloud-burst: foundation-pretrain's jobs spill on premises (ash-k8s, 32 H100s planned); a 64-GPU
        gang asking 32 EFA interfaces a pod is never inadmissible: it waits for quota, and is admitted in a
        cloud queue with the room."""
        configs, runs = synthesized("cloud-burst.yaml")
        assert efa_pools(configs)
        for run in runs.values():
            kueue = kueue_of(run)
            for queue, ns, lq, priority in entry_points(kueue):
                if reaches_efa(kueue, queue, efa_pools(configs)):
                    assert kueue.submit(of_job(training_gang(ns, lq, priority), kueue.priorities)) in {"admitted", "pending"}
        cloud = kueue_of(runs["ml-use1"])
        wl = of_job(training_gang("foundation-pretrain", "foundation-pretrain-local", "cloud-burst-burst"), cloud.priorities)
        cloud.queues[cloud.queue_of(wl).name].nominal[("use1-p5-od", GPU)] = 64  # a fleet planned that big
        assert cloud.submit(wl) == "admitted" and wl.admitted_on == {GPU: "use1-p5-od"}


class TestTiersShareAPool:
    def test_fixed_work_is_never_preempted(self) -> None:
        """cloud-burst's ash-k8s: the fixed support-assistant holds its L40S quota; burst and opportunistic
        work filling the cluster never takes it."""
        _, runs = synthesized("cloud-burst.yaml")
        kueue = kueue_of(runs["ash-k8s"])
        fixed = [of_job(service_pod("support-assistant", "support-assistant", "cloud-burst-fixed", False), kueue.priorities)
                 for _ in range(3)]
        assert [kueue.submit(w) for w in fixed] == ["admitted"] * 3
        for _ in range(40):
            kueue.submit(of_job(service_pod("nightly-eval", "nightly-eval", "cloud-burst-burst", False), kueue.priorities))
        assert all(w in kueue.running for w in fixed)

    def test_the_enterprise_reserved_p5_admits_one_8_gpu_run_at_a_time(self) -> None:
        """Three burst workloads time-share the 8-GPU reserved p5: whichever runs, the next one waits."""
        _, runs = synthesized("enterprise")
        kueue = kueue_of(runs["ml-use1"])
        first = of_job(job("a", "recsys-train", "recsys-train", "enterprise-burst", 1, gpu=8, cpu="96"), kueue.priorities)
        assert kueue.submit(first) == "admitted"
        second = of_job(job("b", "support-llm-finetune-us", "support-llm-finetune-us", "enterprise-burst", 1, gpu=8),
                        kueue.priorities)
        assert kueue.submit(second) == "pending"
        kueue.finish(first)
        assert kueue.submit(second) == "admitted"

    def test_every_paid_gpu_of_the_enterprise_frankfurt_cluster_is_in_some_queues_reach(self) -> None:
        """Before: ml-euc1's p5 ran for 2 GPUs of a fixed service; its other 6 sat in the cohort, which no
        queue of the cluster could borrow from."""
        _, runs = synthesized("enterprise")
        kueue = kueue_of(runs["ml-euc1"])
        in_reach = [q.nominal.get(("euc1-p5-od", GPU), 0) + (kueue.cohort_free("enterprise", ("euc1-p5-od", GPU))
                    if q.cohort and q.borrowing.get(("euc1-p5-od", GPU)) != 0 else 0) for q in kueue.queues.values()]
        assert max(in_reach) == 8


def with_dublin_cluster() -> Inventory:
    """train-onprem-serve-cloud with its Dublin data centre run as a Kubernetes cluster (inventory revision 3)."""
    inventory = example("train-onprem-serve-cloud.yaml")
    sites = [s.model_copy(update={"cluster": "dub-k8s"}) if s.name == "dc-dublin" else s for s in inventory.sites]
    return inventory.model_copy(update={"sites": sites})


class TestADayOfTrainOnpremServeCloud:
    """Dublin's 32 owned A100s: twelve notebooks in the working day (opportunistic), the ranker's training
    (burst, 2 x 8 GPUs) from 19:00, evaluation at night. Notebooks are interactive: nobody stops them at
    19:00, and more are opened while GPUs are free."""

    def test_the_19_00_training_run_is_admitted_and_nothing_admitted_exceeds_the_machines(self) -> None:
        _, runs = synthesized(DUBLIN)
        kueue = kueue_of(runs["dub-k8s"])
        prio = {t: f"train-onprem-serve-cloud-{t}" for t in ("burst", "opportunistic")}

        def used() -> float:
            return sum(g for q in kueue.queues.values() for (f, r), g in q.used.items() if r == GPU)

        # 00:00-06:00 evaluation, then it ends
        evals = [of_job(job(f"eval-{i}", "ranker-eval", "ranker-eval", prio["burst"], 1, gpu=1, cpu="8", memory="64Gi"),
                        kueue.priorities) for i in range(4)]
        assert [kueue.submit(w) for w in evals] == ["admitted"] * 4
        for w in evals:
            kueue.finish(w)
        # 08:00 the team opens its notebooks, and keeps opening them while they are admitted
        notebooks = []
        for i in range(40):
            nb = of_job(job(f"nb-{i}", "ranker-notebooks", "ranker-notebooks", prio["opportunistic"], 1,
                            gpu=1, cpu="8", memory="64Gi"), kueue.priorities)
            if kueue.submit(nb) != "admitted":
                break
            notebooks.append(nb)
            assert used() <= 32
        assert len(notebooks) >= 12
        # 19:00 the training run: two 8-GPU pods
        train = of_job(job("ranker-train", "ranker-train", "ranker-train", prio["burst"], 2, gpu=8, cpu="96",
                           memory="1000Gi"), kueue.priorities)
        verdict = kueue.submit(train)
        assert verdict.startswith("admitted"), verdict
        assert train in kueue.running and used() <= 32
        if len(notebooks) > 16:
            assert verdict == f"admitted after preempting {len(notebooks) - 16}"


def test_dublin_as_a_cluster_is_a_variant_of_the_example() -> None:
    inventory = with_dublin_cluster()
    (dublin,) = [s for s in inventory.sites if s.name == "dc-dublin"]
    assert dublin.cluster == "dub-k8s" and dublin.pools[0].capacity_type is CapacityType.RESERVED
