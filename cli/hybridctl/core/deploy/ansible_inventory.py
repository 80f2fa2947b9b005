"""The Ansible inventory of a plan: on-prem and edge hosts with their variables, grouped by
site, site kind, pool and tier. Pure: templates/ansible/inventory.yml.j2 renders it.

Group names are Ansible identifiers (`site_dc_fra`, `kind_edge`, `pool_h100_reserved`,
`tier_fixed`): inventory names are DNS labels, so mapping '-' to '_' cannot make two collide.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hybridctl.core.inventory.models import (
    CapacityType,
    HostAddress,
    HostName,
    Inventory,
    Name,
    Policies,
    Pool,
    PosixUser,
    SiteKind,
    Token,
)
from hybridctl.core.placement.tiers import TIER_ORDER, Tier
from hybridctl.core.plan.model import Placement, Plan

ALL_GROUP = "hybridctl"
HostVars = Mapping[str, object]


def group_name(prefix: str, name: str) -> str:
    return f"{prefix}_{name.replace('-', '_').replace('.', '_')}"


def pool_tiers(pool: Pool, policies: Policies) -> tuple[str, ...]:
    """The tiers that may use a pool, by the spec's capacity-type table (never empty)."""
    if pool.capacity_type is CapacityType.RESERVED:
        tiers: tuple[Tier, ...] = TIER_ORDER
    elif pool.capacity_type is CapacityType.SPOT:
        tiers = (Tier.OPPORTUNISTIC,)
    elif policies.allow_on_demand_for_opportunistic:
        tiers = TIER_ORDER
    else:
        tiers = (Tier.FIXED, Tier.BURST)
    return tuple(t.value for t in tiers)


@dataclass(frozen=True)
class AnsibleInventory:
    """host -> its variables, and group -> its hosts (sorted)."""

    hostvars: Mapping[str, HostVars]
    groups: Mapping[str, tuple[str, ...]]

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted(self.hostvars))

    def restrict(self, hosts: Iterable[str]) -> AnsibleInventory:
        """The same inventory, keeping only these hosts (and the groups that still have one)."""
        kept = set(hosts) & set(self.hostvars)
        groups = {g: tuple(h for h in members if h in kept) for g, members in self.groups.items()}
        return AnsibleInventory({h: self.hostvars[h] for h in sorted(kept)},
                                {g: m for g, m in sorted(groups.items()) if m})

    def group(self, name: str) -> tuple[str, ...]:
        return self.groups.get(name, ())

    def to_params(self) -> dict[str, object]:
        """A JSON-ready form, to carry inside a step (its digest then covers every variable)."""
        return {"hostvars": {h: dict(v) for h, v in sorted(self.hostvars.items())},
                "groups": {g: list(m) for g, m in sorted(self.groups.items())}}

    @staticmethod
    def from_params(raw: Mapping[str, object]) -> AnsibleInventory:
        """The inventory a step carries (to_params), read back from a runbook or a state: files anyone who can
        write the state can edit. Everything in it reaches Ansible and ssh, so it is checked as the inventory
        checks the hosts it came from (_checked_params); ValueError names what is wrong."""
        hostvars, groups = _checked_params(raw)
        return AnsibleInventory({h: dict(v) for h, v in hostvars.items()}, {g: tuple(m) for g, m in groups.items()})


def _one_of(*allowed: str) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"is not one of {', '.join(allowed)}")
        return value
    return AfterValidator(check)


