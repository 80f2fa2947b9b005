"""Run a stacks/ program in-process under Pulumi's official unit-test mocks and record it.

The runner is the product's own (hybridctl.drivers.synth, behind `hybridctl synth`): what the
tests assert on is exactly what synth writes. Each run resets Pulumi's global runtime and
records every registration (with its resource options) and every invoke; a program that
registered nothing fails instead of passing silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from hybridctl.drivers import synth
from hybridctl.drivers.synth import GET_CLUSTER, Invoked, ProgramRun, Registered, normalize
from hybridctl.paths import stacks_dir

__all__ = ["CLUSTER_SUBNETS", "GET_CLUSTER", "Invoked", "ProgramRun", "Registered", "config_values",
           "import_stack_module", "normalize", "run_program"]

CLUSTER_SUBNETS = ("subnet-0a1", "subnet-0b2", "subnet-0c3")


def import_stack_module(stack: str, module: str) -> ModuleType:
    """Import a module of a standalone stack (its directory goes on sys.path, as `pulumi up` does)."""
    loaded: ModuleType = synth.import_stack_module(stack, module, stacks_dir())
    return loaded


def config_values(namespace: str, values: Mapping[str, Any]) -> dict[str, str]:
    return synth.config_values(values, namespace)


def run_program(program: Callable[[], Mapping[str, Any]], config: Mapping[str, str], *,
                project: str = "hybridctl-test", stack: str = "test",
                cluster_subnets: tuple[str, ...] = CLUSTER_SUBNETS,
                node_groups: Mapping[str, Mapping[str, Any]] | None = None,
                subnet_zones: Mapping[str, tuple[str, str]] | None = None,
                live_objects: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> ProgramRun:
    return synth.run_program(program, config, project=project, stack=stack, cluster_subnets=cluster_subnets,
                             node_groups=node_groups, subnet_zones=subnet_zones, live_objects=live_objects)
