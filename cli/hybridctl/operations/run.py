"""What apply, destroy, failover, runbook and status share for one run: the state store and its lock,
SSH options, approval, the cloud driver, the step runners, execution with its report, and the
failovers in effect (kept with the state).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybridctl.core.deploy.steps import CLOUD_KINDS, BundleRef, DeployedStep, StepGraph
from hybridctl.drivers.ansible import SshOptions
from hybridctl.drivers.pulumi import CloudDriver
from hybridctl.drivers.state import LockHolder, State, StateStore, is_database_url, open_state
from hybridctl.errors import PrerequisiteError, RefusedError, UsageError
from hybridctl.executor import RunReport, StepRunner, StepStatus, pending_for, run_operation
from hybridctl.operations.common import require_state_dir
from hybridctl.paths import playbooks_dir, templates_dir
from hybridctl.render.apply import PlainProgress, RichProgress, progress_for, render_run_report
from hybridctl.render.terminal import Terminal
from hybridctl.runners import check_cloud_credentials, cloud_driver, default_runners

if TYPE_CHECKING:
    from hybridctl.core.plan.model import Plan

INTERRUPTED = 130
SKIP_CLOUD_HINT = "or pass --skip-cloud to configure only the on-prem and edge sites"


def open_store(state: str | Path | None, view: Terminal | None = None, *, must_exist: bool = False) -> StateStore:
    """The store --state / $HYBRIDCTL_STATE names: a directory, or a postgresql:// URL. What opening it has
    to say (a state moved to its new layout) is noted on `view` (default: the terminal's).

    `must_exist`: for a command that works on what an earlier one left (resume, rollback, abandon): a
    directory without a state is a mistyped --state, refused before anything (the lock) creates it."""
    from hybridctl.drivers.state import DirectoryBackend

    if state is not None and not is_database_url(str(state)):
        require_state_dir(Path(state))
    note = (view or Terminal()).note
    store = open_state(state, notify=lambda message: note(message, markup=False))
    if must_exist and isinstance(store.backend, DirectoryBackend) and not store.state_path.exists():
        raise UsageError(f"{store.location}: no state here (no state.json): is --state mistyped?",
                         hint="pass the state directory the failover or apply ran with: --state DIR "
                              "(or set HYBRIDCTL_STATE)")
    return store


@contextlib.contextmanager
def locked(store: StateStore, command: str, timeout_s: float, view: Terminal) -> Iterator[StateStore]:
    """The state lock, saying so when it waits for another run or recovers a dead one's lock."""
    def recovered(holder: LockHolder) -> None:
        view.note(f"recovered the state lock: its holder, {holder.describe()}, is no longer running"
                  + (f"; stopped {holder.leftovers_stopped} process(es) it left running" if holder.leftovers_stopped
                     else ""))

    def waiting(holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "another process"
        view.note(f"the state is locked by {who}; waiting up to {timeout_s:g}s")

    with store.locked(command=command, timeout_s=timeout_s, on_recovered=recovered, on_wait=waiting) as held:
        yield held


def ssh_options(store: StateStore, known_hosts: Path | None, ssh_key: Path | None) -> SshOptions:
    """Host keys are always checked: against --known-hosts, or the state's own known_hosts file."""
    if known_hosts is not None:
        if not known_hosts.is_file():
            raise UsageError(f"--known-hosts {known_hosts}: no such file")
        path = known_hosts.resolve()
    else:
        path = store.known_hosts_path
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
    if ssh_key is not None and not ssh_key.is_file():
        raise UsageError(f"--ssh-key {ssh_key}: no such file")
    return SshOptions(known_hosts=path, private_key=ssh_key.resolve() if ssh_key else None)


def confirm(auto_approve: bool, what: str, question: str, view: Terminal) -> None:
    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise RefusedError(f"{what} needs approval, and there is no terminal to ask on",
                           hint="review the steps above, then pass --auto-approve (e.g. in CI)")
    if not view.confirm(question):
        raise RefusedError(f"{what} canceled: not approved")


def prepare_cloud(store: StateStore, graph: StepGraph, skip_cloud: bool, view: Terminal) -> tuple[CloudDriver | None, dict[str, str]]:
    """The cloud driver, checked before anything runs; or the cloud steps to skip."""
    cloud_steps = [s for s in graph if s.kind in CLOUD_KINDS]
    if not cloud_steps:
        return None, {}
    if skip_cloud:
        view.note(f"skipping {len(cloud_steps)} cloud step(s) (--skip-cloud): "
                  + ", ".join(s.id for s in cloud_steps))
        return None, {s.id: "skipped: --skip-cloud" for s in cloud_steps}
    try:
        driver = cloud_driver(store.root)
        check_cloud_credentials(driver, cloud_steps)
    except PrerequisiteError as exc:
        raise PrerequisiteError(f"the plan has cloud steps, but {exc.message}",
                                hint="; ".join(h for h in (exc.hint, SKIP_CLOUD_HINT) if h)) from None
    return driver, {}


def assets_digest() -> str:
    """One digest of the playbooks and node templates: an edited playbook re-runs its steps on resume."""
    digest = hashlib.sha256()
    for root in (playbooks_dir(), templates_dir() / "node"):
        # bytecode that Ansible or the tests leave beside the plugins is not an edit
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def runners_for(store: StateStore, driver: CloudDriver | None, ssh: SshOptions) -> dict[str, StepRunner]:
    return default_runners(cloud=driver, playbooks=playbooks_dir(), ssh=ssh, work_dir=store.ansible_dir)


def statuses(store: StateStore, state: State, operation: str, graph: StepGraph) -> dict[str, StepStatus]:
    pending = pending_for(state, operation)
    done = store.journal.done_keys(pending.run_ids) if pending else {}
    return {s.id: StepStatus.ALREADY_DONE if done.get(s.id) == s.key else StepStatus.PENDING for s in graph}


def execute_and_report(store: StateStore, graph: StepGraph, runners: dict[str, StepRunner], view: Terminal, *,
                       operation: str, target: str, skip: dict[str, str], parallelism: int,
                       on_success: Callable[[State, RunReport], State] | None, detail: Mapping[str, object] | None = None,
                       observer: PlainProgress | RichProgress | None = None, subject: str | None = None,
                       when_interrupted: str | None = None, retry: str = "run it again") -> int:
    """Run the steps through the executor, render the report, and say what to do next; the exit code."""
    observer = observer or progress_for(view.out)
    try:
        report = run_operation(store, graph, runners, operation=operation, target=target, detail=detail, skip=skip,
                               parallelism=parallelism, observer=observer, on_success=on_success)
    finally:
        observer.close()
    render_run_report(view.out, report)
    subject = subject or operation
    if report.status == "interrupted":
        view.say(f"{subject} interrupted: {when_interrupted or f'run `hybridctl {operation}` again to resume'}")
        return INTERRUPTED
    declined = [r.step.id for r in report.steps if r.status is StepStatus.FAILED and r.summary == "declined"]
    if declined:  # the operator said no: nothing to fix
        view.say(f"{subject} stopped: {', '.join(declined)} declined; {retry} asks again")
        return 1
    if not report.succeeded:
        view.say(f"{subject} failed: fix the cause, then {retry}; finished steps are not repeated")
        return 1
    return 0


def deployed_steps(state: State) -> dict[str, DeployedStep]:
    return {sid: DeployedStep(sid, d.kind, d.site, d.record) for sid, d in state.deployed.items()}


def load_bundles(directory: Path, public_key: Path | None, workloads: set[str], view: Terminal) -> dict[str, BundleRef]:
    """Verify every bundle the plan can use before anything runs: a bad bundle stops the apply here."""
    from hybridctl.drivers.bundle import verify_bundle

    if public_key is None:
        raise UsageError("--bundles needs --bundle-public-key FILE: bundles are verified before they are synced")
    if not directory.is_dir():
        raise UsageError(f"--bundles {directory}: no such directory")
    refs: dict[str, BundleRef] = {}
    for workload in sorted(workloads):
        bundle = directory / workload
        if not bundle.is_dir():
            continue
        verification = verify_bundle(bundle, public_key)
        manifest = verification.manifest
        assert manifest is not None and verification.manifest_sha256 is not None
        refs[workload] = BundleRef(workload, str(bundle.resolve()), manifest.model, manifest.version,
                                   verification.manifest_sha256)
        view.note(f"bundle {workload}: {manifest.model} {manifest.version} verified")
    return refs



def applied_of(store: StateStore, state: State) -> Plan | None:
    """The plan the state records as applied, read as the state's: an error names the state and the field."""
    from hybridctl.core.plan.serialize import plan_from_dict
    from hybridctl.drivers.state import DirectoryBackend

    if state.applied_plan is None:
        return None
    where = str(store.state_path) if isinstance(store.backend, DirectoryBackend) else store.location
    return plan_from_dict(dict(state.applied_plan), f"{where}: applied_plan")


ACTIVE_FAILOVERS = "runbooks/active.json"
RUNBOOK_ID = re.compile(r"rb-[0-9a-f]{16}")
_CONTENT_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def active_failovers(store: StateStore) -> list[str]:
    """The failovers in effect, oldest first (apply refuses to undo them silently; a rollback ends the last)."""
    chain: list[str] = _active(store)["failovers"]
    return chain


def failover_base(store: StateStore) -> str | None:
    """The content digest of the plan that ran before the first failover in effect (what a rollback returns
    to), as the state recorded it when that failover finished; None when nothing is recorded (a failover
    executed by an older hybridctl)."""
    digest: str | None = _active(store).get("before_plan")
    return digest


def _active(store: StateStore) -> dict[str, Any]:
    """runbooks/active.json, checked: {"failovers": [runbook ids], "before_plan": content digest}."""
    from hybridctl.core.plan.jsonread import json_object
    from hybridctl.drivers.state import StateFileError

    text = store.read_document(ACTIVE_FAILOVERS)
    if text is None:
        return {"failovers": []}
    where = document_location(store, ACTIVE_FAILOVERS)
    hint = "it lists the failovers in effect and is written by hybridctl alone: restore it from a backup"
    raw = json_object(text, where, StateFileError, "list of the failovers in effect", hint)
    chain = raw.get("failovers", [])
    if not isinstance(chain, list) or not all(isinstance(x, str) and RUNBOOK_ID.fullmatch(x) for x in chain):
        raise StateFileError(f"{where}: failovers must be a list of runbook ids (rb- and 16 hex digits)", hint=hint)
    before = raw.get("before_plan")
    if before is not None and not (isinstance(before, str) and _CONTENT_DIGEST.fullmatch(before)):
        raise StateFileError(f"{where}: before_plan must be a content digest (sha256: and 64 hex digits)", hint=hint)
    return {"failovers": list(chain), **({"before_plan": before} if before else {})}


def document_location(store: StateStore, name: str) -> str:
    """Where a state document is, for messages: its path in a state directory, else the state and its name."""
    from hybridctl.drivers.state import DirectoryBackend

    return str(store.root / name) if isinstance(store.backend, DirectoryBackend) else f"{store.location}: {name}"


def set_active_failovers(store: StateStore, chain: list[str], before_plan: str | None = None) -> None:
    """`before_plan`: the content digest of the plan that ran before the first of `chain` (kept as the
    chain grows: pass None to keep what is recorded)."""
    if chain:
        before_plan = before_plan or failover_base(store)
        document: dict[str, Any] = {"failovers": chain, **({"before_plan": before_plan} if before_plan else {})}
        store.write_document(ACTIVE_FAILOVERS, json.dumps(document, indent=2) + "\n")
    else:
        store.remove_document(ACTIVE_FAILOVERS)
