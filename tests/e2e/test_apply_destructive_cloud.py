"""`apply` shows destructive cloud changes before its approval, and node groups with machines
are not deleted on --auto-approve alone (the recording cloud double stands in for Pulumi)."""

from __future__ import annotations

from pathlib import Path

from support.apply_cli import cli_env, run_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.recording_cloud import RecordingCloud
from support.text import flat


def test_removing_the_cloud_work_needs_the_explicit_flag(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path / "inventory.yaml", hybrid_document())
    state = tmp_path / "state"

    def apply(*extra: str) -> tuple[int, str]:
        done = run_cli("apply", inventory, "--state", state, "--auto-approve", *extra, env=cli_env(), cwd=tmp_path)
        return done.returncode, flat(done.stdout + done.stderr)

    code, output = apply()
    assert code == 0, output
    assert "Destructive cloud changes" not in output  # a first apply only creates

    document = hybrid_document()
    document["workloads"] = [w for w in document["workloads"] if w["name"] != "train"]  # the cloud's only work
    write_inventory(inventory, document)
    code, output = apply()
    assert code == 4, output
    assert "Destructive cloud changes" in output and "removes running machines" in output
    assert "--allow-machine-removal" in output
    destroys = [c for c in RecordingCloud(state / "recording-cloud").calls() if c["operation"] == "destroy"]
    assert destroys == []  # refused before anything ran

    code, output = apply("--allow-machine-removal")
    assert code == 0, output
    assert [c["stack"] for c in RecordingCloud(state / "recording-cloud").calls() if c["operation"] == "destroy"]
