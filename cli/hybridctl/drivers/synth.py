"""Run the stacks/ programs offline under Pulumi's mocks and record what they would create.

The programs run in-process (no Pulumi CLI, no credentials, no network): Pulumi's official
unit-test mocks answer every registration and lookup. The mocks answer values that only the
cloud knows (ids, ARNs, an EKS cluster's endpoint and subnets) with `<unknown: …>`
placeholders, so nothing in the output can be mistaken for a real identifier.

pulumi is imported inside the functions: `hybridctl --help` and `plan` never load it.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybridctl.errors import HybridctlError

# project -> (module, function) that reads the stack config and declares the resources.
PROGRAMS = {
    "aws-gpu-pools": ("gpu_pools", "gpu_pools", "load_config"),
    "k8s-queues": ("kueue_queues", "queues_config", "load_config"),
    "gcp-gpu-pools": ("gke_pools", "gke_pools", "load_config"),
    "azure-gpu-pools": ("aks_pools", "aks_pools", "load_config"),
}
# The provider SDKs that are extras, and the extra that installs each.
EXTRAS = {"pulumi_gcp": "gcp", "pulumi_azure_native": "azure"}
GET_CLUSTER = "aws:eks/getCluster:getCluster"
GET_SUBNETS = "aws:ec2/getSubnets:getSubnets"
GET_NODE_GROUPS = "aws:eks/getNodeGroups:getNodeGroups"
GET_NODE_GROUP = "aws:eks/getNodeGroup:getNodeGroup"
GET_AUTOSCALING_GROUP = "aws:autoscaling/getGroup:getGroup"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def unknown(what: str) -> str:
    return f"<unknown: {what}>"


@dataclass(frozen=True)
class Registered:
    type: str
    name: str
    inputs: dict[str, Any]  # wire form: camelCase keys, as the provider would receive them
    options: dict[str, Any] = field(default_factory=dict)  # provider, dependsOn and lifecycle options set


@dataclass(frozen=True)
class Invoked:
    token: str
    args: dict[str, Any]


@dataclass
class ProgramRun:
    project: str
    stack: str
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


def normalize(value: Any) -> Any:
    """Mock inputs carry every number as a float; JSON (and the API server) sees 2.0 as 2."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    return value


def config_values(values: Mapping[str, object], namespace: str = "hybridctl") -> dict[str, str]:
    """Stack config as the engine hands it to a program: strings, structured values as JSON."""
    out: dict[str, str] = {}
    for key, value in values.items():
        full_key = key if ":" in key else f"{namespace}:{key}"
        out[full_key] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return out


