"""The Pulumi driver: runs the standalone projects in stacks/ through the Automation API.

Every prerequisite is checked before anything runs: the `pulumi` CLI (present and new enough),
the passphrase for the secrets provider, and — for the stacks that need them — cloud or cluster
credentials. pulumi itself is imported inside the functions that use it, so `hybridctl --help`
and `hybridctl plan` never load it.

Each project runs from a working copy under the state directory (the stack settings files
Pulumi writes then live beside the state, not in the installed package), with the Python
interpreter running hybridctl, which carries pulumi, pulumi-aws and pulumi-kubernetes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hybridctl.drivers.cloud_credentials import check_azure_credentials, check_gcp_credentials
from hybridctl.errors import HybridctlError, PrerequisiteError, StateLockedError

if TYPE_CHECKING:
    from pulumi.automation import Stack

MIN_PULUMI_VERSION = (3, 120, 0)  # the pulumi SDK floor in pyproject.toml; toolchain options need >= 3.110
INSTALL_HINT = (
    "install the Pulumi CLI {min} or newer and put `pulumi` on PATH: "
    "`curl -fsSL https://get.pulumi.com | sh` (Linux/macOS), `brew install pulumi/tap/pulumi`, "
    "or see https://www.pulumi.com/docs/install/"
).format(min=".".join(map(str, MIN_PULUMI_VERSION)))
PASSPHRASE_ENV = "HYBRIDCTL_PULUMI_PASSPHRASE"
PASSPHRASE_FILE_ENV = "PULUMI_CONFIG_PASSPHRASE_FILE"
CONFIG_NAMESPACE = "hybridctl"
SECRET_MASK = "[secret]"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")
# Engine bookkeeping, not resources a user declared.
_HIDDEN_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:")


@dataclass(frozen=True)
class Secret:
    """A configuration value stored encrypted in the stack; its repr never shows the value."""

    value: str = field(repr=False)

    def __repr__(self) -> str:
        return f"Secret({SECRET_MASK!r})"

    __str__ = __repr__


@dataclass(frozen=True)
class StackSpec:
    project: str  # a directory under stacks/, e.g. "aws-gpu-pools"
    stack_name: str
    config: Mapping[str, object]  # keys without ':' go in the `hybridctl` namespace


@dataclass(frozen=True)
class StackEvent:
    """Progress of one resource, as streamed by the engine during an operation."""

    stack: str
    urn: str
    type: str
    name: str
    op: str  # create | update | delete | replace | same | refresh | ...
    status: str  # started | done | failed | diagnostic
    message: str = ""


@dataclass(frozen=True)
class StackChange:
    urn: str
    type: str
    name: str
    op: str


@dataclass(frozen=True)
class StackResult:
    project: str
    stack_name: str
    operation: str  # preview | up | refresh | preview-refresh | destroy
    summary: Mapping[str, int]  # op -> number of resources
    changes: tuple[StackChange, ...] = ()
    outputs: Mapping[str, object] = field(default_factory=dict)

    @property
    def has_changes(self) -> bool:
        return any(count for op, count in self.summary.items() if op != "same")


EventCallback = Callable[[StackEvent], None]


@runtime_checkable
class CloudDriver(Protocol):
    """What the apply engine needs from a cloud driver; PulumiDriver and test doubles implement it."""

    def preview(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult: ...

    def up(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult: ...

    def refresh(self, spec: StackSpec, on_event: EventCallback | None = None, *, preview_only: bool = False) -> StackResult: ...

    def destroy(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult: ...


# --- prerequisites -----------------------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def check_pulumi_cli(env: Mapping[str, str] | None = None) -> tuple[Path, tuple[int, int, int]]:
    """The `pulumi` executable and its version; PrerequisiteError when missing or too old."""
    env = os.environ if env is None else env
    found = shutil.which("pulumi", path=env.get("PATH", ""))
    if found is None:
        raise PrerequisiteError("the pulumi CLI is not installed (no `pulumi` on PATH)", hint=INSTALL_HINT)
    try:
        done = subprocess.run(
            [found, "version"], capture_output=True, text=True, timeout=60, check=False,
            # Like the Automation API's own calls: the process environment plus the overrides.
            env={**os.environ, **env, "PULUMI_SKIP_UPDATE_CHECK": "true"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrerequisiteError(f"`{found} version` did not run: {exc}", hint=INSTALL_HINT) from exc
    version = parse_version(done.stdout) if done.returncode == 0 else None
    if version is None:
        raise PrerequisiteError(f"could not read the version of {found} (got {done.stdout.strip()[:80]!r})", hint=INSTALL_HINT)
    if version < MIN_PULUMI_VERSION:
        have, need = ".".join(map(str, version)), ".".join(map(str, MIN_PULUMI_VERSION))
        raise PrerequisiteError(f"the pulumi CLI at {found} is {have}; hybridctl needs {need} or newer", hint=INSTALL_HINT)
    return Path(found), version


def check_aws_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    """Some AWS credential source the SDK would find; PrerequisiteError naming the options if none."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return
    if env.get("AWS_WEB_IDENTITY_TOKEN_FILE") and env.get("AWS_ROLE_ARN"):  # EKS IRSA
        return
    if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") or env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        return  # ECS task role, EKS pod identity
    files = [
        Path(env.get("AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials")),
        Path(env.get("AWS_CONFIG_FILE", home / ".aws" / "config")),
    ]
    if any(f.is_file() for f in files):
        return
    raise PrerequisiteError(
        "no AWS credentials found for the aws-gpu-pools stacks",
        hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with ~/.aws/config "
        "(`aws configure` / `aws configure sso`); on EC2 use a profile with "
        "`credential_source = Ec2InstanceMetadata`",
    )


