"""A stand-in for the `pulumi` CLI, enough of it for the Automation API calls the driver makes.

The real engine cannot be installed on these machines. This script answers `version`,
`stack select|init|output|history`, `config` (get all, set-all, rm-all), `preview`, `up`,
`refresh` and `destroy` the way the CLI does (exit codes, JSON on stdout, engine events in the
`--event-log` file), keeping its stacks in $FAKE_PULUMI_STATE/state.json. It "deploys" one
node role plus one node group per entry of the `hybridctl:nodePools` config, so what the
driver set as config is what the events show. Every invocation is appended to
$FAKE_PULUMI_STATE/calls.jsonl with its argv, working directory and the PULUMI_* variables
(the passphrase's presence only, never its value).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

STATE_DIR = Path(os.environ["FAKE_PULUMI_STATE"])
STATE_FILE = STATE_DIR / "state.json"


def load() -> dict:
    return json.loads(STATE_FILE.read_text()) if STATE_FILE.exists() else {"stacks": {}}


def save(state: dict) -> None:
    STATE_FILE.write_text(json.dumps(state))


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def record(args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith("PULUMI_") and "PASSPHRASE" not in k}
    env["passphrase_set"] = bool(os.environ.get("PULUMI_CONFIG_PASSPHRASE") or os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE"))
    with (STATE_DIR / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"argv": args, "cwd": os.getcwd(), "env": env}) + "\n")


def fail(message: str, code: int = 255) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def planned_resources(stack: dict, project: str, name: str) -> list[tuple[str, str]]:
    pools = json.loads(stack["config"].get("hybridctl:nodePools", {"value": "[]"})["value"])
    resources = [("aws:iam/role:Role", "gpu-nodes")] + [("aws:eks/nodeGroup:NodeGroup", p["name"]) for p in pools]
    return [(t, f"urn:pulumi:{name}::{project}::{t}::{n}") for t, n in resources]


def emit(log_path: str | None, events: list[dict]) -> None:
    if log_path is None:
        return
    with open(log_path, "a") as log:
        for seq, event in enumerate([*events, {"cancelEvent": {}}]):
            log.write(json.dumps({"sequence": seq, "timestamp": 0, **event}) + "\n")


def operate(command: str, args: list[str], state: dict, name: str) -> None:
    stack = state["stacks"][name]
    project = Path.cwd().name
    preview_only = command == "preview" or "--preview-only" in args
    if command == "up" and os.environ.get("FAKE_PULUMI_LOCKED"):
        fail(f"the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.\n  file://x/.pulumi/locks/{name}")
    if command in ("preview", "up"):
        want = planned_resources(stack, project, name)
        have = set(stack["resources"])
        steps = [(t, u, "same" if u in have else "create") for t, u in want]
        steps += [(u.split("::")[2], u, "delete") for u in sorted(have - {u for _, u in want})]
    elif command == "refresh":
        steps = [(u.split("::")[2], u, "refresh") for u in stack["resources"]]
    else:  # destroy
        steps = [(u.split("::")[2], u, "delete") for u in stack["resources"]]
    events: list[dict] = [{"preludeEvent": {"config": {}}}]
    counts: dict[str, int] = {}
    for type_, urn, op in steps:
        meta = {"op": op, "urn": urn, "type": type_, "provider": ""}
        events.append({"resourcePreEvent": {"metadata": meta, "planning": preview_only}})
        if not preview_only:
            events.append({"resOutputsEvent": {"metadata": meta}})
        counts[op] = counts.get(op, 0) + 1
    events.append({"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1, "resourceChanges": counts}})
    emit(option(args, "--event-log"), events)
    if not preview_only:
        if command == "up":
            stack["resources"] = [u for _, u in planned_resources(stack, project, name)]
            stack["outputs"] = {"nodeGroupCount": len(stack["resources"]) - 1, "nodeRoleArn": "arn:aws:iam::1:role/x"}
        elif command == "destroy":
            stack["resources"], stack["outputs"] = [], {}
        stack["history"].append({"kind": command, "resourceChanges": counts})
    print(f"{command}: {counts}")


def main() -> None:
    raw = sys.argv[1:]
    record(raw)
    args = [a for a in raw if a != "--non-interactive"]
    if args[:1] == ["version"]:
        print(os.environ.get("FAKE_PULUMI_VERSION", "v3.200.0"))
        return
    state = load()
    name = option(args, "--stack")
    if args[:2] == ["stack", "init"]:
        name = args[2]
        if name in state["stacks"]:
            fail(f"stack '{name}' already exists")
        state["stacks"][name] = {"config": {}, "resources": [], "outputs": {}, "history": [],
                                 "secrets_provider": option(args, "--secrets-provider")}
    elif name is None or name not in state["stacks"]:
        fail(f"no stack named '{name}' found")
    elif args[:2] == ["stack", "select"]:
        pass
    elif args[:2] == ["config", "set-all"]:
        for flag, pair in itertools.pairwise(args):
            if flag in ("--plaintext", "--secret"):
                key, _, value = pair.partition("=")
                state["stacks"][name]["config"][key] = {"value": value, "secret": flag == "--secret"}
    elif args[:2] == ["config", "rm-all"]:
        for key in args[2:]:
            if key != name and not key.startswith("--"):
                state["stacks"][name]["config"].pop(key, None)
    elif args[0] == "config":
        print(json.dumps(state["stacks"][name]["config"]))
    elif args[:2] == ["stack", "output"]:
        print(json.dumps(state["stacks"][name]["outputs"]))
    elif args[:2] == ["stack", "history"]:
        history = [
            {"kind": h["kind"], "startTime": "2026-01-01T00:00:00.000Z", "endTime": "2026-01-01T00:00:01.000Z",
             "message": "", "environment": {}, "config": {}, "result": "succeeded", "version": i + 1,
             "resourceChanges": h["resourceChanges"]}
            for i, h in enumerate(state["stacks"][name]["history"])
        ]
        print(json.dumps(list(reversed(history))[:1]))
    elif args[0] in ("preview", "up", "refresh", "destroy"):
        operate(args[0], args, state, name)
    else:
        fail(f"fake pulumi: unsupported command {args}", 2)
    save(state)


if __name__ == "__main__":
    main()