class _HostVars(BaseModel):
    """The variables build_ansible_inventory gives a host, each held to the inventory's rule for the field it
    comes from (models.py: Host, Site, Pool, Workload), and no other: a variable such as ansible_connection or
    ansible_ssh_common_args would change how, or where, Ansible runs its tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    ansible_host: HostAddress | None = None
    ansible_port: Annotated[int, Field(ge=1, le=65535)] | None = None
    ansible_user: PosixUser | None = None
    hybridctl_site: Name | None = None
    hybridctl_site_kind: Annotated[str, _one_of(*(k.value for k in SiteKind if k is not SiteKind.CLOUD))] | None = None
    hybridctl_pool: Name | None = None
    hybridctl_gpu: Token | None = None
    hybridctl_tiers: list[Annotated[str, _one_of(*(t.value for t in Tier))]] | None = None
    hybridctl_expected_gpus: Annotated[int, Field(ge=0)] | None = None
    hybridctl_failure_domain: Token | None = None
    hybridctl_jurisdiction: Token | None = None
    hybridctl_workloads: list[Name] | None = None
    preflight_model_cache_required_gb: Annotated[float, Field(ge=0)] | None = None
    hybridctl_model_cache_required_gb: Annotated[float, Field(ge=0)] | None = None  # its name in earlier states


# the groups build_ansible_inventory makes: ALL_GROUP, and group_name's of DNS labels
_GROUP_RE = re.compile(rf"{ALL_GROUP}|(?:site|kind|pool|tier)_[a-z0-9_]{{1,63}}")


def _host_name() -> TypeAdapter[str]:
    # made where it is needed (a runbook or state without hosts never needs it), and not kept: the core keeps
    # no state across calls (tests/core/test_no_module_state.py)
    return TypeAdapter(HostName)


def _problem(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{where}: not a variable hybridctl gives a host"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message[:1].lower()}{message[1:]} (got {error.get('input')!r})"


def _checked_params(raw: Mapping[str, object]) -> tuple[dict[str, Mapping[str, object]], dict[str, list[str]]]:
    """An inventory in its to_params form, refused (ValueError, naming the host and the variable) unless
    build_ansible_inventory could have made it from a valid inventory."""
    unknown = sorted(str(k) for k in raw if k not in ("hostvars", "groups"))
    if unknown:
        raise ValueError(f"{unknown[0]}: not a part of an Ansible inventory (it has hostvars and groups)")
    raw_hosts, raw_groups = raw.get("hostvars"), raw.get("groups")
    if not isinstance(raw_hosts, Mapping) or not isinstance(raw_groups, Mapping):
        raise ValueError("an Ansible inventory needs `hostvars` and `groups` mappings")
    hostvars: dict[str, Mapping[str, object]] = {}
    for host, variables in raw_hosts.items():
        try:
            name = _host_name().validate_python(host)
        except ValidationError:
            raise ValueError(f"hostvars: {host!r} is not a host name") from None
        if not isinstance(variables, Mapping):
            raise ValueError(f"hostvars[{host!r}]: not a mapping of variables")
        try:
            _HostVars.model_validate(dict(variables))
        except ValidationError as exc:
            raise ValueError(f"hostvars[{host!r}]{_problem(exc)}") from None
        hostvars[name] = variables
    groups: dict[str, list[str]] = {}
    for group, members in raw_groups.items():
        if not isinstance(group, str) or not _GROUP_RE.fullmatch(group):
            raise ValueError(f"groups: {group!r} is not a group hybridctl makes")
        if not isinstance(members, list | tuple):
            raise ValueError(f"groups[{group!r}]: not a list of hosts")
        groups[group] = []
        for member in members:
            if not isinstance(member, str) or member not in hostvars:
                raise ValueError(f"groups[{group!r}]: {member!r} is not one of the inventory's hosts")
            groups[group].append(member)
    return hostvars, groups


def hosted_placements(inventory: Inventory, placements: Iterable[Placement]) -> list[Placement]:
    """The placements that on-prem and edge hosts run (replicas on a pool with hosts): all that the
    Ansible side reads of a plan. Pool names are unique in an inventory, so a pool names its site."""
    pools = {h.pool for s in inventory.sites if s.kind is not SiteKind.CLOUD for h in s.hosts}
    return [p for p in placements if p.replicas > 0 and p.pool in pools] if pools else []


def build_ansible_inventory(inventory: Inventory, plan: Plan,
                            hosted: Iterable[Placement] | None = None) -> AnsibleInventory:
    """Every host of every onprem/edge site, with the variables the playbooks read (playbooks/README.md).

    `hosted`: the plan's hosted_placements, when already known."""
    placed: dict[str, set[str]] = defaultdict(set)  # pool -> workloads placed there
    placed_tiers: dict[str, set[str]] = defaultdict(set)
    for placement in hosted_placements(inventory, plan.placements) if hosted is None else hosted:
        placed[placement.pool].add(placement.workload)
        placed_tiers[placement.pool].add(placement.tier)
    # a fleet's workloads are tens of thousands, the hosts' a few
    model_gb = {w.name: w.model_gb or 0.0 for w in inventory.workloads} if placed else {}
    hostvars: dict[str, HostVars] = {}
    groups: dict[str, list[str]] = defaultdict(list)
    for site in inventory.sites:
        if site.kind is SiteKind.CLOUD:
            continue
        pools = {p.name: p for p in site.pools}
        hosts_of_pool: dict[str, list[str]] = defaultdict(list)
        for host in site.hosts:
            hosts_of_pool[host.pool].append(host.name)
        for host in site.hosts:
            pool = pools[host.pool]
            tiers = pool_tiers(pool, inventory.policies)
            hostvars[host.name] = {
                "ansible_host": host.address,
                "ansible_port": host.port,
                "ansible_user": host.user,
                "hybridctl_site": site.name,
                "hybridctl_site_kind": site.kind.value,
                "hybridctl_pool": pool.name,
                "hybridctl_gpu": pool.gpu,
                "hybridctl_tiers": list(tiers),
                "hybridctl_expected_gpus": _share(pool.gpus or 0, hosts_of_pool[pool.name], host.name),
                "hybridctl_failure_domain": site.domain,
                "hybridctl_jurisdiction": site.jurisdiction,
                "hybridctl_workloads": sorted(placed.get(pool.name, ())),
                # Every model placed on the pool fits in each host's model cache.
                "preflight_model_cache_required_gb": round(sum(model_gb.get(w, 0.0) for w in placed.get(pool.name, ())), 3),
            }
            groups[ALL_GROUP].append(host.name)
            groups[group_name("site", site.name)].append(host.name)
            groups[group_name("kind", site.kind.value)].append(host.name)
            groups[group_name("pool", pool.name)].append(host.name)
            for tier in sorted(placed_tiers.get(pool.name, ())):
                groups[group_name("tier", tier)].append(host.name)
    return AnsibleInventory(dict(sorted(hostvars.items())),
                            {g: tuple(sorted(m)) for g, m in sorted(groups.items())})


