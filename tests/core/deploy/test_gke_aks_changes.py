"""plan's cloud-change table for the GKE and AKS stacks: pools created, resized in place, replaced when the
machine changes (the provider recreates the pool), deleted (revision 4)."""

from __future__ import annotations

from hybridctl.core.deploy.gke_aks import CloudPoolsStackConfig, diff_other_cloud_stacks


def stack(*pools: dict[str, object]) -> CloudPoolsStackConfig:
    return CloudPoolsStackConfig("gcp-gpu-pools", "inv", "gcp-usc1", {"nodePools": list(pools)})  # type: ignore[arg-type]


L4 = {"name": "l4", "machineType": "g2-standard-4", "accelerator": "nvidia-l4", "capacityType": "on_demand",
      "gpusPerNode": 1, "minSize": 1, "desiredSize": 1, "maxSize": 8}


def test_a_first_plan_creates_the_stack_and_its_pools() -> None:
    rows = diff_other_cloud_stacks(None, (stack(L4),))
    assert [(r.kind, r.name, r.action, r.detail) for r in rows] == [
        ("stack", "inv-gcp-usc1", "create", ""), ("node-group", "l4", "create", "g2-standard-4 min 1, desired 1, max 8")]


def test_a_size_change_is_a_resize_and_a_machine_change_a_replace_that_removes_machines() -> None:
    bigger = {**L4, "minSize": 2, "desiredSize": 2}
    [resize] = diff_other_cloud_stacks((stack(L4),), (stack(bigger),))
    assert (resize.action, resize.detail, resize.removes_machines) == ("resize", "min/desired/max 1/1/8 → 2/2/8", False)
    spot = {**L4, "capacityType": "spot"}
    [replace] = diff_other_cloud_stacks((stack(L4),), (stack(spot),))
    assert replace.action == "replace" and replace.removes_machines and "capacityType" in replace.detail
    [delete] = diff_other_cloud_stacks((stack(L4, {**L4, "name": "other"}),), (stack(L4),))
    assert (delete.name, delete.action, delete.removes_machines) == ("other", "delete", True)
    assert diff_other_cloud_stacks((stack(L4),), (stack(L4),)) == ()
