"""Semantic checks beyond the schema: references, site kinds, the catalog, and feasibility."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.diagnostics import Diagnostics
from hybridctl.core.inventory.documents import Locator
from hybridctl.core.inventory.feasibility import check_feasibility
from hybridctl.core.inventory.models import (
    DEFAULT_REALTIME_HOURS,
    CapacityType,
    Inventory,
    Sensitivity,
    SiteKind,
    TierChoice,
    Workload,
    WorkloadType,
)
from hybridctl.core.inventory.providers import (
    PROVIDER_NAMES,
    article,
    nearest_names,
    reservation_form_error,
    same_gpu_names,
    zone_example,
)
from hybridctl.core.inventory.schedule import default_hours_per_month, first_overlap
from hybridctl.core.inventory.zones import region_code, zone_of, zone_region


def _suggest(name: str, known: Collection[str]) -> str | None:
    by_case = {k.lower(): k for k in known}
    if name.lower() in by_case:
        return f"did you mean '{by_case[name.lower()]}'?"
    # short names (GPU types, regions) differ by one character at a ratio of 0.5
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else None


def _unknown(kind: str, name: str, known: Collection[str]) -> str:
    return _suggest(name, known) or (f"defined {kind}s: {', '.join(sorted(known))}" if known
                                     else f"no {kind} is defined")


@dataclass(frozen=True)
class Unjudged:
    """What the schema could not read, when an inventory is checked without its broken parts
    (inventory/partial.py): a reference to a name written in a broken item, or into a list that is
    broken as a whole, is neither right nor wrong, so it is not reported."""

    names: frozenset[tuple[str, str]] = frozenset()  # (kind, name): ("site", "dc-1"), ("jurisdiction", "EU")
    kinds: frozenset[str] = frozenset()  # kinds none of which can be read: "site", "region", "jurisdiction"

    def known(self, kind: str, name: str) -> bool:
        return kind in self.kinds or (kind, name) in self.names

    def of(self, kind: str) -> set[str]:
        """The names of a kind written in broken items: defined, for the hints' "did you mean"."""
        return {name for k, name in self.names if k == kind}


