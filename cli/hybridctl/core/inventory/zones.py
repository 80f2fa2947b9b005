"""AWS availability zones as an inventory names them in a pool's `failure_domain`.

A zone is named either by its name (`us-east-1a`, which AWS maps to a different physical zone in
each account) or by its zone ID (`use1-az1`, the same physical zone in every account; AWS's
advice for anything shared across accounts, such as a capacity reservation). Both belong to a
region: a name starts with the region's name, an ID with the region's code (`use1` for
us-east-1, `euc1` for eu-central-1, `apne1` for ap-northeast-1).
"""

from __future__ import annotations

import re
from types import MappingProxyType

_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
_ID = re.compile(r"^[a-z]{2,4}\d-az\d+$")
# The region name's direction words as they appear in zone IDs (us-east-1 -> use1, ap-southeast-2 -> apse2).
_DIRECTION = MappingProxyType({"east": "e", "west": "w", "north": "n", "south": "s", "central": "c",
                               "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"})


def region_code(region: str) -> str | None:
    """The prefix of the region's zone IDs: us-east-1 -> use1; None for a name of another shape."""
    parts = region.split("-")
    if len(parts) != 3 or parts[1] not in _DIRECTION or not parts[2].isdigit():
        return None
    return f"{parts[0]}{_DIRECTION[parts[1]]}{parts[2]}"


def zone_of(region: str | None, domain: str | None) -> str | None:
    """`domain` when it names an availability zone of `region` (by name or by ID), else None."""
    if not domain or not region:
        return None
    if _NAME.match(domain) and domain.startswith(region) and len(domain) == len(region) + 1:
        return domain
    code = region_code(region)
    if code is not None and _ID.match(domain) and domain.startswith(f"{code}-az"):
        return domain
    return None


# Google Cloud zones are the region's name and a letter (us-central1-a); Azure's, as an inventory writes them
# in a pool's `failure_domain`, the region's name and the zone's number (westeurope-1).
_GCP_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")
_AZURE_ZONE = re.compile(r"^(?P<region>[a-z]+\d*)-(?P<zone>[1-3])$")
_AWS_ZONE = re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-\d)[a-z]$")


def zone_region(provider: str | None, domain: str | None) -> str | None:
    """The region a `failure_domain` names a zone of, when it has the shape of one of the provider's zones
    (us-east-1a, us-central1-a, westeurope-1), else None (a rack row or another free-form domain)."""
    if not domain:
        return None
    shape = {"gcp": _GCP_ZONE, "azure": _AZURE_ZONE}.get(provider or "aws", _AWS_ZONE)
    found = shape.match(domain)
    return found.group("region") if found else None
