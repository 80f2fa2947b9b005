"""Every Kueue object the k8s-queues program generates is valid against Kueue's own CRD schemas."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kueue_crd_schema import crds, errors, storage_version
from pulumi_stack_harness import ProgramRun
from test_k8s_queues_stack import FLAVORS, REMOTES, run

# Configurations that between them exercise every object kind and optional branch.
SCENARIOS: dict[str, dict[str, Any]] = {
    "single-cluster": {},
    "multikueue": {"multiKueueClusters": REMOTES},
    "provisioning-request": {"provisioningRequest": "true"},
    "cpu-and-memory": {"flavors": [{**f, "cpuPerGpu": 24, "memoryGiBPerGpu": 256} for f in FLAVORS]},
    "no-opportunistic-pool": {"queues": {"fixed": [{"flavor": "use1-p5-on-demand", "gpus": 8}]}},
}


def kueue_objects(run_: ProgramRun) -> list[dict[str, Any]]:
    """The objects as the provider would send them: apiVersion, kind, metadata and the body."""
    return [r.inputs for r in run_.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def generated(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return kueue_objects(run(**SCENARIOS[request.param]))


class TestGeneratedObjects:
    def test_every_generated_object_is_valid(self, generated: list[dict[str, Any]]) -> None:
        assert generated, "no Kueue object was generated"
        problems = {f"{o['kind']}/{o['metadata']['name']}": errors(o) for o in generated}
        assert {k: v for k, v in problems.items() if v} == {}

    def test_every_kind_in_use_is_covered_by_a_copied_crd(self) -> None:
        kinds = {o["kind"] for scenario in SCENARIOS.values() for o in kueue_objects(run(**scenario))}
        assert kinds == set(crds())  # all nine CRDs copied are used, and nothing else is generated

    def test_objects_are_written_at_the_storage_version(self, generated: list[dict[str, Any]]) -> None:
        for obj in generated:
            assert obj["apiVersion"] == f"kueue.x-k8s.io/{storage_version(obj['kind'])}"

    def test_resource_groups_keep_kueues_cel_rules(self, generated: list[dict[str, Any]]) -> None:
        # CEL is not evaluated by the schema check; these are the rules our objects could break.
        for obj in generated:
            if obj["kind"] not in ("ClusterQueue", "Cohort"):
                continue
            seen_flavors: set[str] = set()
            for group in obj["spec"].get("resourceGroups", []):
                for flavor in group["flavors"]:
                    # Each flavor lists exactly the covered resources, in the same order.
                    assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
                    assert flavor["name"] not in seen_flavors  # a flavor is in one group only
                    seen_flavors.add(flavor["name"])
                    for resource in flavor["resources"]:
                        if obj["kind"] == "Cohort":
                            # Limits on a Cohort need a parent cohort; ours has none.
                            assert "borrowingLimit" not in resource and "lendingLimit" not in resource
                        elif "borrowingLimit" in resource or "lendingLimit" in resource:
                            assert obj["spec"].get("cohortName")
            if obj["kind"] == "ClusterQueue":
                preemption = obj["spec"]["preemption"]
                borrow = preemption.get("borrowWithinCohort", {}).get("policy", "Never")
                assert not (preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow != "Never")


def _cluster_queue(generated_objects: list[dict[str, Any]]) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in generated_objects if o["kind"] == "ClusterQueue"))


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return kueue_objects(run(multiKueueClusters=REMOTES))


class TestTheValidatorCatchesMistakes:
    def test_a_misspelt_spec_field_fails(self, objects: list[dict[str, Any]]) -> None:
        cq = _cluster_queue(objects)
        cq["spec"]["cohortNmae"] = cq["spec"].pop("cohortName")
        assert any("cohortNmae" in e for e in errors(cq))

    def test_a_misspelt_nested_field_fails(self, objects: list[dict[str, Any]]) -> None:
        cq = _cluster_queue(objects)
        resource = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        resource["nominalQuotas"] = resource.pop("nominalQuota")
        found = errors(cq)
        assert any("nominalQuotas" in e for e in found)
        assert any("'nominalQuota' is a required property" in e for e in found)

    def test_a_v1beta1_field_name_fails_at_v1beta2(self, objects: list[dict[str, Any]]) -> None:
        # v1beta1 called it `cohort`; v1beta2 renamed it `cohortName`.
        cq = _cluster_queue(objects)
        cq["spec"]["cohort"] = cq["spec"].pop("cohortName")
        assert any("'cohort' was unexpected" in e for e in errors(cq))

    def test_a_value_outside_an_enum_fails(self, objects: list[dict[str, Any]]) -> None:
        cq = _cluster_queue(objects)
        cq["spec"]["preemption"]["reclaimWithinCohort"] = "Always"
        assert any("preemption/reclaimWithinCohort" in e for e in errors(cq))

    def test_an_unknown_top_level_field_fails(self, objects: list[dict[str, Any]]) -> None:
        wpc = copy.deepcopy(next(o for o in objects if o["kind"] == "WorkloadPriorityClass"))
        wpc["priority"] = wpc.pop("value")
        assert any("'priority' was unexpected" in e for e in errors(wpc))

    def test_a_label_value_that_kubernetes_rejects_fails(self, objects: list[dict[str, Any]]) -> None:
        flavor = copy.deepcopy(next(o for o in objects if o["kind"] == "ResourceFlavor"))
        flavor["metadata"]["labels"]["hybridctl.io/plan-digest"] = "sha256:5f2c0e"
        assert any("metadata/labels" in e for e in errors(flavor))

    def test_a_namespaced_kind_needs_a_namespace_and_a_cluster_kind_refuses_one(self, objects: list[dict[str, Any]]) -> None:
        lq = copy.deepcopy(next(o for o in objects if o["kind"] == "LocalQueue"))
        del lq["metadata"]["namespace"]
        assert any("'namespace' is a required property" in e for e in errors(lq))
        cq = _cluster_queue(objects)
        cq["metadata"]["namespace"] = "default"
        assert any("'namespace' was unexpected" in e for e in errors(cq))

    def test_an_unserved_version_fails(self, objects: list[dict[str, Any]]) -> None:
        cq = _cluster_queue(objects)
        cq["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
        assert errors(cq) == ["ClusterQueue is not served at kueue.x-k8s.io/v1alpha1; served: ['v1beta1', 'v1beta2']"]

