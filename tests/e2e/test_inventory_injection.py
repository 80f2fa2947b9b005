"""No value of an inventory runs code on the controller or reaches ssh as an option.

Three layers, each tested: the models refuse hostile host fields at their line; `apply` and
`discover` stop at validation with no side effect; and, for a field a future change forgets to
validate, every string handed to Ansible is tagged !unsafe, so Ansible never evaluates it —
checked by running the real preflight playbook against a real SSH host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.drivers.ansible import SshOptions, run_playbook
from hybridctl.paths import playbooks_dir
from hybridctl.runners import write_inventory_file
from support.apply_cli import cli_env, run_cli, write_inventory
from support.inproc import run_cli as run_inproc


def payloads(marker: Path) -> dict[str, str]:
    """Each would create `marker` if a template engine, a shell or ssh's option parser ran it."""
    return {
        "jinja": f"{{{{ lookup('pipe', 'touch {marker}') }}}}",
        "command-substitution": f"$(touch {marker})",
        "semicolon": f"h;touch {marker}",
        "proxy-command": f"-oProxyCommand=touch {marker}",
        "newline": f"h\ntouch {marker}",
        "leading-dash": "-h",
        "backticks": f"`touch {marker}`",
        "space": "gpu 01",
    }


def document(host: dict[str, object]) -> dict[str, object]:
    return {
        "version": 1, "name": "hostile", "regions": ["eu-users"],
        "sites": [{"name": "dc-lab", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
                   "latency_ms": {"eu-users": 10},
                   "hosts": [{"name": "lab-01", "address": "10.0.0.1", "pool": "lab-h100", **host}],
                   "pools": [{"name": "lab-h100", "gpu": "H100", "gpus": 4, "capacity_type": "reserved",
                              "usd_per_gpu_hour": 1.2}]}],
        "workloads": [{"name": "chat", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1},
                       "replicas": 2}],
    }


HOST_FIELDS = ("name", "address", "user")


class TestValidationRefusesHostileHostFields:
    @pytest.mark.parametrize("field", HOST_FIELDS)
    @pytest.mark.parametrize("payload", sorted(payloads(Path("/tmp/x"))))
    def test_each_payload_is_an_error_at_its_line(self, tmp_path: Path, field: str, payload: str) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", document({field: payloads(tmp_path / "m")[payload]}))
        result = run_inproc("validate", str(inventory), "--format", "json")
        assert result.code == 1, result.output
        (report,) = json.loads(result.stdout)["inventories"]
        errors = report["diagnostics"]
        assert [e["message"].split(":")[0] for e in errors] == [f"sites[0].hosts[0].{field}"]
        assert errors[0]["line"] > 1 and errors[0]["hint"]

    @pytest.mark.parametrize("port", ["22;id", "$(id)", -1, 0, 65536, 22.5])
    def test_a_port_is_a_number_in_range(self, tmp_path: Path, port: object) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", document({"port": port}))
        result = run_inproc("validate", str(inventory))
        assert result.code == 1 and "sites[0].hosts[0].port" in result.output

    @pytest.mark.parametrize("address", ["10.0.0.1", "2001:db8::11", "gpu-01", "gpu-01.example.internal",
                                         "GPU-01.Example.Internal"])
    def test_real_addresses_pass(self, tmp_path: Path, address: str) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", document({"address": address}))
        assert run_inproc("validate", str(inventory)).code == 0

    @pytest.mark.parametrize("address", ["fe80::1%eth0", "10.0.0.300", "a..b", "-a.b", "a.b-", "x" * 254])
    def test_near_misses_are_refused(self, tmp_path: Path, address: str) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", document({"address": address}))
        assert run_inproc("validate", str(inventory)).code == 1

    def test_tokens_that_reach_ansible_are_one_word(self, tmp_path: Path) -> None:
        raw = document({})
        raw["sites"][0]["jurisdiction"] = "{{ lookup('pipe', 'id') }}"  # type: ignore[index]
        inventory = write_inventory(tmp_path / "inv.yaml", raw)
        result = run_inproc("validate", str(inventory))
        assert result.code == 1 and "sites[0].jurisdiction" in result.output and "is not a token" in result.output


class TestCommandsStopBeforeAnySideEffect:
    @pytest.mark.parametrize("payload", ["jinja", "command-substitution", "proxy-command", "newline"])
    def test_apply_and_discover_refuse_and_run_nothing(self, tmp_path: Path, payload: str) -> None:
        marker = tmp_path / "pwned"
        for field in ("address", "name"):
            inventory = write_inventory(tmp_path / f"{field}.yaml", document({field: payloads(marker)[payload]}))
            applied = run_cli("apply", inventory, "--state", tmp_path / "st", "--auto-approve", "--skip-cloud",
                              env=cli_env(), timeout_s=120)
            assert applied.returncode == 1, applied.stdout + applied.stderr
            discovered = run_cli("discover", inventory, "--state", tmp_path / "st", env=cli_env(), timeout_s=120)
            assert discovered.returncode == 1, discovered.stdout + discovered.stderr
            assert "Traceback" not in applied.stderr + discovered.stderr
        assert not marker.exists()


@pytest.mark.hosts
def test_unvalidated_values_are_never_evaluated_by_ansible(host_lab: object, tmp_path: Path) -> None:
    """Defence in depth: hostile strings in every host variable and extra variable, bypassing
    validation, go through the real preflight playbook; none is evaluated."""
    (host,) = host_lab.start(1, names=["lab-inj-01"])  # type: ignore[attr-defined]
    marker = tmp_path / "pwned"
    jinja = payloads(marker)["jinja"]
    hostvars: dict[str, object] = {
        "ansible_host": host.address, "ansible_port": host.port, "ansible_user": host.user,
        "hybridctl_site": jinja, "hybridctl_site_kind": jinja, "hybridctl_pool": jinja, "hybridctl_gpu": jinja,
        "hybridctl_tiers": [jinja], "hybridctl_expected_gpus": 0, "hybridctl_failure_domain": jinja,
        "hybridctl_jurisdiction": jinja, "hybridctl_workloads": [jinja],
        "preflight_model_cache_required_gb": 0,
    }
    inventory = AnsibleInventory({host.name: hostvars}, {"hybridctl": (host.name,)})
    path = write_inventory_file(inventory, tmp_path / "ansible")
    result = run_playbook(playbooks_dir() / "preflight.yml", path, work_dir=tmp_path,
                          ssh=SshOptions(known_hosts=host_lab.known_hosts_path,  # type: ignore[attr-defined]
                                         private_key=host_lab.client_key_path),  # type: ignore[attr-defined]
                          extravars={"hybridctl_note": jinja, "hybridctl_list": [jinja], "hybridctl_map": {"k": jinja}})
    assert [h.host for h in result.hosts] == [host.name]
    assert not marker.exists()
