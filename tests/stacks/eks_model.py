"""A small model of how EKS managed node groups and EC2 capacity reservations behave, from AWS's
documentation, for the tests to decide what a real account would accept. Verified only against the
documentation (no AWS call is made); each rule names its source.

Node groups (EKS User Guide, "Updating a managed node group", "Managed node update behavior";
API Reference, NodegroupScalingConfig, UpdateNodegroupConfig, UpdateNodegroupVersion):
- a scaling configuration must satisfy 0 <= min <= desired <= max and max >= 1; EKS rejects any
  other ("Minimum capacity 3 can't be greater than desired size 1"), whether on create or update.
  UpdateNodegroupConfig sends the whole scaling configuration.
- UpdateNodegroupConfig (labels, taints, scaling, updateConfig, and tags) changes no node.
- UpdateNodegroupVersion to a new launch template version rolls the group: every node is replaced,
  at most `updateConfig.maxUnavailable` unavailable at a time, each drained first.
- instance types, capacity type, AMI type, subnets, node role and the launch template's id cannot
  change in place: the node group is replaced (terraform-provider-aws marks them ForceNew), so every
  node goes.

Capacity reservations (EC2 User Guide, "On-Demand Capacity Reservations", "Capacity Blocks for ML";
EKS User Guide, "Create a managed node group with Capacity Blocks for ML"):
- a reservation lives in one availability zone; an instance that targets it must launch in that zone,
  so a node group targeting it must have subnets in that zone only;
- a Capacity Block is targeted with the `capacity-block` market type (InstanceMarketOptions) beside the
  reservation's id, and the node group's capacity type is CAPACITY_BLOCK.

Pulumi: with `ignoreChanges` on a property, the provider is sent the value already in the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class EksRejects(ValueError):
    """What EKS answers with InvalidParameterException."""


def check_scaling(min_size: int, desired: int, max_size: int) -> None:
    if min_size > desired:
        raise EksRejects(f"Minimum capacity {min_size} can't be greater than desired size {desired}")
    if desired > max_size:
        raise EksRejects(f"Desired capacity {desired} can't be greater than max size {max_size}")
    if min_size < 0 or max_size < 1:
        raise EksRejects(f"invalid scaling config min {min_size}, max {max_size}")


@dataclass
class LiveNodeGroup:
    """A node group as it runs: its sizes (the autoscaler moves desired) and its nodes' launch template."""

    min_size: int
    desired: int
    max_size: int

    def update_config(self, min_size: int, desired: int, max_size: int) -> None:
        """UpdateNodegroupConfig with a whole scaling configuration."""
        check_scaling(min_size, desired, max_size)
        self.min_size, self.desired, self.max_size = min_size, desired, max_size


def sent_desired(registered: Mapping[str, Any], options: Mapping[str, Any], in_state: int) -> int:
    """The desired size the provider sends for a node group the stack registered: the state's value when
    the program ignores changes to it, else what it registered."""
    if "scalingConfig.desiredSize" in options.get("ignoreChanges", []):
        return in_state
    return int(registered["scalingConfig"]["desiredSize"])


# Launch template data: a change is a new version, which rolls the node group.
def rolls(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether going from one launch template's inputs to another's rolls every node of its group."""
    return dict(old) != dict(new)


# Node group inputs that replace the group (and so every node) when they change.
REPLACING = ("instanceTypes", "capacityType", "amiType", "subnetIds", "nodeRoleArn")


def replaced(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return [k for k in REPLACING if old.get(k) != new.get(k)]


def reservation_errors(template: Mapping[str, Any], group: Mapping[str, Any], reservation_zone: str,
                       subnet_zones: Mapping[str, str], capacity_block: bool) -> list[str]:
    """Why instances launched by `group` with `template` would not land in the reservation: subnets in
    another zone, or a Capacity Block not targeted as one."""
    errors = [f"subnet {s} is in {subnet_zones.get(s, '?')}, the reservation in {reservation_zone}"
              for s in group["subnetIds"] if subnet_zones.get(s) != reservation_zone]
    market = (template.get("instanceMarketOptions") or {}).get("marketType")
    if capacity_block and (market != "capacity-block" or group["capacityType"] != "CAPACITY_BLOCK"):
        errors.append(f"a Capacity Block needs market type capacity-block and CAPACITY_BLOCK, got {market} and "
                      f"{group['capacityType']}")
    if not capacity_block and market == "capacity-block":
        errors.append("an ordinary reservation targeted as a Capacity Block")
    return errors


# Scheduled actions on a node group's Auto Scaling group (EC2 Auto Scaling User Guide, "Scheduled scaling";
# API Reference, PutScheduledUpdateGroupAction): a weekly `Recurrence` in cron, in `TimeZone` (UTC by
# default); at each occurrence the group takes the action's MinSize, MaxSize and DesiredCapacity, which
# must satisfy min <= desired <= max ("Desired capacity:N must be between the specified min size:M and max
# size:X"). Each is optional: an action without DesiredCapacity (pulumi-aws's -1) leaves it, and a MinSize
# above the group's desired capacity raises it to the new minimum. EKS sends the node group's whole scaling
# configuration to the group on the next UpdateNodegroupConfig: an action outside the node group's
# [min, max] would be undone by it.
def check_scheduled(action_min: int, desired: int | None, action_max: int, group_min: int, group_max: int) -> None:
    if action_min > action_max or (desired is not None and not action_min <= desired <= action_max):
        raise EksRejects(f"Desired capacity:{desired} must be between the specified min size:{action_min} "
                         f"and max size:{action_max}")
    if action_min < group_min or action_max > group_max:
        raise EksRejects(f"scheduled sizes [{action_min}, {action_max}] outside the node group's "
                         f"[{group_min}, {group_max}]: the next node group update undoes them")
