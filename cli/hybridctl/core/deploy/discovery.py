"""Discovery: the GPUs each host declares (through its pool) against the GPUs preflight found."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class HostDiscovery:
    host: str
    site: str
    pool: str
    declared_gpu: str
    declared_gpus: int
    state: str  # ok | mismatch | unreachable | failed
    found_gpus: int | None = None
    found_models: tuple[str, ...] = ()
    driver_version: str | None = None
    free_disk_gb: float | None = None
    problems: tuple[str, ...] = ()
    mig_enabled: tuple[int, ...] = ()  # GPUs preflight found in MIG mode (hybridctl plans whole GPUs)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def compare_host(host: str, hostvars: Mapping[str, object], state: str, data: Mapping[str, object],
                 message: str | None) -> HostDiscovery:
    """One host's verdict. `state` is the Ansible outcome; `data` is preflight's hybridctl_result."""
    declared_gpu = str(hostvars.get("hybridctl_gpu", ""))
    expected = hostvars.get("hybridctl_expected_gpus", 0)
    declared = expected if isinstance(expected, int) else 0
    site, pool = str(hostvars.get("hybridctl_site", "")), str(hostvars.get("hybridctl_pool", ""))
    if state == "unreachable" or not data:
        reason = (message or "no answer").strip().splitlines()[0][:200] if message else "no preflight data"
        return HostDiscovery(host, site, pool, declared_gpu, declared,
                             "unreachable" if state == "unreachable" else "failed", problems=(reason,))
    gpus = data.get("gpus")
    models = tuple(sorted({str(g.get("name", "?")) for g in gpus if isinstance(g, Mapping)})) \
        if isinstance(gpus, list) else ()
    count_value = data.get("gpu_count")
    count = count_value if isinstance(count_value, int) else 0
    problems: list[str] = []
    if count != declared:  # preflight itself flags only too few; discovery flags any difference
        problems.append(f"declares {declared} × {declared_gpu}, found {count}")
    reported = data.get("problems")
    if isinstance(reported, list):
        problems += [str(p) for p in reported if not (str(p).startswith("found ") and "GPUs, expected" in str(p))]
    disk = data.get("disk")
    available = _number(disk.get("available_bytes")) if isinstance(disk, Mapping) else None
    free = round(available / 1e9, 1) if available is not None else None
    modes = data.get("mig_mode")
    mig = tuple(sorted(int(i) for i, mode in modes.items() if mode == "Enabled" and str(i).isdigit())) \
        if isinstance(modes, Mapping) else ()
    driver = data.get("driver_version")
    return HostDiscovery(host, site, pool, declared_gpu, declared, "mismatch" if problems else "ok",
                         found_gpus=count, found_models=models,
                         driver_version=str(driver) if driver else None, free_disk_gb=free,
                         problems=tuple(problems), mig_enabled=mig)
