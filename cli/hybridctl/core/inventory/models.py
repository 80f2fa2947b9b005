"""Pydantic models of inventory format v1, one field per field of the spec.

Every field carries a description: `hybridctl schema` publishes them as the JSON Schema
that editors' YAML language servers use, so they are user documentation.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool
from pydantic_core import PydanticCustomError

from hybridctl.core.inventory.schedule import Schedule, default_hours_per_month

SUPPORTED_VERSIONS = (1,)
HOURS_PER_MONTH_MAX = 744  # 31 days
# A quarter of an hour, the week's grain: fewer GPU-hours than the solver's tolerances tell from none (1e-9 h
# planned as nothing, and the checker then found its tier short)
HOURS_PER_MONTH_MIN = 0.25
DEFAULT_REALTIME_HOURS = 730

NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"

# Upper bounds of every number (docs/inventory-format.md lists them). They are far above any
# real fleet and keep every sum the planner forms finite and exact enough in float64: a replica
# count of 1e30 or a price of 1e308 is refused at its line instead of overflowing the solver.
MAX_REPLICAS = 100_000
MAX_GPUS_PER_REPLICA = 4_096
MAX_POOL_GPUS = 1_000_000
MAX_GPUS_PER_NODE = 64
MAX_USD_PER_GPU_HOUR = 10_000.0
MAX_EGRESS_USD_PER_GB = 100.0
MAX_SIZE_GB = 1e9  # an exabyte
MAX_PASSES_PER_MONTH = 10_000.0
MAX_USD_PER_MONTH = 1e12
MAX_LATENCY_MS = 100_000.0
MAX_MINUTES = 1_000_000.0  # about two years
MAX_UPLINK_MBPS = 1e7
MAX_MODEL_GB = 1e6
MAX_INTERRUPTIONS_PER_DAY = 1_000.0
MAX_SPREAD = 1_000
# policies.failover_max_price_ratio: at least 1 (a moved replica may always pay what it paid), at most this (a
# bound on what is read: a thousand times the price is no limit in practice)
MAX_FAILOVER_PRICE_RATIO = 1_000.0

# A reserved pool's reservation, per provider (inventory/checks.py tells which provider's form a site needs):
# an EC2 capacity reservation id, a Compute Engine reservation name, or an Azure capacity reservation group's
# resource ID. None holds a character a shell, a path or a template could read otherwise.
AWS_RESERVATION_ID = r"cr-[0-9a-f]{8,17}"
GCP_RESERVATION_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
AZURE_RESERVATION_GROUP = (r"/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[A-Za-z0-9._()-]{1,90}"
                           r"/providers/Microsoft\.Compute/capacityReservationGroups/[A-Za-z0-9._-]{1,80}")
RESERVATION_ID_PATTERN = f"^(?:{AWS_RESERVATION_ID}|{GCP_RESERVATION_NAME}|{AZURE_RESERVATION_GROUP})$"

# Names become Kubernetes namespaces, stack names and Ansible groups: DNS labels fit all three.
Name = Annotated[str, Field(strict=True, pattern=NAME_PATTERN)]
MAX_SITE_TEAMS = 1000  # a site's `teams`: a bound on what is read, far above any real list
def _token(value: str) -> str:
    if not _TOKEN_RE.fullmatch(value):
        raise PydanticCustomError("token", "is not a token")
    return value


# Tokens (jurisdictions, failure domains, regions, GPU and instance types) reach Ansible as host
# variables and Kubernetes as labels: one word of letters, digits, '.', '_' and '-'.
_TOKEN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62})\Z")
Token = Annotated[str, Field(strict=True), AfterValidator(_token)]
PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeFloat = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]


Replicas = Annotated[int, Field(strict=True, gt=0, le=MAX_REPLICAS)]
PoolGpus = Annotated[int, Field(strict=True, gt=0, le=MAX_POOL_GPUS)]
UsdPerGpuHour = Annotated[float, Field(strict=True, ge=0, le=MAX_USD_PER_GPU_HOUR, allow_inf_nan=False)]
UsdPerMonth = Annotated[float, Field(strict=True, ge=0, le=MAX_USD_PER_MONTH, allow_inf_nan=False)]
Minutes = Annotated[float, Field(strict=True, gt=0, le=MAX_MINUTES, allow_inf_nan=False)]
Spread = Annotated[int, Field(strict=True, gt=0, le=MAX_SPREAD)]


class SiteKind(StrEnum):
    ONPREM = "onprem"
    CLOUD = "cloud"
    EDGE = "edge"


class CapacityType(StrEnum):
    RESERVED = "reserved"
    ON_DEMAND = "on_demand"
    SPOT = "spot"


class ReservationType(StrEnum):
    """What a reserved cloud pool's `reservation_id` names: EC2 launches into a Capacity Block only with
    the `capacity-block` market type, and EKS only as a CAPACITY_BLOCK node group."""

    CAPACITY_RESERVATION = "capacity_reservation"
    CAPACITY_BLOCK = "capacity_block"


class Sensitivity(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"


class WorkloadType(StrEnum):
    PRETRAINING = "pretraining"
    TRAINING = "training"
    FINE_TUNING = "fine_tuning"
    REALTIME_INFERENCE = "realtime_inference"
    BATCH_INFERENCE = "batch_inference"
    EMBEDDING = "embedding"
    EVALUATION = "evaluation"
    EXPERIMENT = "experiment"
    FEDERATED_TRAINING = "federated_training"


class CostModel(StrEnum):
    CASH = "cash"
    AMORTIZED = "amortized"


class BudgetAction(StrEnum):
    """What a plan over policies.monthly_budget_usd does (spec, "Budget")."""

    FAIL = "fail"
    SHED = "shed"


class TierChoice(StrEnum):
    AUTO = "auto"
    FIXED = "fixed"
    BURST = "burst"
    OPPORTUNISTIC = "opportunistic"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class Policies(_Model):
    """Inventory-wide policies; all optional."""

    monthly_budget_usd: UsdPerMonth | None = Field(
        None, description="The month's total under the cost model (committed pools included) may not exceed this: "
                          "see budget_action.")
    budget_action: BudgetAction = Field(
        BudgetAction.FAIL, description="fail (default): a plan over monthly_budget_usd fails (exit 1), and is still "
                                       "shown whole and written, marked over_budget, which apply refuses without "
                                       "--allow-over-budget; shed: the planner keeps within the budget by leaving "
                                       "the lowest tiers' work unplaced (reason: budget), never the fixed tier's.")
    spread_fixed_across: Spread = Field(
        1, description="Failure domains that a fixed-tier workload with at least 2 replicas must span.")
    allow_on_demand_for_opportunistic: StrictBool = Field(
        False, description="Let opportunistic workloads use on-demand capacity (they always may use reserved and spot).")
    cost_model: CostModel = Field(
        CostModel.CASH, description="cash (default): minimize the month's cash, committed pools included; "
                                    "amortized: every replica costs gpu.count x hours x usd_per_gpu_hour in any pool.")
    failover_max_price_ratio: Annotated[float, Field(strict=True, ge=1, le=MAX_FAILOVER_PRICE_RATIO,
                                                     allow_inf_nan=False)] = Field(
        2.0, description="In a failover, a burst or opportunistic replica moves only to a pool whose price per "
                         "GPU-hour is at most this times its rate in the applied plan; otherwise it waits "
                         "(unplaced, deferred). Fixed work is never held back by it. 1 to 1000.")
    catalog_price_max_age_days: Annotated[int, Field(strict=True, ge=1, le=3650)] = Field(
        365, description="A pool priced from the shipped catalog's list price (no usd_per_gpu_hour) is warned "
                         "of when that price was read more than this many days before the plan. 1 to 3650.")


def _host_name(value: str) -> str:
    if not _HOST_NAME_RE.fullmatch(value):
        raise PydanticCustomError("host_name", "is not a host name")
    return value


def _host_address(value: str) -> str:
    # A scope id ("fe80::1%eth0") may hold any character, so it is refused outright.
    if "%" not in value:
        with contextlib.suppress(ValueError):
            ipaddress.ip_address(value)
            return value
    if _HOST_NAME_RE.fullmatch(value) and not _looks_numeric(value):
        return value
    raise PydanticCustomError("host_address", "is not a host name or an IP address")


def _looks_numeric(value: str) -> bool:
    """A dotted all-digit name (`10.0.0.300`) is a mistyped address, not a host name."""
    return value.replace(".", "").isdigit()


def _posix_user(value: str) -> str:
    if not _POSIX_USER_RE.fullmatch(value):
        raise PydanticCustomError("posix_user", "is not a POSIX user name")
    return value


# Host names, addresses and users reach ssh's command line and Ansible: only the characters a
# DNS name, an IP address or a portable POSIX user name can hold get through, so nothing can be
# read as an option (a leading '-'), a shell word, or a template.
_HOST_NAME_RE = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                           r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
_POSIX_USER_RE = re.compile(r"[a-z_][a-z0-9_-]{0,31}\Z")
HostName = Annotated[str, Field(strict=True), AfterValidator(_host_name)]
HostAddress = Annotated[str, Field(strict=True), AfterValidator(_host_address)]
PosixUser = Annotated[str, Field(strict=True), AfterValidator(_posix_user)]


class Host(_Model):
    """A machine of an onprem or edge site that Ansible configures."""

    name: HostName = Field(description="Host name (DNS labels separated by dots), unique in the inventory.")
    address: HostAddress = Field(description="Host name or IP address that Ansible connects to.")
    pool: Name = Field(description="The pool of this site whose GPUs this host carries.")
    user: PosixUser = Field("root", description="SSH user, a POSIX user name ([a-z_][a-z0-9_-]*, at most 32).")
    port: Annotated[int, Field(strict=True, ge=1, le=65535)] = Field(22, description="SSH port.")


class Pool(_Model):
    """A homogeneous block of GPU capacity at one site."""

    name: Name = Field(description="Pool name, unique in the inventory.")
    gpu: Token = Field(description="GPU type from the catalog, e.g. H100, A100-80GB, L4.")
    gpus: PoolGpus | None = Field(None, description="onprem/edge only: capacity in GPUs.")
    instance_type: Token | None = Field(
        None, description="cloud only: the instance type, e.g. p5.48xlarge; GPUs per node come from the catalog.")
    max_gpus: PoolGpus | None = Field(None, description="cloud only: quota, the most GPUs this pool may grow to.")
    capacity_type: CapacityType = Field(description="reserved | on_demand | spot.")
    usd_per_gpu_hour: UsdPerGpuHour | None = Field(
        None, description="Amortized cost of owned hardware, or the price paid. "
                          "Cloud default: the catalog's list price for the instance type.")
    interruptions_per_day: Annotated[float, Field(strict=True, ge=0, le=MAX_INTERRUPTIONS_PER_DAY,
                                                  allow_inf_nan=False)] = Field(0.0, description="Expected spot reclaims per day, for risk and cost.")
    gpus_per_node: Annotated[int, Field(strict=True, gt=0, le=MAX_GPUS_PER_NODE)] | None = Field(
        None, description="onprem/edge only: GPUs in one machine; default the smaller of 8 and gpus. "
                          "Cloud pools take it from the catalog's instance type.")
    failure_domain: Token | None = Field(
        None, description="Failure domain of this pool, e.g. a rack row or an availability zone; "
                          "default: the site's failure domain.")
    reservation_id: Annotated[str, Field(strict=True, pattern=RESERVATION_ID_PATTERN)] | None = Field(
        None, description="Reserved cloud pools only: what its machines launch into. aws: the EC2 capacity "
                          "reservation or Capacity Block (cr-...); gcp: the reservation's name; azure: the "
                          "capacity reservation group's resource ID (/subscriptions/.../capacityReservationGroups/"
                          "NAME).")
    reservation_type: ReservationType | None = Field(
        None, description="With reservation_id only: what it names, capacity_reservation (an On-Demand Capacity "
                          "Reservation) or capacity_block (a Capacity Block for ML); default capacity_reservation.")

    @property
    def reservation_type_effective(self) -> ReservationType:
        return self.reservation_type or ReservationType.CAPACITY_RESERVATION


class Site(_Model):
    """A place with GPU capacity: an on-prem data centre, a cloud region or an edge site."""

    name: Name = Field(description="Site name, unique in the inventory.")
    kind: SiteKind = Field(description="onprem | cloud | edge.")
    jurisdiction: Token = Field(description="Data-residency zone, a free-form token such as EU, US, UK, APAC.")
    failure_domain: Token | None = Field(None, description="Failure domain; default: the site's name.")
    egress_usd_per_gb: Annotated[float, Field(strict=True, ge=0, le=MAX_EGRESS_USD_PER_GB, allow_inf_nan=False)] = \
        Field(description="Cost of moving data out of this site, per GB.")
    latency_ms: dict[Token, Annotated[float, Field(strict=True, ge=0, le=MAX_LATENCY_MS, allow_inf_nan=False)]] = Field(
        description="Network round trip from this site to each user region, in milliseconds.")
    uplink_mbps: Annotated[float, Field(strict=True, gt=0, le=MAX_UPLINK_MBPS, allow_inf_nan=False)] | None = Field(None, description="Bandwidth in and out of the site; default unlimited.")
    provision_minutes: Annotated[float, Field(strict=True, ge=0, le=MAX_MINUTES, allow_inf_nan=False)] | None = Field(
        None, description="Time to bring capacity into service; default onprem 5, edge 5, cloud 12.")
    provider: Literal["aws", "gcp", "azure"] | None = Field(
        None, description="cloud only: the provider, aws, gcp or azure (gcp and azure: revision 4).")
    region: Token | None = Field(None, description="cloud only: the provider's region name, e.g. us-east-1, "
                                 "us-central1, westeurope.")
    cluster: Name | None = Field(None, description="The Kubernetes cluster its GPU pools join: required for cloud, "
                                 "optional for onprem (revision 3: its queues take part in ordered spillover, "
                                 "on premises first); not for edge.")
    max_sensitivity: Sensitivity | None = Field(
        None, description="The most sensitive data this site may process; default onprem restricted, "
                          "edge and cloud confidential. Cloud may never exceed confidential.")
    teams: Annotated[list[Name], Field(min_length=1, max_length=MAX_SITE_TEAMS)] | None = Field(
        None, description="(revision 3) Only these teams' workloads may run here, each a DNS label (a region a "
                          "subsidiary pays for); a workload without `team` may not. Default: every workload.")
    hosts: list[Host] = Field(default_factory=list, description="onprem and edge only: the machines Ansible configures.")
    pools: list[Pool] = Field(description="The site's GPU pools.")

    @property
    def domain(self) -> str:
        return self.failure_domain or self.name

    @property
    def max_sensitivity_effective(self) -> Sensitivity:
        if self.max_sensitivity is not None:
            return self.max_sensitivity
        return Sensitivity.RESTRICTED if self.kind is SiteKind.ONPREM else Sensitivity.CONFIDENTIAL

    @property
    def provision_minutes_effective(self) -> float:
        if self.provision_minutes is not None:
            return self.provision_minutes
        return 12.0 if self.kind is SiteKind.CLOUD else 5.0


class Dataset(_Model):
    """Data that workloads read; placement honours its sensitivity and residency."""

    name: Name = Field(description="Dataset name, unique in the inventory.")
    site: Name = Field(description="The site where the primary copy lives.")
    size_gb: Annotated[float, Field(strict=True, ge=0, le=MAX_SIZE_GB, allow_inf_nan=False)] = Field(
        description="Size in GB.")
    sensitivity: Sensitivity = Field(description="public | internal | confidential | restricted.")
    residency: list[Token] | None = Field(
        None, description="Jurisdictions where it may be processed; default: any.")
    copies: list[Name] = Field(
        default_factory=list, description="Other sites holding a full, current copy; read there with no egress.")

    @property
    def holders(self) -> tuple[str, ...]:
        """Every site holding the data: the primary first, then the copies."""
        return (self.site, *self.copies)


class GpuRequest(_Model):
    """GPUs per replica."""

    types: Annotated[list[Token], Field(min_length=1)] = Field(description="Acceptable GPU types; any of them.")
    count: Annotated[int, Field(strict=True, gt=0, le=MAX_GPUS_PER_REPLICA)] = Field(description="GPUs per replica.")
    multi_node: StrictBool | None = Field(
        None, description="Whether one replica may span machines; default true for pretraining, training, "
                          "fine_tuning and federated_training, false otherwise.")


class LatencyBudget(_Model):
    """A network latency budget to one user region."""

    region: Token = Field(description="A user region from the top-level `regions`.")
    p95_ms: Annotated[float, Field(strict=True, gt=0, le=MAX_LATENCY_MS, allow_inf_nan=False)] = Field(description="The most network round trip allowed, in milliseconds.")


class Fallback(_Model):
    """The survival path when capacity is lost: fewer replicas or smaller GPUs."""

    gpu: GpuRequest | None = Field(None, description="GPU request in degraded mode; default: the workload's.")
    replicas: Replicas | None = Field(None, description="Replicas in degraded mode; default: the workload's.")


class Workload(_Model):
    """Something that must run: training, inference, embedding, evaluation..."""

    name: Name = Field(description="Workload name, unique in the inventory.")
    type: WorkloadType = Field(description="pretraining | training | fine_tuning | realtime_inference | "
                                           "batch_inference | embedding | evaluation | experiment | federated_training.")
    gpu: GpuRequest = Field(description="GPUs per replica.")
    replicas: Replicas = Field(1, description="Replicas.")
    hours_per_month: Annotated[float, Field(strict=True, ge=HOURS_PER_MONTH_MIN, le=HOURS_PER_MONTH_MAX,
                                         allow_inf_nan=False)] | None = Field(
        None, description="Hours run per month; with `schedule`, hours inside its windows (default: the whole "
                          "windows, W x 730 / 168); without, default 730 for realtime_inference, otherwise required.")
    datasets: list[Name] = Field(default_factory=list, description="Datasets read.")
    data_passes_per_month: Annotated[float, Field(strict=True, ge=0, le=MAX_PASSES_PER_MONTH,
                                                  allow_inf_nan=False)] = Field(
        1.0, description="Times per month the datasets are read from a remote site.")
    latency: LatencyBudget | None = Field(None, description="Network budget to a user region.")
    tier: TierChoice = Field(TierChoice.AUTO, description="auto | fixed | burst | opportunistic.")
    preemptible: StrictBool = Field(False, description="May be preempted; requires checkpoint_minutes.")
    checkpoint_minutes: Minutes | None = Field(
        None, description="How often state is saved; needed to resume elsewhere.")
    max_usd_per_month: UsdPerMonth | None = Field(None, description="Cost ceiling for this workload.")
    rto_minutes: Minutes | None = Field(
        None, description="Recovery objective: service back within this after losing its site.")
    model_gb: Annotated[float, Field(strict=True, ge=0, le=MAX_MODEL_GB, allow_inf_nan=False)] | None = Field(
        None, description="Size of the model artifacts a replica needs on its host, in GB.")
    sites: list[Name] | None = Field(None, description="Allow-list of sites.")
    fallback: Fallback | None = Field(None, description="Survival path when capacity is lost.")
    team: Name | None = Field(None, description="Owner, a DNS label; showback and chargeback group by it.")
    spread: Spread | None = Field(
        None, description="Failure domains its replicas must span; overrides policies.spread_fixed_across, any tier.")
    survives_site_loss: StrictBool = Field(
        True, description="false: losing its site is expected to take it down (drills report it and do not fail).")
    schedule: Schedule | None = Field(
        None, description="When it may run (revision 3): recurring windows in a typical week; default always.")

    @property
    def multi_node(self) -> bool:
        """Whether one replica may span machines, with the per-type default applied."""
        if self.gpu.multi_node is not None:
            return self.gpu.multi_node
        return self.type in _MULTI_NODE_TYPES

    @property
    def hours(self) -> float:
        """Hours per month, with the default applied: the whole windows with a schedule, else the realtime
        default (validation rejects a missing value otherwise)."""
        if self.hours_per_month is not None:
            return self.hours_per_month
        if self.schedule is not None:
            return default_hours_per_month(self.schedule)
        return float(DEFAULT_REALTIME_HOURS)


_MULTI_NODE_TYPES = frozenset({WorkloadType.PRETRAINING, WorkloadType.TRAINING,
                               WorkloadType.FINE_TUNING, WorkloadType.FEDERATED_TRAINING})


class Inventory(_Model):
    """A hybridctl inventory, format version 1."""

    version: Literal[1] = Field(description="Inventory format version; 1 is supported.")
    # a DNS label like every other name: `-cloud-burst-` or `---` validated, planned and reached apply, whose
    # stack names and Kubernetes namespaces refuse them (synth did)
    name: Name = Field(description="Inventory name, a DNS label; names stacks and state.")
    regions: list[Token] = Field(default_factory=list, description="User populations that latency budgets refer to.")
    policies: Policies = Field(default_factory=lambda: Policies(), description="Inventory-wide policies.")
    sites: list[Site] = Field(default_factory=list, description="Places with GPU capacity.")
    datasets: list[Dataset] = Field(default_factory=list, description="Data that workloads read.")
    workloads: list[Workload] = Field(default_factory=list, description="What must run.")
