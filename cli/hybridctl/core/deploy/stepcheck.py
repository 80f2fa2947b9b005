"""What a step read back from a file may carry: a runbook's steps (runbooks/rb-….json) and the steps a state
records as deployed come from files that anyone who can write the state directory can edit, and a step's
params reach Ansible (which playbook, against which hosts, with which variables), ssh, and Pulumi (which
project directory runs). Each is held to what hybridctl itself makes for the step's kind, before anything
runs: a plan or an inventory never chooses a playbook or a Pulumi project, and a host reaches a step only
through the inventory's checks.

Pure; ValueError names the field (`params.playbook: …`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.core.deploy.gke_aks import PROJECT_AZURE_POOLS, PROJECT_GCP_POOLS
from hybridctl.core.deploy.stackvalues import PROJECT_GPU_POOLS, PROJECT_QUEUES
from hybridctl.core.deploy.steps import ANSIBLE_KINDS, PLAYBOOKS, StepKind

# a cloud site's GPU pools are an EKS, GKE or AKS stack (revision 4: deploy/gke_aks.py)
_POOLS_PROJECTS = frozenset({PROJECT_GPU_POOLS, PROJECT_GCP_POOLS, PROJECT_AZURE_POOLS})
_PROJECTS = MappingProxyType({
    StepKind.CLOUD_POOLS: _POOLS_PROJECTS, StepKind.DESTROY_CLOUD_POOLS: _POOLS_PROJECTS,
    StepKind.CLUSTER_QUEUES: frozenset({PROJECT_QUEUES}), StepKind.DESTROY_CLUSTER_QUEUES: frozenset({PROJECT_QUEUES})})
_ANSIBLE_KEYS = frozenset({"playbook", "playbook_digest", "inventory", "extravars"})
_CLOUD_KEYS = frozenset({"project", "stack_name", "config", "site", "cluster", "sites"})
# <inventory name>-<site or cluster>: the inventory's names; a directory under the state's pulumi/projects/
_STACK_NAME_RE = re.compile(r"[a-z0-9-]{1,127}")
_MAX_PATH = 4096


def _controller_path(value: object) -> str | None:
    """None for an absolute path on the controller (what apply gives: a resolved --bundles or key path),
    else what is wrong with it."""
    if not isinstance(value, str) or not value.startswith("/") or len(value) > _MAX_PATH:
        return "is not an absolute path"
    if any(ord(c) < 32 or ord(c) == 127 for c in value) or ".." in value.split("/"):
        return "is not a plain absolute path (a control character, or a `..`)"
    return None


def _bundle_name(value: object) -> str | None:
    # the manifest's rule, imported here: bundle.py loads cryptography
    from hybridctl.core.deploy.bundle import BUNDLE_NAME_RE

    ok = isinstance(value, str) and BUNDLE_NAME_RE.fullmatch(value)
    return None if ok else "is not a model or version name (letters, digits and . _ + -)"


def _sha256(value: object) -> str | None:
    from hybridctl.core.deploy.bundle import SHA256_HEX_RE

    return None if isinstance(value, str) and SHA256_HEX_RE.fullmatch(value) else "is not a SHA-256 in hex"


def _true(value: object) -> str | None:
    return None if value is True else "is not true"


# the extra variables each Ansible kind is given (steps.apply_steps), and what each may hold
_EXTRAVARS: Mapping[str, Mapping[str, Callable[[object], str | None]]] = MappingProxyType({
    StepKind.PREFLIGHT: {}, StepKind.NODE_BASELINE: {},
    StepKind.MODEL_SYNC: {"hybridctl_bundle_dir": _controller_path, "hybridctl_model": _bundle_name,
                          "hybridctl_model_version": _bundle_name, "hybridctl_bundle_sha256": _sha256,
                          "hybridctl_bundle_public_key_file": _controller_path,
                          "hybridctl_common_verify_full": _true}})


def _unknown(params: Mapping[str, object], known: frozenset[str], kind: str) -> None:
    extra = sorted(str(k) for k in params if k not in known)
    if extra:
        raise ValueError(f"params.{extra[0]}: not a parameter of a {kind} step")


def check_step_params(kind: str, params: Mapping[str, object]) -> None:
    """Refuse params that hybridctl does not make for a step of this kind. Kinds that run nothing on their
    own params (a runbook's confirmations and manual steps, release-nodes) are not this module's."""
    if kind in ANSIBLE_KINDS:
        _check_ansible(StepKind(kind), params)
    elif kind in _PROJECTS:
        _check_cloud(StepKind(kind), params)


def _check_ansible(kind: StepKind, params: Mapping[str, object]) -> None:
    _unknown(params, _ANSIBLE_KEYS, kind)
    playbook, shipped = params.get("playbook"), PLAYBOOKS[kind]
    if playbook != shipped:
        # a name, never a path: what runs is always the playbook hybridctl ships for the kind
        raise ValueError(f"params.playbook: {playbook!r} is not the playbook a {kind} step runs ({shipped})")
    if not isinstance(params.get("playbook_digest", ""), str):
        raise ValueError("params.playbook_digest: not text")
    inventory = params.get("inventory")
    if not isinstance(inventory, Mapping):
        raise ValueError("params.inventory: not an Ansible inventory (a mapping of hostvars and groups)")
    try:
        AnsibleInventory.from_params(inventory)
    except ValueError as exc:
        raise ValueError(f"params.inventory.{exc}") from None
    extravars = params.get("extravars", {})
    if not isinstance(extravars, Mapping):
        raise ValueError("params.extravars: not a mapping of variables")
    allowed = _EXTRAVARS[kind]
    for name, value in extravars.items():
        check = allowed.get(name)
        if check is None:
            raise ValueError(f"params.extravars.{name}: not a variable hybridctl gives a {kind} step")
        problem = check(value)
        if problem is not None:
            raise ValueError(f"params.extravars.{name}: {problem} (got {value!r:.200})")


def _check_cloud(kind: StepKind, params: Mapping[str, object]) -> None:
    _unknown(params, _CLOUD_KEYS, kind)
    project, shipped = params.get("project"), _PROJECTS[kind]
    if project not in shipped:
        # a directory under stacks/ whose program Pulumi runs: only the projects hybridctl ships for the kind
        raise ValueError(f"params.project: {project!r} is not the Pulumi project of a {kind} step "
                         f"({', '.join(sorted(shipped))})")
    stack_name = params.get("stack_name")
    if not isinstance(stack_name, str) or not _STACK_NAME_RE.fullmatch(stack_name):
        raise ValueError(f"params.stack_name: {stack_name!r:.200} is not a stack name hybridctl makes "
                         "(<inventory>-<site or cluster>)")
    if not isinstance(params.get("config", {}), Mapping):
        raise ValueError("params.config: not a mapping of stack settings")
