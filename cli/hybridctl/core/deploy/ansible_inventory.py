"""The Ansible inventory of a plan: on-prem and edge hosts with their variables, grouped by
site, site kind, pool and tier. Pure: templates/ansible/inventory.yml.j2 renders it.

Group names are Ansible identifiers (`site_dc_fra`, `kind_edge`, `pool_h100_reserved`,
`tier_fixed`): inventory names are DNS labels, so mapping '-' to '_' cannot make two collide.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hybridctl.core.inventory.models import CapacityType, Inventory, Policies, Pool, SiteKind
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.plan.tiers import TIER_ORDER, Tier

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
        hostvars = raw.get("hostvars", {})
        groups = raw.get("groups", {})
        if not isinstance(hostvars, Mapping) or not isinstance(groups, Mapping):
            raise ValueError("an Ansible inventory needs `hostvars` and `groups` mappings")
        return AnsibleInventory(
            {str(h): dict(v) if isinstance(v, Mapping) else {} for h, v in hostvars.items()},
            {str(g): tuple(str(h) for h in m) if isinstance(m, list | tuple) else () for g, m in groups.items()},
        )


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
