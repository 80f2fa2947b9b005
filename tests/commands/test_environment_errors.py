"""Problems of the machine, not of hybridctl: each gets a clear message and exit 2, never "internal error"
(exit 70 stays for bugs). One walk through each case of issue 14, plus the smaller things found on the way."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support import apply_cli
from support.examples import EXAMPLES
from support.inproc import run_cli

ENTERPRISE = str(EXAMPLES / "enterprise")
CLOUD_BURST = str(EXAMPLES / "cloud-burst.yaml")
CLOUD_ONLY = {
    "version": 1, "name": "lab", "regions": ["eu-users"],
    "sites": [{"name": "aws-euc1", "kind": "cloud", "provider": "aws", "region": "eu-central-1", "cluster": "ml-euc1",
               "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
               "pools": [{"name": "euc1-p5", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                          "capacity_type": "on_demand"}]}],
    "workloads": [{"name": "chat", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1}}],
}
needs_mounts = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                  reason="needs root and unshare(1) for a private read-only or full mount")


def one_message(output: str, *fragments: str) -> None:
    assert "Traceback" not in output and "internal error" not in output, output
    flat = " ".join(output.split())
    for fragment in fragments:
        assert fragment in flat, output


def apply_cloud_only(tmp_path: Path, state: Path) -> subprocess.CompletedProcess[str]:
    inventory = apply_cli.write_inventory(tmp_path / "inventory.json", CLOUD_ONLY)
    return apply_cli.run_cli("apply", inventory, "--state", state, "--auto-approve")


def in_private_mount(setup: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """hybridctl in a mount namespace of its own: the mounts vanish with it."""
    command = f"{setup} && exec {shlex.join(apply_cli.hybridctl_argv(*args))}"
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", command],
                          env=apply_cli.cli_env(), capture_output=True, text=True, timeout=300, check=False)


class TestEnvironmentProblems:
    @needs_mounts
    def test_a_read_only_state_directory(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        state.mkdir()
        result = in_private_mount(f"mount --bind {state} {state} && mount -o remount,bind,ro {state}",
                                  "apply", apply_cli.write_inventory(tmp_path / "i.json", CLOUD_ONLY),
                                  "--state", state, "--auto-approve")
        assert result.returncode == 2, result.stderr
        one_message(result.stderr, f"{state}/", ": Read-only file system", "hint: the file system is read-only")

    @needs_mounts
    def test_a_full_disk(self, tmp_path: Path) -> None:
        disk = tmp_path / "disk"
        disk.mkdir()
        fill = f"mount -t tmpfs -o size=64k tmpfs {disk} && (dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null; true)"
        result = in_private_mount(fill, "plan", ENTERPRISE, "--out", disk / "plan.json", "--state", tmp_path / "s")
        assert result.returncode == 2, result.stderr
        one_message(result.stderr, f"{disk}/plan.json: No space left on device", "hint: the disk is full")

    def test_state_pointing_at_a_file(self, tmp_path: Path) -> None:
        a_file = tmp_path / "notes.txt"
        a_file.write_text("x")
        for command in (("status",), ("plan", CLOUD_BURST), ("destroy", "--auto-approve")):
            result = run_cli(*command, "--state", str(a_file))
            assert result.code == 2, (command, result.output)
            one_message(result.output, f"{a_file} is a file, not a state directory")

    def test_out_and_json_out_pointing_at_a_directory(self, tmp_path: Path) -> None:
        result = run_cli("plan", CLOUD_BURST, "--out", str(tmp_path), "--state", str(tmp_path / "s"))
        assert result.code == 2
        one_message(result.output, f"--out {tmp_path} is a directory", "hint: give a file name")
        result = run_cli("drill", CLOUD_BURST, "--json-out", str(tmp_path))
        assert result.code == 2
        one_message(result.output, f"--json-out {tmp_path} is a directory")

    def test_init_of_an_existing_file(self, tmp_path: Path) -> None:
        existing = tmp_path / "inventory.yaml"
        existing.write_text("version: 1\n")
        result = run_cli("init", str(existing))
        assert result.code == 2
        one_message(result.output, f"{existing} is a file: init takes the directory",
                    f"hybridctl init {tmp_path}")
        assert existing.read_text() == "version: 1\n"

    @pytest.mark.parametrize("name", ["lock", "journal.jsonl"])
    def test_a_lock_or_journal_that_is_a_directory(self, tmp_path: Path, name: str) -> None:
        state = tmp_path / "state"
        (state / name).mkdir(parents=True)
        result = apply_cloud_only(tmp_path, state)
        assert result.returncode == 2, result.stderr
        one_message(result.stderr, f"{state / name}: Is a directory", "hint: a directory is where hybridctl needs a file")

    def test_a_state_whose_applied_plan_has_the_wrong_type(self, tmp_path: Path) -> None:
        (tmp_path / "state.json").write_text(json.dumps({"format_version": 1, "serial": 3, "applied_plan": "oops"}))
        for command in (("status",), ("plan", CLOUD_BURST)):
            result = run_cli(*command, "--state", str(tmp_path))
            assert result.code == 1, result.output
            one_message(result.output, f"{tmp_path / 'state.json'}: not a hybridctl state file",
                        "applied_plan must be an object or null, not str", "hint: restore it from a backup")

    def test_a_bug_is_still_exit_70(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import hybridctl.core.placement.tiers as tiers

        def broken(*_: object) -> None:
            raise KeyError("a bug")

        monkeypatch.setattr(tiers, "classify", broken)
        result = run_cli("classify", CLOUD_BURST)
        assert result.code == 70
        assert "internal error: KeyError" in result.stderr and "this is a bug in hybridctl" in result.stderr


class TestSmallThings:
    def test_status_with_state_naming_the_state_file(self, tmp_path: Path) -> None:
        state = tmp_path / "state"
        assert apply_cloud_only(tmp_path, state).returncode == 0
        result = run_cli("status", "--state", str(state / "state.json"), "--no-drift")
        assert result.code == 2
        one_message(result.output, "state.json is a file, not a state directory", f"--state {state}")
        assert "nothing has been applied" not in result.output

    def test_state_file_errors_name_the_path_once(self, tmp_path: Path) -> None:
        (tmp_path / "state.json").write_text("{not json")
        result = run_cli("status", "--state", str(tmp_path))
        assert result.code == 1
        assert result.output.count(str(tmp_path / "state.json")) == 1, result.output

    def test_an_inventory_named_json_is_an_inventory(self, tmp_path: Path) -> None:
        inventory = apply_cli.write_inventory(tmp_path / "inventory.json", CLOUD_ONLY)
        cost = run_cli("cost", str(inventory), "--format", "json")
        assert cost.code == 0, cost.output
        assert json.loads(cost.stdout)["total_usd_per_month"] > 0
        result = apply_cli.run_cli("apply", inventory, "--state", tmp_path / "s", "--auto-approve")
        assert result.returncode == 0, result.stderr
        assert "needs --inventory" not in result.stderr
        assert "Plan lab:" in result.stdout  # planned first, as for any inventory

    def test_bundle_sign_without_a_manifest_is_a_usage_error(self, tmp_path: Path) -> None:
        keys = tmp_path / "keys"
        assert run_cli("bundle", "keygen", str(keys / "k.pem"), str(keys / "k.pub.pem")).code == 0
        bundle = tmp_path / "bundle"
        bundle.mkdir()
        result = run_cli("bundle", "sign", str(bundle), str(keys / "k.pem"))
        assert result.code == 2, result.output
        one_message(result.output, "has no manifest.json", "hybridctl bundle create")


def test_a_reader_that_leaves_early_gets_no_traceback_and_the_plan_file_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    process = subprocess.Popen(apply_cli.hybridctl_argv("plan", ENTERPRISE, "--out", out, "--state", tmp_path / "s"),
                               env=apply_cli.cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"Plan enterprise:")
    process.stdout.close()  # like `| head -1`
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in err and "internal error" not in err and "Broken pipe" not in err, err
    assert json.loads(out.read_text())["inventory"] == "enterprise"


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--metric", "auc=nan", "metric 'auc=nan' is not METRIC=NUMBER"),
    ("--metric", "auc=high", "metric 'auc=high' is not METRIC=NUMBER"),
    ("--metric", "auc", "metric 'auc' is not METRIC=NUMBER"),
    ("--dataset", "claims", "dataset 'claims' is not NAME=DIGEST"),
])
def test_bundle_create_refuses_a_value_it_cannot_record(tmp_path: Path, option: str, value: str,
                                                       message: str) -> None:
    """A manifest's evaluation holds finite numbers only: `--metric auc=nan` is a usage error, no manifest."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "weights.bin").write_bytes(b"w")
    result = run_cli("bundle", "create", str(bundle), "--model", "m", "--version", "1", "--source-commit", "abc",
                     option, value)
    assert result.code == 2 and message in result.stderr, result.output
    assert not (bundle / "manifest.json").exists()