def check_inventory(inventory: Inventory, locator: Locator, *, feasibility: bool = True,
                    unjudged: Unjudged = Unjudged()) -> Diagnostics:
    """Every semantic check, in order; the feasibility checks last (only on an inventory without an
    error so far), and not at all with feasibility=False (loader.check_feasible runs them later)."""
    diagnostics = Diagnostics()
    at = locator.location
    _check_unique_names(inventory, locator, diagnostics)
    _check_sites(inventory, locator, diagnostics, unjudged)
    site_names = {s.name for s in inventory.sites} | unjudged.of("site")
    site_teams = {s.name: s.teams for s in inventory.sites}
    regions = set(inventory.regions)
    dataset_names = {d.name for d in inventory.datasets} | unjudged.of("dataset")
    jurisdictions = {s.jurisdiction for s in inventory.sites} | unjudged.of("jurisdiction")
    for i, dataset in enumerate(inventory.datasets):
        if dataset.site not in site_names and not unjudged.known("site", dataset.site):
            diagnostics.error("unresolved-reference", f"dataset {dataset.name}: site '{dataset.site}' is not defined",
                              at(("datasets", i, "site")), _unknown("site", dataset.site, site_names))
        for j, zone in enumerate(dataset.residency or []):
            if zone not in jurisdictions and not unjudged.known("jurisdiction", zone):
                diagnostics.warning("unknown-jurisdiction", f"dataset {dataset.name}: no site is in jurisdiction "
                                    f"'{zone}'", at(("datasets", i, "residency", j)),
                                    _suggest(zone, jurisdictions) or "check the spelling against the sites' jurisdiction")
    catalog_gpus = catalog().gpus
    references_ok = not diagnostics.errors
    for i, workload in enumerate(inventory.workloads):
        base = ("workloads", i)
        for j, name in enumerate(workload.datasets):
            if name not in dataset_names and not unjudged.known("dataset", name):
                references_ok = False
                diagnostics.error("unresolved-reference", f"workload {workload.name}: dataset '{name}' is not defined",
                                  at((*base, "datasets", j)), _unknown("dataset", name, dataset_names))
        for j, name in enumerate(workload.sites or []):
            if name not in site_names and not unjudged.known("site", name):
                references_ok = False
                diagnostics.error("unresolved-reference", f"workload {workload.name}: site '{name}' in `sites` is "
                                  "not defined", at((*base, "sites", j)), _unknown("site", name, site_names))
            elif (teams := site_teams.get(name)) is not None and workload.team not in teams:
                # revision 3: a site with `teams` runs only their workloads
                diagnostics.error("site-team", f"workload {workload.name}: site '{name}' in `sites` runs only "
                                  f"the workloads of teams {', '.join(teams)}, and this workload's team is "
                                  f"{repr(workload.team) if workload.team else 'not set'}", at((*base, "sites", j)),
                                  f"set `team` to one of {', '.join(teams)}, or drop '{name}' from `sites`")
        if workload.latency is not None and workload.latency.region not in regions \
                and not unjudged.known("region", workload.latency.region):
            references_ok = False
            diagnostics.error("unresolved-reference", f"workload {workload.name}: latency region "
                              f"'{workload.latency.region}' is not in the top-level `regions`",
                              at((*base, "latency", "region")), _unknown("region", workload.latency.region, regions))
        requests: list[tuple[tuple[str, ...], list[str]]] = [(("gpu", "types"), workload.gpu.types)]
        if workload.fallback is not None and workload.fallback.gpu is not None:
            requests.append((("fallback", "gpu", "types"), workload.fallback.gpu.types))
        for subpath, gpu_types in requests:
            for j, gpu in enumerate(gpu_types):
                if gpu not in catalog_gpus:
                    references_ok = False
                    diagnostics.error("unknown-gpu-type", f"workload {workload.name}: GPU type '{gpu}' is not in "
                                      "the catalog", at((*base, *subpath, j)), _unknown("GPU type", gpu, catalog_gpus))
        if workload.schedule is not None:
            _check_schedule(workload, base, locator, diagnostics)
        elif workload.hours_per_month is None and workload.type is not WorkloadType.REALTIME_INFERENCE:
            diagnostics.error("missing-field", f"workload {workload.name}: hours_per_month is required for "
                              f"{workload.type.value} (only realtime_inference defaults to 730)", at(base),
                              "add `hours_per_month:` with the hours it runs per month")
        if workload.preemptible and workload.checkpoint_minutes is None:
            diagnostics.error("preemptible-needs-checkpoint", f"workload {workload.name}: preemptible: true needs "
                              "checkpoint_minutes", at((*base, "preemptible")),
                              "add `checkpoint_minutes:` (how often it saves state), or set preemptible: false")
        if workload.type is WorkloadType.FEDERATED_TRAINING and not workload.datasets:
            diagnostics.error("federated-needs-datasets", f"workload {workload.name}: federated_training places a "
                              "trainer at each of its datasets' sites, and it lists no datasets", at(base),
                              "add `datasets:`")
        if workload.fallback is not None and workload.fallback.replicas is not None \
                and workload.fallback.replicas > workload.replicas:
            diagnostics.error("fallback-larger", f"workload {workload.name}: fallback.replicas "
                              f"({workload.fallback.replicas}) exceeds replicas ({workload.replicas})",
                              at((*base, "fallback", "replicas")), "a fallback is a degraded mode: use fewer replicas")
        if workload.tier is TierChoice.FIXED and workload.preemptible:
            diagnostics.warning("fixed-preemptible", f"workload {workload.name}: tier: fixed with preemptible: true "
                                "(fixed capacity is never taken back, so preemption buys nothing)",
                                at((*base, "preemptible")), "set preemptible: false, or let the tier be auto")
        if workload.type is WorkloadType.REALTIME_INFERENCE and workload.hours_per_month is not None \
                and workload.hours_per_month < DEFAULT_REALTIME_HOURS:
            diagnostics.warning("realtime-part-time", f"workload {workload.name}: realtime_inference with "
                                f"hours_per_month {workload.hours_per_month:g} (below 730): it is planned and "
                                "costed as if it ran only that long", at((*base, "hours_per_month")),
                                "remove hours_per_month (always on), or use batch_inference for part-time work")
    _check_dataset_storage(inventory, locator, diagnostics, site_names, unjudged)
    if feasibility and references_ok and not diagnostics.errors:
        check_feasibility(inventory, locator, diagnostics)
    return diagnostics


