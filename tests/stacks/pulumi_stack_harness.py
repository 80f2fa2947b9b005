"""Run a stacks/ program in-process under Pulumi's official unit-test mocks and record it.

Pulumi's runtime keeps global state (settings, the root stack resource, config), so every run
resets it: fresh options, fresh mocks, fresh config, then the program inside
``@pulumi.runtime.test``. Each run records every resource registration and every invoke, so a
test asserts on what really reached the (mock) engine; a program that registered nothing, or
registered before the mocks were installed, fails here instead of passing silently.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pulumi
from hybridctl.paths import stacks_dir
from pulumi.runtime import settings

GET_CLUSTER = "aws:eks/getCluster:getCluster"
CLUSTER_SUBNETS = ("subnet-0a1", "subnet-0b2", "subnet-0c3")


def import_stack_module(stack: str, module: str) -> ModuleType:
    """Import a module of a standalone stack (its directory goes on sys.path, as `pulumi up` does)."""
    stack_path = str(Path(stacks_dir()) / stack)
    if stack_path not in sys.path:
        sys.path.insert(0, stack_path)
    return importlib.import_module(module)


def normalize(value: Any) -> Any:
    """Mock inputs carry every number as a float; JSON (and the API server) sees 2.0 as 2."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    return value


@dataclass(frozen=True)
class Registered:
    type: str
    name: str
    inputs: dict[str, Any]  # wire form: camelCase keys, as the provider would receive them


@dataclass(frozen=True)
class Invoked:
    token: str
    args: dict[str, Any]


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every registration and invoke; answers like a provider would, with fake ids."""

    def __init__(self, cluster_subnets: tuple[str, ...] = CLUSTER_SUBNETS) -> None:
        self.registered: list[Registered] = []
        self.invoked: list[Invoked] = []
        self._cluster_subnets = cluster_subnets

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        inputs = normalize(dict(args.inputs))
        self.registered.append(Registered(args.typ, args.name, inputs))
        state = dict(inputs)
        # Properties the provider computes and the programs feed into other resources.
        if args.typ.startswith("aws:"):
            state.setdefault("name", f"{args.name}-1a2b3c4")
            state.setdefault("arn", f"arn:aws:mock::123456789012:{args.typ.rsplit(':', 1)[-1].lower()}/{args.name}")
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            state.setdefault("nodeGroupName", f"{args.name}-1a2b3c4")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.invoked.append(Invoked(args.token, dict(args.args)))
        if args.token == GET_CLUSTER:
            return {"name": args.args["name"], "vpcConfig": {"subnetIds": list(self._cluster_subnets)}}, []
        raise AssertionError(f"unexpected invoke {args.token}: the mocks answer only {GET_CLUSTER}")


@dataclass
class ProgramRun:
    resources: list[Registered]
    invokes: list[Invoked]
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str) -> Registered:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        assert len(matches) == 1, f"expected one {type_} named {name}, got {len(matches)}"
        return matches[0]

    def type_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.resources:
            counts[r.type] = counts.get(r.type, 0) + 1
        return counts


def config_values(namespace: str, values: Mapping[str, Any]) -> dict[str, str]:
    """Stack config as the engine hands it to a program: strings, structured values as JSON."""
    out: dict[str, str] = {}
    for key, value in values.items():
        full_key = key if ":" in key else f"{namespace}:{key}"
        out[full_key] = value if isinstance(value, str) else json.dumps(value)
    return out


def run_program(
    program: Callable[[], Mapping[str, pulumi.Output[Any]]],
    config: Mapping[str, str],
    *,
    project: str = "hybridctl-test",
    stack: str = "test",
    mocks: RecordingMocks | None = None,
) -> ProgramRun:
    """Run ``program`` (which reads its config and declares resources) under fresh mocks."""
    mocks = mocks or RecordingMocks()
    # Order matters: drop the previous run's root stack and settings, install the mocks (which
    # create a new root), then the config the program will read.
    settings.reset_options(project=project, stack=stack, preview=False)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False)
    pulumi.runtime.set_all_config(dict(config), secret_keys=[])
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> pulumi.Output[None]:
        return pulumi.Output.from_input(program()).apply(lambda resolved: outputs.update(resolved))

    _run()
    if not mocks.registered:
        raise AssertionError("the program registered no resource with the mocks")
    return ProgramRun(resources=list(mocks.registered), invokes=list(mocks.invoked), outputs=normalize(outputs))