def _share(gpus: int, hosts: list[str], host: str) -> int:
    """A pool's GPUs split evenly over its hosts, the remainder going to the first hosts in order."""
    if not hosts:
        return 0
    base, extra = divmod(gpus, len(hosts))
    return base + (1 if hosts.index(host) < extra else 0)


def ansible_value(value: object) -> str:
    """A value as YAML flow text for Ansible, with every string tagged `!unsafe`.

    Ansible evaluates Jinja in inventory and extra variables, so a string from an inventory,
    a plan or a bundle manifest that reached it untagged could run code on the controller
    (`{{ lookup('pipe', ...) }}`). Validation rejects such values first; this tagging holds
    even for a field that a future change forgets to validate. JSON's string escapes are
    valid in YAML's double-quoted scalars, so json.dumps does the quoting.
    """
    if isinstance(value, str):
        return f"!unsafe {json.dumps(value)}"
    if value is None or isinstance(value, bool | int):
        return json.dumps(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} cannot be passed to Ansible")
        return json.dumps(value)
    if isinstance(value, Mapping):
        # Ansible templates values, not keys; keys are tool-chosen names or validated DNS labels.
        return "{" + ", ".join(f"{json.dumps(str(k))}: {ansible_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(ansible_value(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} cannot be passed to Ansible")


def template_context(ansible_inventory: AnsibleInventory) -> dict[str, object]:
    """What templates/ansible/inventory.yml.j2 reads: hosts with vars, and the groups."""
    return {
        "hosts": [{"name": h, "vars": sorted(v.items())} for h, v in sorted(ansible_inventory.hostvars.items())],
        "groups": [{"name": g, "hosts": list(m)} for g, m in sorted(ansible_inventory.groups.items())],
    }