def _check_schedule(workload: Workload, base: tuple[str | int, ...], locator: Locator,
                    diagnostics: Diagnostics) -> None:
    """What needs the whole schedule: windows that overlap, hours beyond the windows."""
    assert workload.schedule is not None
    overlap = first_overlap(workload.schedule)
    if overlap is not None:
        i, j = overlap
        diagnostics.error("overlapping-windows", f"workload {workload.name}: schedule.windows[{j}] overlaps "
                          f"schedule.windows[{i}]", locator.location((*base, "schedule", "windows", j)),
                          "windows of one workload may not share an hour: shorten one, or join them into one window")
        return
    ceiling = default_hours_per_month(workload.schedule)
    if workload.hours_per_month is not None and workload.hours_per_month > ceiling + 1e-9:
        diagnostics.error("hours-beyond-windows", f"workload {workload.name}: hours_per_month "
                          f"{workload.hours_per_month:g} is more than its windows hold "
                          f"({workload.schedule.window_hours:g} h a week = {ceiling:.1f} h a month)",
                          locator.location((*base, "hours_per_month")),
                          f"lower hours_per_month to at most {ceiling:.1f}, remove it (the whole windows), "
                          "or widen the windows")


def _check_dataset_storage(inventory: Inventory, locator: Locator, diagnostics: Diagnostics,
                           site_names: set[str], unjudged: Unjudged) -> None:
    """Where data may be stored: the primary and every copy within residency; restricted data on
    premises only; copies name other sites, once each."""
    at = locator.location
    sites = {s.name: s for s in inventory.sites}
    for i, dataset in enumerate(inventory.datasets):
        seen = {dataset.site}
        for j, name in enumerate(dataset.copies):
            where = ("datasets", i, "copies", j)  # located only when reported: locating can parse again
            if name not in site_names:
                if unjudged.known("site", name):
                    continue
                diagnostics.error("unresolved-reference", f"dataset {dataset.name}: copy site '{name}' is not "
                                  "defined", at(where), _unknown("site", name, site_names))
                continue
            if name in seen:
                diagnostics.error("duplicate-copy", f"dataset {dataset.name}: site '{name}' holds the data "
                                  "already" + (" (it is the primary site)" if name == dataset.site else ""),
                                  at(where), "list each other site once in `copies`")
            seen.add(name)
        for path, name in [(("datasets", i, "site"), dataset.site),
                           *((("datasets", i, "copies", j), n) for j, n in enumerate(dataset.copies))]:
            site = sites.get(name)
            if site is None:
                continue
            if dataset.residency is not None and site.jurisdiction not in dataset.residency:
                diagnostics.error("storage-residency", f"dataset {dataset.name}: stored at {name} in "
                                  f"{site.jurisdiction}, outside its residency {', '.join(dataset.residency)}",
                                  at(path), "store it only at sites within its residency, or widen `residency`")
            if dataset.sensitivity is Sensitivity.RESTRICTED and site.kind is SiteKind.CLOUD:
                diagnostics.error("restricted-storage", f"dataset {dataset.name}: restricted data is stored only "
                                  f"at onprem or edge sites, and {name} is a cloud site", at(path),
                                  "keep restricted data on premises, or lower its sensitivity if that is right")