def _mock_classes() -> tuple[type, type]:
    """The Mocks and MockMonitor subclasses, built on first use so pulumi stays a lazy import."""
    import pulumi
    from pulumi.runtime.mocks import MockMonitor

    class RecordingMocks(pulumi.runtime.Mocks):
        """Records registrations and invokes; answers like a provider would, with placeholders."""

        def __init__(self, cluster_subnets: tuple[str, ...] | None = None,
                     node_groups: Mapping[str, Mapping[str, Any]] | None = None,
                     subnet_zones: Mapping[str, tuple[str, str]] | None = None,
                     live_objects: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> None:
            self.registered: list[Registered] = []
            # live Kubernetes objects a program reads, (type, namespace/name) -> state: synth's default is
            # none, answered with placeholders; tests give them to model a cluster
            self._live_objects = dict(live_objects or {})
            self._subnet_zones = dict(subnet_zones or {})  # subnet -> (zone name, zone ID), when a test models them
            # node groups the cluster already has (name -> EKS's answer): synth's default is none, a
            # first deployment; tests give live ones to model later deployments
            self._node_groups = dict(node_groups or {})
            self.invoked: list[Invoked] = []
            # (type, name) -> the options of a registration in flight: registrations may run on
            # several threads at once, so they are matched by identity, not by order.
            self.options: dict[tuple[str, str], dict[str, Any]] = {}
            self._cluster_subnets = cluster_subnets

        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            if args.resource_id:  # a read of a live object (`Resource.get`): a lookup, not a resource
                self.invoked.append(Invoked(f"read {args.typ}", {"id": args.resource_id}))
                return args.resource_id, dict(self._live_objects.get((args.typ, args.resource_id), {
                    "data": {"controller_manager_config.yaml": unknown(f"{args.resource_id}: synth reads no cluster")},
                    "spec": unknown(f"{args.resource_id}: synth reads no cluster")}))
            inputs = normalize(dict(args.inputs))
            options = self.options.pop((args.typ, args.name), {})
            self.registered.append(Registered(args.typ, args.name, inputs, options))
            state = dict(inputs)
            label = f"{args.typ.rsplit(':', 1)[-1]} {args.name}"
            if args.typ.startswith("aws:"):
                state.setdefault("name", unknown(f"name of {label}"))
                state.setdefault("arn", unknown(f"arn of {label}"))
            if args.typ == LAUNCH_TEMPLATE:
                state.setdefault("latestVersion", 1)
            if args.typ == NODE_GROUP:
                state.setdefault("nodeGroupName", unknown(f"name of {label}"))
                state.setdefault("resources", [{"autoscalingGroups": [{"name": unknown(f"ASG of {label}")}]}])
            return unknown(f"id of {label}"), state

        def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
            call_args = normalize(dict(args.args))
            self.invoked.append(Invoked(args.token, call_args))
            if args.token == GET_CLUSTER:
                name = call_args["name"]
                subnets = list(self._cluster_subnets or (unknown(f"subnet {i} of EKS cluster {name}") for i in (1, 2, 3)))
                return {
                    "name": name, "arn": unknown(f"arn of EKS cluster {name}"),
                    "endpoint": unknown(f"endpoint of EKS cluster {name}"),
                    "certificateAuthorities": [{"data": unknown(f"CA of EKS cluster {name}")}],
                    "vpcConfig": {"subnetIds": subnets,
                                  "clusterSecurityGroupId": unknown(f"cluster security group of {name}")},
                }, []
            if args.token == GET_SUBNETS:
                filters = {f["name"]: f["values"] for f in call_args.get("filters", [])}
                zone = ",".join(filters.get("availability-zone", []) or filters.get("availability-zone-id", []))
                if self._subnet_zones:
                    ids = [s for s in filters.get("subnet-id", []) if s in self._subnet_zones
                           and self._subnet_zones[s][0 if "availability-zone" in filters else 1] == zone]
                    return {"ids": ids, "id": zone}, []
                return {"ids": [unknown(f"the cluster's subnets in {zone}")], "id": zone}, []
            if args.token == GET_NODE_GROUPS:
                return {"clusterName": call_args["clusterName"], "id": call_args["clusterName"],
                        "names": sorted(self._node_groups)}, []
            if args.token == GET_NODE_GROUP:
                live = {k: v for k, v in self._node_groups[call_args["nodeGroupName"]].items() if k != "asg"}
                return {"clusterName": call_args["clusterName"], "nodeGroupName": call_args["nodeGroupName"], **live}, []
            if args.token == GET_AUTOSCALING_GROUP:
                # a live node group's Auto Scaling group, as a test models it (its "asg" beside EKS's answer)
                (asg,) = [g["asg"] for g in self._node_groups.values()
                          if g.get("asg") and g["resources"][0]["autoscalingGroups"][0]["name"] == call_args["name"]]
                return {"name": call_args["name"], "id": call_args["name"], **asg}, []
            raise HybridctlError(f"the stack program made a lookup synth cannot answer offline: {args.token}")

    class OptionsMonitor(MockMonitor):
        """Keeps what the resource options asked of the engine, which the mocks do not see."""

        def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
            options: dict[str, Any] = {}
            if request.provider:
                options["provider"] = request.provider.split("::")[-2]  # urn::id -> the provider's name
            if request.dependencies:
                options["dependsOn"] = sorted(u.rsplit("::", 1)[-1] for u in request.dependencies)
            if request.retainOnDelete:
                options["retainOnDelete"] = True
            if request.deleteBeforeReplace:
                options["deleteBeforeReplace"] = True
            if request.replaceOnChanges:
                options["replaceOnChanges"] = list(request.replaceOnChanges)
            if request.ignoreChanges:
                options["ignoreChanges"] = list(request.ignoreChanges)
            if request.type != "pulumi:pulumi:Stack":
                recorder: Any = self.mocks
                recorder.options[(request.type, request.name)] = options
            return super().RegisterResource(request)  # type: ignore[no-untyped-call]

    return RecordingMocks, OptionsMonitor


def import_stack_module(project: str, module: str, stacks_root: Path) -> Any:
    """Import a module of a standalone stack (its directory goes on sys.path, as `pulumi up` does)."""
    path = str(stacks_root / project)
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(module)


def stack_program(project: str, stacks_root: Path) -> Callable[[], Mapping[str, Any]]:
    if project not in PROGRAMS:
        raise HybridctlError(f"no stack program for project {project!r}")
    program_module, config_module, loader = PROGRAMS[project]
    try:
        program = import_stack_module(project, program_module, stacks_root).program
    except ModuleNotFoundError as exc:  # the gcp and azure SDKs are extras (pyproject.toml)
        extra = EXTRAS.get(exc.name or "")
        if extra is None:
            raise
        raise HybridctlError(f"stack {project} needs the {exc.name} package, which is not installed",
                             hint=f"pip install 'hybridctl[{extra}]'") from exc
    load = getattr(import_stack_module(project, config_module, stacks_root), loader)
    return lambda: program(load())


def run_program(program: Callable[[], Mapping[str, Any]], config: Mapping[str, str], *, project: str = "hybridctl",
                stack: str = "synth", cluster_subnets: tuple[str, ...] | None = None,
                node_groups: Mapping[str, Mapping[str, Any]] | None = None,
                subnet_zones: Mapping[str, tuple[str, str]] | None = None,
                live_objects: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> ProgramRun:
    """Run `program` (which reads its config and declares resources) under fresh mocks; `node_groups`: the
    cluster's live node groups (name -> EKS's DescribeNodegroup answer, camelCase), none by default;
    `live_objects`: the Kubernetes objects it reads, none by default (placeholders)."""
    import pulumi
    from pulumi.runtime import settings

    mocks_class, monitor_class = _mock_classes()
    mocks = mocks_class(cluster_subnets, node_groups, subnet_zones, live_objects)
    # Pulumi's runtime is global: drop the previous run's root stack and settings, install the
    # mocks (which create a new root), then the config the program will read.
    settings.reset_options(project=project, stack=stack, preview=False)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor_class(mocks))
    pulumi.runtime.set_all_config(dict(config), secret_keys=[])
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> Any:
        return pulumi.Output.from_input(program()).apply(lambda resolved: outputs.update(resolved))

    _run()
    if not mocks.registered:
        raise HybridctlError(f"stack {stack}: the program registered no resource")
    return ProgramRun(project, stack, list(mocks.registered), list(mocks.invoked), normalize(outputs))


def synth_stack(project: str, stack: str, values: Mapping[str, object], stacks_root: Path) -> ProgramRun:
    """One stack of a plan, from the values hybridctl.core.deploy.stackconfig maps the plan to."""
    program = stack_program(project, stacks_root)
    try:
        return run_program(program, config_values(values), project=project, stack=stack)
    except ValueError as exc:  # the stacks' ConfigError: the configuration breaks the schema
        raise HybridctlError(f"stack {stack}: {exc}", hint="see stacks/README.md for the configuration schema") from exc