def check_eks_access(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    """What the k8s-queues provider needs: it reaches the EKS cluster the inventory names with a
    token from `aws eks get-token`, so AWS credentials and the AWS CLI (not a kubeconfig)."""
    env = os.environ if env is None else env
    check_aws_credentials(env, home)
    if shutil.which("aws", path=env.get("PATH", "")) is None:
        raise PrerequisiteError(
            "the AWS CLI is not installed (no `aws` on PATH); the k8s-queues stacks authenticate to EKS with "
            "`aws eks get-token`",
            hint="install the AWS CLI v2 (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html)",
        )


CREDENTIAL_CHECKS: Mapping[str, Callable[[Mapping[str, str] | None, Path | None], None]] = {
    "aws-gpu-pools": check_aws_credentials,
    "k8s-queues": check_eks_access,
    "gcp-gpu-pools": check_gcp_credentials,
    "azure-gpu-pools": check_azure_credentials,
}


def check_credentials(spec: StackSpec, env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    """The credential check for the stack's project; the CLI calls it before `up`."""
    check = CREDENTIAL_CHECKS.get(spec.project)
    if check is not None:
        check(env, home)


def passphrase_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that hand the passphrase to the CLI. The value is never logged or echoed."""
    env = os.environ if env is None else env
    # hybridctl's own variable first, then Pulumi's standard ones.
    for name in (PASSPHRASE_ENV, "PULUMI_CONFIG_PASSPHRASE"):
        if env.get(name):
            return {"PULUMI_CONFIG_PASSPHRASE": env[name]}
    path = env.get(PASSPHRASE_FILE_ENV)
    if path:
        if not Path(path).is_file():
            raise PrerequisiteError(f"{PASSPHRASE_FILE_ENV} names {path}, which is not a readable file")
        return {PASSPHRASE_FILE_ENV: path}
    raise PrerequisiteError(
        "no passphrase for the Pulumi secrets provider",
        hint=f"set {PASSPHRASE_ENV} (or PULUMI_CONFIG_PASSPHRASE), or {PASSPHRASE_FILE_ENV} to a file holding it; "
        "keep the same one for every run",
    )


def backend_url(state_dir: Path, override: str | None = None) -> str:
    """`file://<state_dir>/pulumi` unless another backend URL is given."""
    if override:
        return override
    return f"file://{(state_dir / 'pulumi').resolve()}"


# --- pure translation --------------------------------------------------------------------------


def flatten_config(config: Mapping[str, object], namespace: str = CONFIG_NAMESPACE) -> dict[str, tuple[str, bool]]:
    """Stack config as `pulumi config set-all` takes it: full key -> (string value, is secret).

    Structured values become JSON (the programs read them with `require_object`).
    """
    flat: dict[str, tuple[str, bool]] = {}
    for key, value in config.items():
        full_key = key if ":" in key else f"{namespace}:{key}"
        if isinstance(value, Secret):
            flat[full_key] = (value.value, True)
        elif isinstance(value, str):
            flat[full_key] = (value, False)
        else:
            flat[full_key] = (json.dumps(value, sort_keys=True, separators=(",", ":")), False)
    return flat


def _name_from_urn(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def translate_event(stack: str, event: Any) -> StackEvent | None:
    """A Pulumi EngineEvent as a StackEvent, or None for events the progress display ignores."""
    for attr, status in (("resource_pre_event", "started"), ("res_outputs_event", "done"), ("res_op_failed_event", "failed")):
        inner = getattr(event, attr, None)
        if inner is None:
            continue
        meta = inner.metadata
        if meta.type.startswith(_HIDDEN_TYPES):
            return None
        op = getattr(meta.op, "value", meta.op)
        return StackEvent(stack, meta.urn, meta.type, _name_from_urn(meta.urn), str(op), status)
    diag = getattr(event, "diagnostic_event", None)
    if diag is not None and diag.severity == "error" and diag.urn:
        return StackEvent(stack, diag.urn, "", _name_from_urn(diag.urn), "", "diagnostic", diag.message.strip())
    return None


def _summary(op_map: Mapping[Any, int] | None) -> dict[str, int]:
    return {str(getattr(op, "value", op)): int(n) for op, n in (op_map or {}).items()}


def _outputs(output_map: Mapping[str, Any]) -> dict[str, object]:
    return {k: SECRET_MASK if v.secret else v.value for k, v in output_map.items()}


# --- the driver --------------------------------------------------------------------------------


class PulumiDriver:
    """CloudDriver over the Pulumi Automation API and the projects in stacks/."""

    def __init__(
        self,
        state_dir: Path,
        *,
        backend: str | None = None,
        env: Mapping[str, str] | None = None,
        stacks_root: Path | None = None,
    ) -> None:
        self._state_dir = state_dir
        self._backend = backend_url(state_dir, backend)
        self._env = dict(os.environ if env is None else env)
        self._stacks_root = stacks_root
        self._cli: Path | None = None

    def check(self) -> None:
        """Every prerequisite of running a stack; call before the first operation."""
        self._cli, _ = check_pulumi_cli(self._env)
        passphrase_env(self._env)

    def preview(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        return self._run(spec, "preview", on_event)

    def up(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        return self._run(spec, "up", on_event)

    def refresh(self, spec: StackSpec, on_event: EventCallback | None = None, *, preview_only: bool = False) -> StackResult:
        return self._run(spec, "preview-refresh" if preview_only else "refresh", on_event)

    def destroy(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        return self._run(spec, "destroy", on_event)

    # internals

    def _workspace_env(self) -> dict[str, str]:
        env = {
            "PULUMI_BACKEND_URL": self._backend,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            # The program runs with the interpreter that runs hybridctl (and has its SDKs).
            "PULUMI_PYTHON_CMD": sys.executable,
        }
        env.update(passphrase_env(self._env))
        return env

    def _project_source(self, project: str) -> Path:
        from hybridctl.paths import stacks_dir

        return (self._stacks_root or stacks_dir()) / project

    def _project_copy(self, project: str, stack_name: str) -> Path:
        """A working copy of stacks/<project> per stack under the state directory: stack settings
        stay there, and steps running at once never share (or rewrite) one copy."""
        source = self._project_source(project)
        if not (source / "Pulumi.yaml").is_file():
            raise HybridctlError(f"no Pulumi project {project!r} under {source.parent}")
        target = self._state_dir / "pulumi" / "projects" / project / stack_name
        target.mkdir(parents=True, exist_ok=True)
        for item in source.iterdir():
            if item.is_file() and item.suffix in (".py", ".txt"):
                shutil.copy2(item, target / item.name)
            elif item.is_dir() and item.name == "vendor":  # pinned manifests the program applies
                shutil.copytree(item, target / item.name, dirs_exist_ok=True)
        return target

    def _stack(self, spec: StackSpec) -> Stack:
        import yaml
        from pulumi.automation import (
            ConfigValue,
            LocalWorkspaceOptions,
            ProjectRuntimeInfo,
            ProjectSettings,
            PulumiCommand,
            create_or_select_stack,
        )

        if self._cli is None:
            self.check()
        assert self._cli is not None
        if self._backend.startswith("file://"):
            Path(self._backend.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
        work_dir = self._project_copy(spec.project, spec.stack_name)
        source = yaml.safe_load((self._project_source(spec.project) / "Pulumi.yaml").read_text())
        settings = ProjectSettings(
            name=source["name"],
            description=source.get("description"),
            runtime=ProjectRuntimeInfo(name="python", options={"toolchain": "pip"}),
        )
        # PulumiCommand(root) runs <root>/bin/pulumi: the executable the checks approved.
        root = str(self._cli.parent.parent) if self._cli.parent.name == "bin" else None
        stack = create_or_select_stack(
            spec.stack_name,
            work_dir=str(work_dir),
            opts=LocalWorkspaceOptions(
                work_dir=str(work_dir),
                project_settings=settings,
                env_vars=self._workspace_env(),
                secrets_provider="passphrase",
                pulumi_command=PulumiCommand(root=root, skip_version_check=True),
            ),
        )
        wanted = flatten_config(spec.config)
        stale = [k for k in stack.get_all_config() if k.startswith(f"{CONFIG_NAMESPACE}:") and k not in wanted]
        if stale:
            stack.remove_all_config(stale)
        stack.set_all_config({k: ConfigValue(value=v, secret=s) for k, (v, s) in wanted.items()})
        return stack

    def _run(self, spec: StackSpec, operation: str, on_event: EventCallback | None) -> StackResult:
        from pulumi.automation import errors as auto_errors

        changes: dict[str, StackChange] = {}

        def forward(engine_event: Any) -> None:
            event = translate_event(spec.stack_name, engine_event)
            if event is None:
                return
            if event.status == "started" and event.op != "same":
                changes[event.urn] = StackChange(event.urn, event.type, event.name, event.op)
            if on_event is not None:
                on_event(event)

        try:
            stack = self._stack(spec)
            summary, outputs = self._operate(stack, operation, forward)
        except auto_errors.ConcurrentUpdateError as exc:
            raise StateLockedError(
                f"stack {spec.project}/{spec.stack_name} is locked by another update",
                hint="wait for it to finish; if it crashed, run `pulumi cancel` in the project working copy",
            ) from exc
        except auto_errors.CommandError as exc:
            raise HybridctlError(
                f"pulumi {operation} failed for stack {spec.project}/{spec.stack_name}: {_stderr_tail(str(exc))}"
            ) from exc
        except FileNotFoundError as exc:  # the CLI vanished between the check and the run
            raise PrerequisiteError(f"the pulumi CLI could not be run: {exc}", hint=INSTALL_HINT) from exc
        return StackResult(spec.project, spec.stack_name, operation, summary, tuple(changes.values()), outputs)

    @staticmethod
    def _operate(stack: Stack, operation: str, forward: Callable[[Any], None]) -> tuple[dict[str, int], dict[str, object]]:
        if operation == "preview":
            return _summary(stack.preview(on_event=forward, diff=False).change_summary), {}
        if operation == "up":
            up = stack.up(on_event=forward)
            return _summary(up.summary.resource_changes), _outputs(up.outputs)
        if operation == "refresh":
            done = stack.refresh(on_event=forward)
            return _summary(done.summary.resource_changes), _outputs(stack.outputs())
        if operation == "preview-refresh":
            # Older SDKs have no preview_refresh, only refresh(preview_only=True).
            if hasattr(stack, "preview_refresh"):
                return _summary(stack.preview_refresh(on_event=forward).change_summary), {}
            return _summary(stack.refresh(on_event=forward, preview_only=True).summary.resource_changes), {}
        if operation == "destroy":
            return _summary(stack.destroy(on_event=forward).summary.resource_changes), {}
        raise ValueError(f"unknown operation {operation!r}")


def _stderr_tail(message: str, lines: int = 12) -> str:
    """The end of the CLI's stderr from a CommandError's text: where the engine says what failed."""
    _, _, stderr = message.partition(" stderr: ")
    tail = [line for line in (stderr or message).strip().splitlines() if line.strip()][-lines:]
    return "\n".join(tail)
