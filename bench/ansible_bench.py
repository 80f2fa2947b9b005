"""How long the test hosts take to start, and a trivial playbook takes to run across them.

Run as root:  .venv/bin/python bench/ansible_bench.py [--hosts 3 8] [--repeat 3] [--only preflight]
              [--compare OLD_PLAYBOOKS_DIR]

Prints, per host count: lab start-up (hosts ready for SSH), the wall time of
tests/drivers/playbooks/ping.yml (fact gathering + ping + set_fact) through the Ansible
driver with ssh ControlPersist on (default) and off, and the wall time of the product's
playbooks: preflight.yml, and model-sync.yml distributing a signed 64 MB bundle (a new
version each run, so every run copies, verifies and activates). Medians of --repeat runs.
With --compare, each run of the product's playbooks is made once more with the playbooks of
OLD_PLAYBOOKS_DIR (e.g. `git archive <commit> playbooks | tar -x -C /tmp/old`, then
/tmp/old/playbooks), right after, so that both see the same machine load.
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

from hosts.lab import HostLab, missing_prerequisites  # noqa: E402
from hybridctl.drivers.ansible import SshOptions, run_playbook  # noqa: E402
from hybridctl.drivers.bundle import create_bundle, generate_keypair, sign_bundle  # noqa: E402
from hybridctl.paths import playbooks_dir  # noqa: E402

PLAYBOOKS = ROOT / "tests" / "drivers" / "playbooks"
BUNDLE_MB = 64


def signed_bundle(directory: Path, version: str, private_key: Path, size_mb: int = BUNDLE_MB) -> Path:
    """A fresh signed bundle of random weights, so that every sync copies, verifies and activates."""
    bundle = directory / version
    (bundle / "weights").mkdir(parents=True)
    (bundle / "weights" / "model.safetensors").write_bytes(os.urandom(size_mb * 1024 * 1024))
    (bundle / "config.json").write_text(f'{{"version": "{version}"}}')
    create_bundle(bundle, model="bench-model", version=version, source_commit="bench")
    sign_bundle(bundle, private_key)
    return bundle


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[3, 8])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=["ping", "preflight", "model-sync"],
                        default=["ping", "preflight", "model-sync"], help="what to time (default: all)")
    parser.add_argument("--compare", type=Path, help="another playbooks dir to time the same way")
    args = parser.parse_args()
    variants = {"": playbooks_dir(), " [compare]": args.compare.resolve()} if args.compare else {"": playbooks_dir()}
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="hybridctl-ansible-bench-"))
    private_key, public_key = work / "signing.pem", work / "signing.pub.pem"
    generate_keypair(private_key, public_key)
    lab = HostLab()
    opened = time.monotonic()
    lab.open()
    print(f"lab open (root filesystem cached or built, controller netns): {time.monotonic() - opened:.2f} s")
    try:
        for count in args.hosts:
            starts: list[float] = []
            runs: dict[str, list[float]] = {"on": [], "off": []}
            cpu: dict[str, list[float]] = {}
            for attempt in range(args.repeat):
                began = time.monotonic()
                hosts = lab.start(count)
                starts.append(time.monotonic() - began)
                with lab.controller():
                    for persist, label in ((15, "on"), (0, "off")) if "ping" in args.only else ():
                        ssh = SshOptions(lab.known_hosts_path, lab.client_key_path, control_persist_s=persist)
                        result = run_playbook(PLAYBOOKS / "ping.yml", lab.inventory(hosts), ssh=ssh)
                        if not result.succeeded:
                            print(f"run failed: {result}", file=sys.stderr)
                            return 1
                        runs[label].append(result.elapsed_s)
                    ssh = SshOptions(lab.known_hosts_path, lab.client_key_path)
                    for playbook in [p for p in ("preflight", "model-sync") if p in args.only]:
                        for label, directory in variants.items():
                            # A model sync to hosts that already have the version would copy nothing.
                            run_hosts = hosts if playbook == "preflight" or not label else lab.start(count)
                            extravars = {} if playbook == "preflight" else {
                                "hybridctl_bundle_dir": str(signed_bundle(work, f"v{count}-{attempt}{label.strip(' []')}",
                                                                    private_key)),
                                "hybridctl_bundle_public_key_file": str(public_key)}
                            before = _children_cpu_s()
                            result = run_playbook(directory / f"{playbook}.yml", lab.inventory(run_hosts), ssh=ssh,
                                                  extravars=extravars)
                            cpu.setdefault(playbook + label, []).append(_children_cpu_s() - before)
                            if run_hosts is not hosts:
                                lab.stop(run_hosts)
                            if not result.succeeded:
                                print(f"{playbook}{label} failed: {result}", file=sys.stderr)
                                return 1
                            runs.setdefault(playbook + label, []).append(result.elapsed_s)
                lab.stop(hosts)
            figures = {"ping.yml (ControlPersist on)": runs["on"], "ping.yml (off)": runs["off"]}
            for label in variants:
                figures[f"preflight.yml{label}"] = runs.get("preflight" + label, [])
                figures[f"model-sync.yml{label} ({BUNDLE_MB} MB bundle)"] = runs.get("model-sync" + label, [])
            timed = "; ".join(f"{name} {statistics.median(values):.2f} s (min {min(values):.2f})"
                              for name, values in figures.items() if values)
            used = "; ".join(f"{name} {statistics.median(values):.2f} s" for name, values in cpu.items() if values)
            print(f"{count} hosts: start {statistics.median(starts):.2f} s; {timed}  [median of {args.repeat}]")
            if used:
                # CPU time of ansible-playbook and its workers: what the run costs, whatever the load.
                print(f"{count} hosts: controller CPU (user+sys) {used}")
    finally:
        lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