def _check_unique_names(inventory: Inventory, locator: Locator, diagnostics: Diagnostics) -> None:
    def unique(kind: str, entries: list[tuple[str, tuple[str | int, ...]]]) -> None:
        seen: dict[str, tuple[str | int, ...]] = {}
        for name, path in entries:
            if name in seen:
                first = locator.location(seen[name])
                diagnostics.error("duplicate-name", f"{kind} '{name}' is defined twice (first at {first})",
                                  locator.location(path), f"rename one of the two {kind}s", related=(first,))
            else:
                seen[name] = path
    unique("site", [(s.name, ("sites", i)) for i, s in enumerate(inventory.sites)])
    unique("pool", [(p.name, ("sites", i, "pools", j)) for i, s in enumerate(inventory.sites)
                    for j, p in enumerate(s.pools)])
    unique("host", [(h.name, ("sites", i, "hosts", j)) for i, s in enumerate(inventory.sites)
                    for j, h in enumerate(s.hosts)])
    unique("dataset", [(d.name, ("datasets", i)) for i, d in enumerate(inventory.datasets)])
    unique("workload", [(w.name, ("workloads", i)) for i, w in enumerate(inventory.workloads)])
    unique("region", [(r, ("regions", i)) for i, r in enumerate(inventory.regions)])


