"""The whole loop against local test hosts: plan -> apply -> status -> drift -> apply -> status -> destroy.

Run it as root through `bash .ci/e2e-loop.sh` (the lab needs network namespaces and mounts).
Three real SSH hosts (tests/hosts) stand in for an on-prem site (2 GPU hosts) and an edge site
(1 host); a cloud site is in the inventory too. Without the pulumi CLI its steps are skipped
with --skip-cloud, and the script says so. Every command is printed with its output, exit code
and time; the script fails when a command does not end as the loop expects.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hosts.fake_gpu import FakeGpus  # noqa: E402
from hosts.lab import HostLab, LabUnavailable  # noqa: E402

INVENTORY = """\
# A lab stand-in for a real fleet: an on-prem GPU site, an edge site and a cloud region.
version: 1
name: e2e-loop
regions: [eu-users]
sites:
  - name: dc-lab
    kind: onprem
    jurisdiction: EU
    egress_usd_per_gb: 0.0
    latency_ms: {{eu-users: 10}}
    hosts:
      - {{name: lab-gpu-01, address: {a}, pool: lab-h100}}
      - {{name: lab-gpu-02, address: {b}, pool: lab-h100}}
    pools:
      - {{name: lab-h100, gpu: H100, gpus: 8, capacity_type: reserved, usd_per_gpu_hour: 1.20}}
  - name: edge-shop
    kind: edge
    jurisdiction: EU
    egress_usd_per_gb: 0.0
    latency_ms: {{eu-users: 4}}
    hosts:
      - {{name: shop-01, address: {c}, pool: shop-h100}}
    pools:
      - {{name: shop-h100, gpu: H100, gpus: 1, capacity_type: reserved, usd_per_gpu_hour: 2.00}}
  - name: aws-euc1
    kind: cloud
    provider: aws
    region: eu-central-1
    cluster: ml-euc1
    jurisdiction: EU
    egress_usd_per_gb: 0.09
    latency_ms: {{eu-users: 25}}
    pools:
      - {{name: euc1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}}
workloads:
  - {{name: chat, type: realtime_inference, gpu: {{types: [H100], count: 1}}, replicas: 8, sites: [dc-lab], model_gb: 0.01}}
  - {{name: shop-vision, type: realtime_inference, gpu: {{types: [H100], count: 1}}, sites: [edge-shop], model_gb: 0.01}}
  - {{name: train, type: training, gpu: {{types: [H100], count: 8}}, replicas: 2, hours_per_month: 200, sites: [aws-euc1]}}
"""


def hybridctl_command() -> list[str]:
    """The installed console script once `apply` is registered in it; until then the same CLI with
    the apply commands imported first."""
    script = Path(sys.executable).parent / "hybridctl"
    if script.exists():
        probe = subprocess.run([str(script), "apply", "--help"], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return [str(script)]
    boot = ("import sys; import hybridctl.commands.apply_cmds; from hybridctl.commands.app import run; "
            "sys.argv[0] = 'hybridctl'; run()")
    return [sys.executable, "-c", boot]


class Loop:
    def __init__(self, work: Path, cli: list[str]) -> None:
        self.work = work
        self.cli = cli
        self.timings: list[tuple[str, float, int]] = []

    def run(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        shown = " ".join(["hybridctl", *args])
        print(f"\n$ {shown}", flush=True)
        started = time.monotonic()
        # stderr joins stdout so that messages appear where they happened
        done = subprocess.run([*self.cli, *args], cwd=self.work, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False, stdin=subprocess.DEVNULL,
                              env={**os.environ, "COLUMNS": "120"})
        seconds = time.monotonic() - started
        print(done.stdout, end="")
        print(f"[exit {done.returncode}, {seconds:.1f} s]", flush=True)
        self.timings.append((shown, seconds, done.returncode))
        if done.returncode != expect:
            raise SystemExit(f"e2e-loop: `{shown}` exited {done.returncode}, expected {expect}")
        return done


def make_bundles(work: Path) -> tuple[Path, Path]:
    from hybridctl.drivers.bundle import create_bundle, generate_keypair, sign_bundle

    keys = work / "keys"
    generate_keypair(keys / "model-signing.pem", keys / "model-signing.pub.pem")
    for workload in ("chat", "shop-vision"):
        bundle = work / "bundles" / workload
        bundle.mkdir(parents=True)
        (bundle / "weights.safetensors").write_bytes(os.urandom(64 * 1024))
        create_bundle(bundle, model=workload, version="2026.05.1", source_commit="e2e-loop")
        sign_bundle(bundle, keys / "model-signing.pem")
    return work / "bundles", keys / "model-signing.pub.pem"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the working directory (state, journal, inventory)")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hybridctl-e2e-loop-"))
    lab = HostLab(subnet="10.233.0")
    try:
        lab.open()
    except LabUnavailable as exc:
        print(f"e2e-loop: the test hosts cannot start here: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        a, b = lab.start(2, names=["lab-gpu-01", "lab-gpu-02"], gpus={"lab-gpu-01": 4, "lab-gpu-02": 4})
        (c,) = lab.start(1, names=["shop-01"], gpus={"shop-01": FakeGpus(1)})
        print(f"lab: {a.name} {a.address}, {b.name} {b.address} (on-prem), {c.name} {c.address} (edge); work dir {work}")
        (work / "inventory.yaml").write_text(INVENTORY.format(a=a.address, b=b.address, c=c.address))
        bundles, public_key = make_bundles(work)
        state = ["--state", str(work / "state")]
        ssh = ["--known-hosts", str(lab.known_hosts_path), "--ssh-key", str(lab.client_key_path)]
        cloud: list[str] = []
        if shutil.which("pulumi") is None:
            print("\nno pulumi CLI on PATH: the cloud site's steps (GPU pools, Kueue queues) are skipped with "
                  "--skip-cloud; install Pulumi and AWS credentials to run them too")
            cloud = ["--skip-cloud"]
        loop = Loop(work, hybridctl_command())
        with lab.controller():
            loop.run("plan", "inventory.yaml", "--out", "plan.json")
            loop.run("apply", "plan.json", "--inventory", "inventory.yaml", *state, *ssh, *cloud,
                     "--bundles", str(bundles), "--bundle-public-key", str(public_key), "--auto-approve")
            loop.run("status", *state, *ssh, "--detailed-exitcode")
            config = b.root / "etc/hybridctl/node.yaml"
            config.write_text(config.read_text().replace("pool: lab-h100", "pool: hand-edited"))
            print(f"\n(edited {b.name}:/etc/hybridctl/node.yaml by hand)")
            loop.run("status", *state, *ssh, "--detailed-exitcode", expect=2)
            loop.run("apply", "inventory.yaml", *state, *ssh, *cloud, "--auto-approve")
            loop.run("status", *state, *ssh, "--detailed-exitcode")
            loop.run("destroy", *state, *ssh, *cloud, "--auto-approve")
        print("\ne2e-loop: every step ended as expected")
        for shown, seconds, code in loop.timings:
            print(f"  {seconds:6.1f} s  exit {code}  {shown[:100]}")
        print(f"  {time.monotonic() - started:6.1f} s  in all (lab start included)")
        return 0
    finally:
        lab.close()
        if options.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
