"""Wall time of model-sync.yml distributing a signed bundle to the real SSH test hosts.

Run as root:  .venv/bin/python bench/model_sync_bench.py [--hosts 8 32] [--repeat 3] [--mb 64]
              [--compare OLD_PLAYBOOKS_DIR]

Each run starts fresh hosts and syncs a new version (so every run copies, verifies and
activates), through the Ansible driver with its defaults. Besides wall time it prints CPU time
(user+sys), which varies far less than wall time with the load of a shared machine: by cgroup
(bench/cgroup_cpu.py), everything on the controller side (`controller`: this process,
ansible-playbook, its workers and the ssh clients and ControlPersist masters) and everything on
the test hosts (`hosts`: sshd, sftp-server, the module's python3), also per host; by getrusage,
as before cgroups were used, ansible-playbook's process tree without the daemonized ssh masters
(`ansible`) and this process (`driver`). With --compare, every run is made
once with the playbooks of this checkout and once with OLD_PLAYBOOKS_DIR (e.g. extracted with
`git archive <commit> playbooks | tar -x -C /tmp/old`), alternating, so that both see the same
machine load. Prints medians per host count. ansible_bench.py measures the other playbooks.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ansible_bench import signed_bundle  # noqa: E402
from cgroup_cpu import CgroupCpu, CpuSample  # noqa: E402
from hosts.lab import HostLab, missing_prerequisites  # noqa: E402
from hybridctl.drivers.ansible import SshOptions, run_playbook  # noqa: E402
from hybridctl.drivers.bundle import generate_keypair  # noqa: E402
from hybridctl.paths import playbooks_dir  # noqa: E402


def _cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[8])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--compare", type=Path, help="another playbooks dir to time the same way")
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="hybridctl-sync-bench-"))
    private_key, public_key = work / "signing.pem", work / "signing.pub.pem"
    generate_keypair(private_key, public_key)
    variants = {"this checkout": playbooks_dir()}
    if args.compare:
        variants["compare"] = args.compare.resolve()
    lab = HostLab()
    lab.open()
    account = CgroupCpu.open()
    try:
        for count in args.hosts:
            times: dict[str, list[float]] = {name: [] for name in variants}
            cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
            split: dict[str, list[CpuSample]] = {name: [] for name in variants}
            for attempt in range(args.repeat):
                for name, playbooks in variants.items():
                    hosts = lab.start(count)
                    if account is not None:
                        account.adopt_hosts(h.init_pid for h in hosts)
                    bundle = signed_bundle(work, f"v{count}-{attempt}-{len(times[name])}{name[0]}", private_key, args.mb)
                    with lab.controller():
                        children, own = _cpu_s(resource.RUSAGE_CHILDREN), _cpu_s(resource.RUSAGE_SELF)
                        before = account.sample() if account is not None else CpuSample(0, 0)
                        result = run_playbook(playbooks / "model-sync.yml", lab.inventory(hosts),
                                              ssh=SshOptions(lab.known_hosts_path, lab.client_key_path),
                                              extravars={"hybridctl_bundle_dir": str(bundle),
                                                         "hybridctl_bundle_public_key_file": str(public_key)})
                        cpu[name].append((_cpu_s(resource.RUSAGE_CHILDREN) - children,
                                          _cpu_s(resource.RUSAGE_SELF) - own))
                        if account is not None:
                            split[name].append(account.sample() - before)
                    lab.stop(hosts)
                    if not result.succeeded:
                        print(f"{name}: model-sync failed: {result}", file=sys.stderr)
                        return 1
                    times[name].append(result.elapsed_s)
                    print(f"  {count} hosts, {name}: {result.elapsed_s:.2f} s; CPU {_split(split[name][-1:], count)}"
                          f"ansible {cpu[name][-1][0]:.2f} s, driver {cpu[name][-1][1]:.2f} s", flush=True)
            load = os.getloadavg()[0]
            print(f"{count} hosts, {args.mb} MB bundle: " + "; ".join(
                f"{name} {statistics.median(values):.2f} s" for name, values in times.items())
                + "; CPU " + "; ".join(
                    f"{name} {_split(split[name], count)}ansible {statistics.median(c for c, _ in used):.2f} s, driver "
                    f"{statistics.median(d for _, d in used):.2f} s" for name, used in cpu.items())
                + f"  [median of {args.repeat}; load average {load:.1f} on {os.cpu_count()} CPUs at {time.strftime('%H:%M')}]")
    finally:
        if account is not None:
            account.close()
        lab.close()
    return 0


def _split(samples: list[CpuSample], hosts: int) -> str:
    """Median controller and hosts CPU, and their sum per host; empty without cgroup figures."""
    if not samples:
        return ""
    controller = statistics.median(s.controller_s for s in samples)
    on_hosts = statistics.median(s.hosts_s for s in samples)
    return (f"controller {controller:.2f} s + hosts {on_hosts:.2f} s = {(controller + on_hosts) / hosts:.2f} s "
            "per host (cgroups); ")


if __name__ == "__main__":
    sys.exit(main())
