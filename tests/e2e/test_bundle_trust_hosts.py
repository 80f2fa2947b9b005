"""`hybridctl bundle trust` against real SSH hosts: keys are pinned by key ID only by this
explicit command, journaled, and a rotation (add the new key, remove the old) is refused
halfway never: a host keeps at least one key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hybridctl.core.deploy.bundle import key_id
from hybridctl.drivers.bundle import generate_keypair, load_public_key
from hybridctl.drivers.state import StateStore

HYBRIDCTL = str(Path(sys.executable).parent / "hybridctl")


def _inventory(hosts: list[object]) -> str:
    lines = ["version: 1", "name: trust", "sites:",
             "  - name: dc-lab", "    kind: onprem", "    jurisdiction: EU", "    egress_usd_per_gb: 0",
             "    latency_ms: {}", "    hosts:"]
    lines += [f"      - {{name: {h.name}, address: {h.address}, pool: lab-h100}}" for h in hosts]  # type: ignore[attr-defined]
    lines += ["    pools:", "      - {name: lab-h100, gpu: H100, gpus: 8, capacity_type: reserved, usd_per_gpu_hour: 2.0}"]
    return "\n".join(lines) + "\n"


@pytest.mark.hosts
def test_add_rotate_and_list_trusted_keys(host_lab: object, tmp_path: Path) -> None:
    hosts = host_lab.start(2, names=["trust-a", "trust-b"])  # type: ignore[attr-defined]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(_inventory(hosts))
    old_pub, new_pub = tmp_path / "old.pub.pem", tmp_path / "new.pub.pem"
    generate_keypair(tmp_path / "old.pem", old_pub)
    generate_keypair(tmp_path / "new.pem", new_pub)
    old_id, new_id = key_id(load_public_key(old_pub)), key_id(load_public_key(new_pub))
    state = tmp_path / "state"

    def trust(*args: str) -> tuple[int, dict[str, object]]:
        done = subprocess.run(
            [HYBRIDCTL, "bundle", "trust", *args, "--inventory", str(inventory), "--format", "json",
             "--state", str(state), "--known-hosts", str(host_lab.known_hosts_path),  # type: ignore[attr-defined]
             "--ssh-key", str(host_lab.client_key_path)],  # type: ignore[attr-defined]
            capture_output=True, text=True, timeout=300)
        assert done.stdout, done.stderr
        return done.returncode, json.loads(done.stdout)

    def pinned(host: object) -> list[str]:
        keys = host.root / "etc/hybridctl/trust/keys"  # type: ignore[attr-defined]
        return sorted(p.name for p in keys.iterdir()) if keys.is_dir() else []

    rc, added = trust("add", str(old_pub))
    assert rc == 0 and added["key_id"] == old_id, added
    assert [h["result"] for h in added["hosts"]] == ["changed", "changed"]  # type: ignore[index]
    assert all(pinned(h) == [f"{old_id}.pem"] for h in hosts)

    rc, refused = trust("remove", old_id)  # the only key: refused, nothing changes
    assert rc == 1 and all("is the only key trusted" in h["error"] for h in refused["hosts"]), refused  # type: ignore[index,union-attr]
    assert all(pinned(h) == [f"{old_id}.pem"] for h in hosts)

    assert trust("add", str(new_pub))[0] == 0
    rc, removed = trust("remove", old_id)
    assert rc == 0, removed
    assert all(pinned(h) == [f"{new_id}.pem"] for h in hosts)
    rc, listed = trust("list")
    assert rc == 0 and [h["keys"] for h in listed["hosts"]] == [[new_id], [new_id]]  # type: ignore[index]

    # Every change is in the journal, with the key and each host's result.
    finished = [r for r in StateStore(state).journal.records() if r.event == "run-finished"]
    assert [(r.detail or {}).get("action") for r in finished] == ["add", "remove", "add", "remove"]
    assert (finished[0].detail or {})["key_id"] == old_id
    assert (finished[0].detail or {})["hosts"] == {"trust-a": "changed", "trust-b": "changed"}
