"""No control sequence from a file or an argument reaches the terminal (docs/security.md, "Terminal").

An inventory value, a lock holder's record, an argument echoed back in a message: each may hold ESC (a
screen clear, a cursor move, OSC 52's clipboard write) or a C1 character. Each is printed with its control
characters written out (`\\u001b`), through a pipe and through a real TTY, where rich's colours are on and
its own SGR sequences are the only ESC bytes that may pass.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support.apply_cli import cli_env, hybridctl_argv
from support.hostile import applied_state, cloud_document, run, write_json

OSC52 = "\x1b]52;c;aGFja2Vk\x07"  # writes "hacked" to the clipboard
CLEAR = "\x1b[2J\x1b[H"
CSI = "\x9b2J"  # C1's one-character CSI
PAYLOADS = (OSC52, CLEAR, CSI, "\x7f", "\r")

# rich's own colours on a TTY: Select Graphic Rendition, ESC [ digits and ';' m, and nothing else
_SGR = re.compile(rb"\x1b\[[0-9;]*m")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")


def assert_no_control(output: bytes) -> None:
    """Only rich's SGR colours, newlines, tabs and a TTY's CR before LF; no other control byte."""
    bare = _SGR.sub(b"", output).replace(b"\r\n", b"\n")
    assert not _CONTROL.search(bare), bare[max(0, _CONTROL.search(bare).start() - 60):][:120]  # type: ignore[union-attr]


def hostile_inventory(tmp_path: Path) -> Path:
    """Every kind of value a diagnostic quotes, each holding a payload."""
    document = cloud_document()
    document["name"] = f"hostile{CLEAR}"
    workload = document["workloads"][0]
    workload.update({"name": f"api{OSC52}", "type": f"realtime{CSI}", "team": f"ml{OSC52}",
                     "schedule": {"tz": f"UTC{OSC52}", "windows": [{"days": [f"mon{CLEAR}"], "start": "09:00",
                                                                     "end": "17:00"}]}})
    workload["gpu"]["types"] = [f"L4{OSC52}"]
    document["sites"][0]["pools"][0][f"key{OSC52}"] = 1
    return write_json(tmp_path / "hostile.yaml", document)


def tty_run(argv: list[str], env: dict[str, str], *, deadline_s: float = 120) -> bytes:
    """What `argv` writes to a real terminal (a pseudo-terminal as its stdout and stderr), colours on."""
    leader, follower = os.openpty()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif process.poll() is not None:
                break
    finally:
        process.kill() if process.poll() is None else None
        process.wait()
        os.close(leader)
    return b"".join(chunks)


def tty_env() -> dict[str, str]:
    env = cli_env()
    del env["NO_COLOR"]  # colours on: rich's own escapes go out, the file's must not
    env["TERM"] = "xterm-256color"
    return env


def test_inventory_values_in_diagnostics_print_no_control_through_a_pipe(tmp_path: Path) -> None:
    result = run("validate", hostile_inventory(tmp_path))
    assert result.code == 1, result.output
    assert_no_control(result.output.encode())
    assert "\\u001b]52;c;aGFja2Vk\\u0007" in result.output  # shown, written out, not obeyed


def test_inventory_values_in_diagnostics_print_no_control_through_a_tty(tmp_path: Path) -> None:
    output = tty_run(hybridctl_argv("validate", hostile_inventory(tmp_path)), tty_env())
    assert b"\x1b[" in output, output  # the terminal is real: rich coloured it
    assert b"is not a valid name" in output, output
    assert_no_control(output)
    assert b"\x1b]" not in output and b"\x1b[2J" not in output


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux's script is not installed")
def test_the_same_through_script_a_users_terminal(tmp_path: Path) -> None:
    command = shlex.join(hybridctl_argv("validate", hostile_inventory(tmp_path)))
    result = subprocess.run(["script", "-qec", command, "/dev/null"], env=tty_env(), stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=120, check=False)
    assert result.returncode == 1, result.stdout
    assert b"is not a valid name" in result.stdout
    assert_no_control(result.stdout)


@pytest.mark.parametrize("payload", PAYLOADS, ids=["osc52", "clear", "c1-csi", "del", "cr"])
def test_an_argument_echoed_back_prints_no_control(payload: str) -> None:
    result = run("status", "--at", f"2026-11-27T{payload}")
    assert result.code == 2, result.output
    assert "--at" in result.stderr
    assert_no_control(result.output.encode())


def test_an_argument_echoed_back_on_a_tty() -> None:
    output = tty_run(hybridctl_argv("status", "--at", f"2026-11-27T{OSC52}"), tty_env())
    assert b"is not an ISO 8601 date-time" in output, output
    assert_no_control(output)


def hostile_holder(state: Path) -> int:
    """A held lock whose holder record (on another host, so not checked) holds payloads in every field;
    returns the descriptor that holds it."""
    state.mkdir(parents=True, exist_ok=True)
    (state / "lock.holder.json").write_text(json.dumps({
        "pid": 4242, "host": f"elsewhere{OSC52}", "started_at": f"2026-11-27T01:00Z{CLEAR}",
        "command": f"hybridctl apply{CSI}", "token": "a" * 32, "user": f"root{OSC52}"}))
    descriptor = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def test_a_lock_holder_record_prints_no_control_in_applys_locked_message(tmp_path: Path) -> None:
    inventory = write_json(tmp_path / "inventory.yaml", cloud_document())
    descriptor = hostile_holder(tmp_path / "state")
    try:
        result = run("apply", inventory, "--state", tmp_path / "state", "--auto-approve")
        tty = tty_run(hybridctl_argv("apply", inventory, "--state", tmp_path / "state", "--auto-approve"), tty_env())
    finally:
        os.close(descriptor)
    assert result.code == 3, result.output
    assert "elsewhere\\u001b]52" in result.stderr
    assert_no_control(result.output.encode())
    assert b"locked by" in tty, tty
    assert_no_control(tty)


def test_a_lock_holder_record_prints_no_control_in_status(tmp_path: Path) -> None:
    applied_state(tmp_path)
    descriptor = hostile_holder(tmp_path / "state")
    try:
        result = run("status", "--no-drift", "--state", tmp_path / "state")
        tty = tty_run(hybridctl_argv("status", "--no-drift", "--state", tmp_path / "state"), tty_env())
    finally:
        os.close(descriptor)
    assert "elsewhere\\u001b]52" in result.output, result.output
    assert_no_control(result.output.encode())
    assert b"elsewhere" in tty, tty
    assert_no_control(tty)


def test_a_forged_plans_names_are_escaped_in_the_pull_request_comment(tmp_path: Path) -> None:
    """`show --format markdown` writes a plan's text as text: no link, image, HTML tag or table cell from it."""
    from hybridctl.core.plan.serialize import content_digest

    inventory = write_json(tmp_path / "inventory.yaml", cloud_document())
    assert run("plan", inventory, "--out", tmp_path / "plan.json").code == 0
    document = json.loads((tmp_path / "plan.json").read_text())
    document["placements"][0]["reason"] = "[click](https://e.example) ![i](https://e.example/i.png) <img src=x> | cell"
    document["content_digest"] = content_digest(document)
    (tmp_path / "forged.json").write_text(json.dumps(document))
    result = run("show", tmp_path / "forged.json", "--format", "markdown")
    assert result.code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "click" in line)
    assert row.endswith(r"| \[click\](https://e.example) !\[i\](https://e.example/i.png) \<img src=x\> \| cell |"), row
    assert row.count(" | ") == 7  # the table's eight cells, no more (the escaped one is `\|`)


def test_an_internal_errors_text_prints_no_control(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug's message may quote a value from a file (a hostile key): it is printed past rich."""
    import typer

    class Broken:
        def main(self, **_: object) -> None:
            raise RuntimeError(f"a value{OSC52}")

    monkeypatch.setattr(typer.main, "get_command", lambda _app: Broken())
    monkeypatch.delenv("HYBRIDCTL_DEBUG", raising=False)
    result = run("status")
    assert result.code == 70 and "internal error: RuntimeError" in result.stderr, result.output
    assert_no_control(result.output.encode())
