"""How long the test hosts take to start, and a trivial playbook takes to run across them.

Run as root:  .venv/bin/python bench/ansible_bench.py [--hosts 3 8] [--repeat 3]

Prints, per host count: lab start-up (hosts ready for SSH), and the wall time of
tests/drivers/playbooks/ping.yml (fact gathering + ping + set_fact) through the Ansible
driver, with ssh ControlPersist on (default) and off. Medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hosts.lab import HostLab, missing_prerequisites  # noqa: E402
from hybridctl.drivers.ansible import SshOptions, run_playbook  # noqa: E402

PLAYBOOKS = ROOT / "tests" / "drivers" / "playbooks"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[3, 8])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2

    lab = HostLab()
    opened = time.monotonic()
    lab.open()
    print(f"lab open (root filesystem cached or built, controller netns): {time.monotonic() - opened:.2f} s")
    try:
        for count in args.hosts:
            starts: list[float] = []
            runs: dict[str, list[float]] = {"on": [], "off": []}
            for _ in range(args.repeat):
                began = time.monotonic()
                hosts = lab.start(count)
                starts.append(time.monotonic() - began)
                with lab.controller():
                    for persist, label in ((15, "on"), (0, "off")):
                        ssh = SshOptions(lab.known_hosts_path, lab.client_key_path, control_persist_s=persist)
                        result = run_playbook(PLAYBOOKS / "ping.yml", lab.inventory(hosts), ssh=ssh)
                        if not result.succeeded:
                            print(f"run failed: {result}", file=sys.stderr)
                            return 1
                        runs[label].append(result.elapsed_s)
                lab.stop(hosts)
            print(
                f"{count} hosts: start {statistics.median(starts):.2f} s; ping.yml "
                f"{statistics.median(runs['on']):.2f} s (ControlPersist on), "
                f"{statistics.median(runs['off']):.2f} s (off)  [median of {args.repeat}]"
            )
    finally:
        lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