def _check_sites(inventory: Inventory, locator: Locator, diagnostics: Diagnostics, unjudged: Unjudged) -> None:
    at = locator.location
    gpus = catalog().gpus
    instances = catalog().instances
    regions = set(inventory.regions)
    for i, site in enumerate(inventory.sites):
        base = ("sites", i)
        cloud = site.kind is SiteKind.CLOUD
        for field in ("provider", "region", "cluster"):
            present = getattr(site, field) is not None
            if cloud and not present:
                diagnostics.error("missing-field", f"site {site.name}: a cloud site needs `{field}`", at(base),
                                  {"provider": "add `provider:` aws, gcp or azure",
                                   "region": "add e.g. `region: us-east-1` (gcp: us-central1, azure: eastus)",
                                   "cluster": "add `cluster:` naming the Kubernetes cluster its pools join"}[field])
            # An on-prem site may name its Kubernetes cluster (revision 3): it gets queues too.
            if not cloud and present and not (field == "cluster" and site.kind is SiteKind.ONPREM):
                where = "cloud and onprem sites" if field == "cluster" else "cloud sites"
                diagnostics.error("cloud-only-field", f"site {site.name}: `{field}` applies to {where} only",
                                  at((*base, field), key=True), f"remove `{field}`, or set `kind: cloud`")
        if cloud and site.hosts:
            diagnostics.error("onprem-only-field", f"site {site.name}: `hosts` applies to onprem and edge sites only",
                              at((*base, "hosts"), key=True), "remove `hosts`: cloud nodes come from node groups")
        for region in site.latency_ms:
            if region not in regions and not unjudged.known("region", region):
                diagnostics.error("unresolved-reference", f"site {site.name}: latency_ms names region '{region}', "
                                  "which is not in the top-level `regions`", at((*base, "latency_ms", region), key=True),
                                  _unknown("region", region, regions))
        if cloud and site.max_sensitivity is Sensitivity.RESTRICTED:
            diagnostics.error("cloud-sensitivity", f"site {site.name}: a cloud site may process at most "
                              "confidential data", at((*base, "max_sensitivity")),
                              "set `max_sensitivity: confidential` or lower; restricted data stays on premises")
        pool_names = {p.name for p in site.pools} | unjudged.of("pool")
        for j, pool in enumerate(site.pools):
            pbase = (*base, "pools", j)
            if pool.reservation_id is not None and not (cloud and pool.capacity_type is CapacityType.RESERVED):
                diagnostics.error("reservation-not-reserved", f"pool {pool.name}: `reservation_id` applies to "
                                  "reserved cloud pools only", at((*pbase, "reservation_id"), key=True),
                                  "remove `reservation_id`, or set `capacity_type: reserved` on a cloud pool")
            elif pool.reservation_id is not None and (reservation := reservation_form_error(site.provider,
                                                                                        pool.reservation_id)):
                diagnostics.error("reservation-id-form", f"pool {pool.name}: reservation_id "
                                  f"'{pool.reservation_id}' is not a {PROVIDER_NAMES.get(site.provider or '', '')} "
                                  "reservation", at((*pbase, "reservation_id")), f"write {reservation}")
            elif (pool.reservation_id is not None and site.provider == "gcp" and site.region is not None
                  and zone_region("gcp", pool.failure_domain) != site.region):
                # A Compute Engine reservation is zonal: the node pool must run in its zone.
                diagnostics.error("reservation-zone", f"pool {pool.name}: reservation {pool.reservation_id} lives in "
                                  "one zone, and the pool's `failure_domain` names none of "
                                  f"{site.region}'s", at((*pbase, "failure_domain") if pool.failure_domain else pbase),
                                  f"set `failure_domain:` to the reservation's zone, e.g. {site.region}-a, as "
                                  "`gcloud compute reservations describe` shows it")
            elif (pool.reservation_id is not None and site.provider in (None, "aws")
                  and region_code(site.region or "") is not None
                  and zone_of(site.region, pool.failure_domain) is None):
                # A capacity reservation lives in one availability zone: its node group must launch there.
                # (A region not named as AWS names them has no zones to check against.)
                diagnostics.error("reservation-zone", f"pool {pool.name}: reservation {pool.reservation_id} lives in "
                                  "one availability zone, and the pool's `failure_domain` names none of "
                                  f"{site.region}'s", at((*pbase, "failure_domain") if pool.failure_domain else pbase),
                                  "set `failure_domain:` to the reservation's zone, by zone ID (e.g. use1-az4) or "
                                  "name, as `aws ec2 describe-capacity-reservations` shows it")
            if pool.reservation_type is not None and pool.reservation_id is None:
                # It says what the reservation is (a Capacity Block is launched into differently): without one,
                # it is a mistake, never a default to ignore.
                diagnostics.error("reservation-type-without-id", f"pool {pool.name}: `reservation_type` says what "
                                  "the pool's `reservation_id` names, and it has none",
                                  at((*pbase, "reservation_type"), key=True),
                                  "add `reservation_id:` (the reservation's cr-… id) on a reserved cloud pool, "
                                  "or remove `reservation_type`")
            if cloud and pool.gpus_per_node is not None:
                diagnostics.error("onprem-only-field", f"pool {pool.name}: a cloud pool's GPUs per node come from "
                                  "its instance type", at((*pbase, "gpus_per_node"), key=True),
                                  "remove `gpus_per_node`")
            elif pool.gpus_per_node is not None and pool.gpus is not None and pool.gpus_per_node > pool.gpus:
                diagnostics.error("node-larger-than-pool", f"pool {pool.name}: gpus_per_node {pool.gpus_per_node} "
                                  f"exceeds the pool's {pool.gpus} GPUs", at((*pbase, "gpus_per_node")),
                                  "set gpus_per_node to the GPUs in one machine")
            if pool.gpu not in gpus:
                diagnostics.error("unknown-gpu-type", f"pool {pool.name}: GPU type '{pool.gpu}' is not in the catalog",
                                  at((*pbase, "gpu")), _unknown("GPU type", pool.gpu, gpus))
            if cloud:
                for field in ("instance_type", "max_gpus"):
                    if getattr(pool, field) is None:
                        diagnostics.error("missing-field", f"pool {pool.name}: a cloud pool needs `{field}`", at(pbase),
                                          f"add `{field}:`")
                if pool.gpus is not None:
                    diagnostics.error("onprem-only-field", f"pool {pool.name}: a cloud pool's capacity is `max_gpus`, "
                                      "not `gpus`", at((*pbase, "gpus"), key=True), "rename `gpus` to `max_gpus`")
                provider = site.provider or "aws"
                own = {n: i for n, i in instances.items() if i.provider == provider}
                instance = instances.get(pool.instance_type or "")
                if pool.instance_type is not None and instance is None:
                    diagnostics.error("unknown-instance-type", f"pool {pool.name}: instance type "
                                      f"'{pool.instance_type}' is not in the catalog", at((*pbase, "instance_type")),
                                      nearest_names(pool.instance_type, own, provider))
                elif instance is not None and instance.provider != provider:
                    diagnostics.error("instance-provider-mismatch", f"pool {pool.name}: {instance.name} is "
                                      f"{article(instance.provider)} instance type, and site {site.name} is on "
                                      f"{PROVIDER_NAMES[provider]} (provider: {provider})",
                                      at((*pbase, "instance_type")), same_gpu_names(pool.gpu, own, provider))
                elif instance is not None and instance.gpu != pool.gpu:
                    diagnostics.error("instance-gpu-mismatch", f"pool {pool.name}: {instance.name} carries "
                                      f"{instance.gpu} GPUs, but the pool says gpu: {pool.gpu}", at((*pbase, "gpu")),
                                      f"set `gpu: {instance.gpu}`, or choose an instance type with {pool.gpu} GPUs")
                elif instance is not None and pool.max_gpus is not None and pool.max_gpus % instance.gpus_per_node:
                    diagnostics.warning("partial-node-quota", f"pool {pool.name}: max_gpus {pool.max_gpus} is not a "
                                        f"multiple of {instance.gpus_per_node} GPUs per {instance.name} node",
                                        at((*pbase, "max_gpus")), "the node group can only use whole nodes")
                if instance is not None and instance.provider == provider and pool.usd_per_gpu_hour is None \
                        and site.region is not None and site.region != (listed := instance.price_in(site.region)).region:
                    # list prices differ by region: the plan costs this pool at the nearest listed region's
                    diagnostics.warning("price-from-another-region", f"pool {pool.name}: priced from the catalog's "
                                        f"{listed.region} list price of {listed.read_on.isoformat()} "
                                        f"for {instance.name}, and site {site.name} is in {site.region}",
                                        at((*pbase, "instance_type")),
                                        f"set usd_per_gpu_hour to what a GPU-hour costs in {site.region}")
                zoned = zone_region(provider, pool.failure_domain)
                if zoned is not None and site.region is not None and zoned != site.region:
                    diagnostics.error("zone-not-in-region", f"pool {pool.name}: failure_domain {pool.failure_domain} "
                                      f"is a zone of {zoned}, and site {site.name} is in {site.region}",
                                      at((*pbase, "failure_domain")),
                                      f"name a zone of {site.region} (e.g. {zone_example(provider, site.region)}), "
                                      "or move the pool to a site in " + zoned)
            else:
                for field in ("instance_type", "max_gpus"):
                    if getattr(pool, field) is not None:
                        diagnostics.error("cloud-only-field", f"pool {pool.name}: `{field}` applies to cloud pools only",
                                          at((*pbase, field), key=True), "onprem and edge pools declare `gpus`")
                if pool.gpus is None:
                    diagnostics.error("missing-field", f"pool {pool.name}: an {site.kind.value} pool needs `gpus`",
                                      at(pbase), "add `gpus:` with the pool's capacity in GPUs")
                if pool.usd_per_gpu_hour is None:
                    diagnostics.error("missing-field", f"pool {pool.name}: an {site.kind.value} pool needs "
                                      "`usd_per_gpu_hour` (the amortized cost of owned hardware)", at(pbase),
                                      "add `usd_per_gpu_hour:`; only cloud pools default to a catalog price")
        for j, host in enumerate(site.hosts):
            if host.pool not in pool_names and not unjudged.known("pool", host.pool):
                diagnostics.error("unresolved-reference", f"host {host.name}: pool '{host.pool}' is not a pool of "
                                  f"site {site.name}", at((*base, "hosts", j, "pool")),
                                  _unknown("pool", host.pool, pool_names))

