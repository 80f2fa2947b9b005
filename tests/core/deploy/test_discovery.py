"""Declared against found: the verdict per host that `hybridctl discover` prints."""

from __future__ import annotations

from hybridctl.core.deploy.discovery import compare_host

HOSTVARS = {"hybridctl_site": "dc", "hybridctl_pool": "p", "hybridctl_gpu": "H100", "hybridctl_expected_gpus": 4}


def preflight(count: int, **extra: object) -> dict[str, object]:
    gpus = [{"index": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(count)]
    return {"gpus": gpus, "gpu_count": count, "driver_version": "550.54.15", "problems": [],
            "disk": {"available_bytes": 51_200_000_000}, **extra}


def test_matching_host_is_ok() -> None:
    found = compare_host("h", HOSTVARS, "ok", preflight(4), None)
    assert (found.state, found.found_gpus, found.found_models) == ("ok", 4, ("NVIDIA H100 80GB HBM3",))
    assert found.free_disk_gb == 51.2 and found.driver_version == "550.54.15"


def test_fewer_or_more_gpus_is_a_mismatch() -> None:
    assert compare_host("h", HOSTVARS, "failed", preflight(2), None).problems == ("declares 4 × H100, found 2",)
    assert compare_host("h", HOSTVARS, "ok", preflight(8), None).state == "mismatch"


def test_preflight_problems_are_kept_without_repeating_the_count() -> None:
    data = preflight(2, problems=["found 2 GPUs, expected 4", "GPU 0 is NVIDIA L4, expected H100"])
    assert compare_host("h", HOSTVARS, "failed", data, None).problems == (
        "declares 4 × H100, found 2", "GPU 0 is NVIDIA L4, expected H100")


def test_unreachable_host_says_why() -> None:
    found = compare_host("h", HOSTVARS, "unreachable", {}, "ssh: connect to host 10.0.0.1 port 22: No route to host\nmore")
    assert found.state == "unreachable"
    assert found.problems == ("ssh: connect to host 10.0.0.1 port 22: No route to host",)


def test_gpus_in_mig_mode_are_reported_with_preflights_problem() -> None:
    problem = "GPU 1 has MIG mode enabled, but its pool plans whole GPUs: disable it (nvidia-smi -i 1 -mig 0, then reset the GPU)"
    data = preflight(4, mig_mode={"0": "Disabled", "1": "Enabled", "2": "Disabled", "3": "Disabled"}, problems=[problem])
    found = compare_host("h", HOSTVARS, "failed", data, None)
    assert (found.state, found.mig_enabled, found.problems) == ("mismatch", (1,), (problem,))
    assert compare_host("h", HOSTVARS, "ok", preflight(4, mig_mode={"0": "Disabled"}), None).mig_enabled == ()
