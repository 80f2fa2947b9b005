"""`failover` with nothing applied names the single-event rehearsal of the very events it was given, with
commands that run as written (a drill replays a whole scenario set, which is not what was asked)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from support.examples import EXAMPLES
from support.inproc import run_cli


def test_the_hint_is_the_rehearsal_of_these_events_and_its_commands_run(tmp_path: Path, monkeypatch) -> None:
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text((EXAMPLES / "cloud-burst.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    done = run_cli("failover", "site-lost", "dc-ashburn", "-i", str(inventory), "--state", str(tmp_path / "st"))
    assert done.code == 4
    commands = re.findall(r"`(hybridctl [^`]+)`", done.stderr)
    assert commands[:2] == [f"hybridctl plan {inventory} --out plan.json",
                            f"hybridctl failover site-lost dc-ashburn --plan plan.json -i {inventory}"]
    assert commands[-1] == f"hybridctl drill {inventory} --standard"
    for command in commands[:2]:  # as written, in order: a plan file, then the rehearsal from it
        ran = run_cli(*shlex.split(command)[1:])
        assert ran.code == 0, (command, ran.stderr)
    assert "site-lost dc-ashburn" in ran.stdout
