"""Step runners: how each kind of step runs through a driver (Pulumi, Ansible), for the executor.

A runner takes a step and its context and returns a StepOutcome; it raises only for the
unexpected. Runners are idempotent: `pulumi up` converges a stack, the playbooks converge
hosts, a destroy of a stack that is already gone succeeds.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.core.deploy.stepcheck import check_step_params
from hybridctl.core.deploy.steps import ANSIBLE_KINDS, CLOUD_KINDS, Step, StepKind
from hybridctl.errors import HybridctlError, PrerequisiteError
from hybridctl.executor import StepContext, StepOutcome, StepRunner, StepStatus

if TYPE_CHECKING:
    from hybridctl.drivers.ansible import PlaybookResult, SshOptions
    from hybridctl.drivers.pulumi import CloudDriver, StackEvent, StackResult, StackSpec

_HOST_KEY_HINT = ("the host's SSH key is not in the known_hosts file ({known_hosts}); check its fingerprint, then "
                  "add it, e.g. `ssh-keyscan -p PORT ADDRESS >> {known_hosts}`")


CLOUD_DRIVER_ENV = "HYBRIDCTL_CLOUD_DRIVER"
PULUMI_BACKEND_ENV = "HYBRIDCTL_PULUMI_BACKEND"  # e.g. s3://bucket/prefix; default file://<state dir>/pulumi


def cloud_driver(state_dir: Path, env: Mapping[str, str] | None = None) -> CloudDriver:
    """The Pulumi driver, its prerequisites checked (PrerequisiteError, exit 2, when missing).

    HYBRIDCTL_CLOUD_DRIVER=module:factory replaces it with factory(state_dir): a test seam, so
    that a `hybridctl apply` subprocess can run against a test double that ships only in tests/.
    """
    env = os.environ if env is None else env
    named = env.get(CLOUD_DRIVER_ENV)
    if named:
        module_name, _, attribute = named.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attribute or "factory")
        except (ImportError, AttributeError) as exc:
            raise PrerequisiteError(f"{CLOUD_DRIVER_ENV}={named}: cannot load the cloud driver: {exc}") from None
        driver: CloudDriver = factory(state_dir)
        return driver
    from hybridctl.drivers.pulumi import PulumiDriver

    pulumi = PulumiDriver(state_dir, backend=env.get(PULUMI_BACKEND_ENV) or None, env=env)
    pulumi.check()
    return pulumi


def check_cloud_credentials(driver: CloudDriver, steps: Iterable[Step]) -> None:
    """Credentials for every stack about to run, before anything runs (the real driver only)."""
    from hybridctl.drivers.pulumi import PulumiDriver, check_credentials

    if isinstance(driver, PulumiDriver):
        for step in steps:
            if step.kind in CLOUD_KINDS:
                check_credentials(stack_spec(step))


def stack_spec(step: Step) -> StackSpec:
    """The StackSpec a cloud step carries (its configuration holds no secret)."""
    from hybridctl.drivers.pulumi import StackSpec

    params = step.params
    config = params.get("config", {})
    return StackSpec(project=str(params["project"]), stack_name=str(params["stack_name"]),
                     config=dict(config) if isinstance(config, Mapping) else {})


def _describe_stack_result(result: StackResult) -> str:
    counts = {op: n for op, n in sorted(result.summary.items()) if n}
    return ", ".join(f"{n} {op}" for op, n in counts.items()) or "no resources"


def cloud_runner(driver: CloudDriver) -> StepRunner:
    """Pulumi `up` for the pools and queues steps, `destroy` for their teardown."""

    def run(step: Step, context: StepContext) -> StepOutcome:
        spec = stack_spec(step)

        def on_event(event: StackEvent) -> None:
            if event.status in ("started", "failed"):
                context.note(f"{event.op} {event.name}" + (" failed" if event.status == "failed" else ""))

        if step.kind in (StepKind.DESTROY_CLOUD_POOLS, StepKind.DESTROY_CLUSTER_QUEUES):
            result = driver.destroy(spec, on_event)
        else:
            result = driver.up(spec, on_event)
        return StepOutcome(StepStatus.DONE, f"{spec.project}/{spec.stack_name}: {_describe_stack_result(result)}",
                           detail={"stack": spec.stack_name, "operation": result.operation,
                                   "summary": dict(result.summary)})

    return run


def write_inventory_file(hosts: AnsibleInventory, directory: Path, name: str = "") -> Path:
    """Render an inventory through templates/ansible/inventory.yml.j2 into a private file."""
    from hybridctl.render.apply import render_ansible_inventory

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.NamedTemporaryFile("w", prefix="inventory-", suffix=".yml", dir=directory, delete=False) as handle:
        handle.write(render_ansible_inventory(hosts, name))
    return Path(handle.name)


def describe_playbook_result(result: PlaybookResult) -> str:
    parts = []
    for state in ("ok", "changed", "failed", "timed_out", "canceled", "unreachable"):
        hosts = [h.host for h in result.hosts if h.state.value == state]
        if hosts:
            parts.append(f"{len(hosts)} {state}")
    return ", ".join(parts) or "no hosts"


def playbook_detail(result: PlaybookResult) -> dict[str, object]:
    return {"playbook": Path(result.playbook).name, "status": result.status.value, "hosts": {
        h.host: {"state": h.state.value, "ok": h.ok, "changed": h.changed, "failed": h.failed,
                 "unreachable": h.unreachable, **({"failed_task": h.failed_task} if h.failed_task else {}),
                 **({"message": (h.message or "")[:500]} if h.message else {})}
        for h in result.hosts}}


def playbook_error(result: PlaybookResult, known_hosts: Path) -> str:
    lines = []
    for host in result.hosts:
        if host.state.value in ("failed", "timed_out", "canceled", "unreachable"):
            message = (host.message or "").strip().splitlines()
            line = f"{host.host}: {host.state.value}" + (f" at task '{host.failed_task}'" if host.failed_task else "")
            if message:
                line += f": {message[0][:300]}"
            if "host key verification failed" in (host.message or "").lower():
                line += "\n  hint: " + _HOST_KEY_HINT.format(known_hosts=known_hosts)
            lines.append(line)
    if not lines and result.error:
        lines.append(result.error)
    return "\n".join(lines) or f"ansible-playbook ended {result.status.value} (rc {result.rc})"


def shipped_playbook(step: Step, playbooks: Path) -> Path:
    """The playbook an Ansible step runs: the one hybridctl ships for its kind, a file of `playbooks`. Its
    params were checked where they were read (a runbook, a state); checked here again, as the last thing before
    Ansible, for a step that came another way (HybridctlError: the step fails, nothing runs)."""
    if step.kind not in ANSIBLE_KINDS:
        raise HybridctlError(f"step {step.id}: a {step.kind} step runs no playbook")
    try:
        check_step_params(step.kind, step.params)
    except ValueError as exc:
        raise HybridctlError(f"step {step.id}: {exc}", hint="the runbook or state it came from was edited: restore "
                             "it from a backup, or make it again with `hybridctl failover` or `hybridctl apply`") from None
    name = str(step.params["playbook"])  # a plain name (check_step_params): resolved, it must stay in `playbooks`
    root = playbooks.resolve()
    path = (root / name).resolve()
    if path.parent != root or not path.is_file():
        raise HybridctlError(f"step {step.id}: {name!r} is not a playbook hybridctl ships (in {root})")
    return path


def run_ansible_step(step: Step, context: StepContext | None, *, playbooks: Path, ssh: SshOptions, work_dir: Path,
                     check: bool = False, diff: bool = False) -> PlaybookResult:
    """One playbook against the hosts the step carries; the inventory file is private and removed after."""
    from hybridctl.drivers.ansible import AnsibleEvent, EventKind, run_playbook

    playbook = shipped_playbook(step, playbooks)
    raw_hosts, raw_vars = step.params["inventory"], step.params.get("extravars", {})
    assert isinstance(raw_hosts, Mapping) and isinstance(raw_vars, Mapping)  # shipped_playbook checked the params
    hosts = AnsibleInventory.from_params(raw_hosts)
    extravars = dict(raw_vars)
    path = write_inventory_file(hosts, work_dir)

    def on_event(event: AnsibleEvent) -> None:
        if context is not None and event.kind is EventKind.TASK_STARTED and event.host is None and event.task:
            context.note(event.task)

    try:
        return run_playbook(playbook, path, ssh=ssh, extravars=extravars,
                            check=check, diff=diff, on_event=on_event,
                            cancel=context.cancel if context is not None else None, work_dir=work_dir)
    finally:
        path.unlink(missing_ok=True)


def ansible_runner(playbooks: Path, ssh: SshOptions, work_dir: Path) -> StepRunner:
    def run(step: Step, context: StepContext) -> StepOutcome:
        result = run_ansible_step(step, context, playbooks=playbooks, ssh=ssh, work_dir=work_dir)
        summary = f"{Path(result.playbook).name}: {describe_playbook_result(result)}"
        if result.status.value == "canceled":
            return StepOutcome(StepStatus.CANCELED, summary, detail=playbook_detail(result))
        if not result.succeeded:
            return StepOutcome(StepStatus.FAILED, summary, playbook_error(result, ssh.known_hosts),
                               playbook_detail(result))
        return StepOutcome(StepStatus.DONE, summary, detail=playbook_detail(result))

    return run


def release_runner(step: Step, context: StepContext) -> StepOutcome:
    """Destroy of on-prem/edge hosts: nothing runs on them; the state forgets them (step.removes)."""
    del context
    return StepOutcome(StepStatus.DONE, f"released {len(step.removes)} deployed step(s) of {step.site} "
                                        "(node configuration left in place)")


def default_runners(*, cloud: CloudDriver | None, playbooks: Path, ssh: SshOptions, work_dir: Path) -> dict[str, StepRunner]:
    runners: dict[str, Callable[[Step, StepContext], StepOutcome]] = {}
    if cloud is not None:
        for kind in (StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES, StepKind.DESTROY_CLOUD_POOLS,
                     StepKind.DESTROY_CLUSTER_QUEUES):
            runners[kind] = cloud_runner(cloud)
    for kind in (StepKind.PREFLIGHT, StepKind.NODE_BASELINE, StepKind.MODEL_SYNC):
        runners[kind] = ansible_runner(playbooks, ssh, work_dir)
    runners[StepKind.RELEASE_NODES] = release_runner
    return runners
