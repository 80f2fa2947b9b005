"""What the checks say of each cloud provider (revision 4: aws, gcp, azure): its name, its catalog types
nearest a mistyped one, its reservation id's form, an example zone."""

from __future__ import annotations

import difflib
import re
from types import MappingProxyType

from hybridctl.core.inventory.catalog import InstanceType
from hybridctl.core.inventory.models import AWS_RESERVATION_ID, AZURE_RESERVATION_GROUP, GCP_RESERVATION_NAME

PROVIDER_NAMES = MappingProxyType({"aws": "AWS", "gcp": "Google Cloud", "azure": "Azure"})
# what a reserved pool's reservation_id is on each provider, for the hint when it has another's form
_RESERVATION_FORMS = MappingProxyType({
    "aws": (AWS_RESERVATION_ID, "the EC2 capacity reservation's cr-... id"),
    "gcp": (GCP_RESERVATION_NAME, "the Compute Engine reservation's name"),
    "azure": (AZURE_RESERVATION_GROUP, "the capacity reservation group's resource ID "
              "(/subscriptions/.../capacityReservationGroups/NAME)")})


def article(provider: str) -> str:
    name = PROVIDER_NAMES.get(provider, provider)
    return f"an {name}" if name[0] in "AEIOU" else f"a {name}"


def nearest_names(name: str, own: dict[str, InstanceType], provider: str) -> str:
    """The provider's names nearest to a mistyped one (up to 3), else all of them."""
    close = difflib.get_close_matches(name, list(own), n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    return f"{PROVIDER_NAMES.get(provider, provider)} types in the catalog: {', '.join(sorted(own))}"


def same_gpu_names(gpu: str, own: dict[str, InstanceType], provider: str) -> str:
    same = sorted(n for n, i in own.items() if i.gpu == gpu)
    kind = {"aws": "instance type", "gcp": "machine type", "azure": "VM size"}.get(provider, "type")
    if same:
        return f"use a {PROVIDER_NAMES.get(provider, provider)} {kind} with {gpu} GPUs: {', '.join(same)}"
    return f"the catalog has no {PROVIDER_NAMES.get(provider, provider)} {kind} with {gpu} GPUs: " \
           "change the pool's `gpu`, or move it to a site of another provider"


def zone_example(provider: str, region: str) -> str:
    return {"gcp": f"{region}-a", "azure": f"{region}-1"}.get(provider, f"{region}a")


def reservation_form_error(provider: str | None, reservation_id: str) -> str:
    """'' when the id has the provider's form, else what the provider's form is."""
    pattern, words = _RESERVATION_FORMS.get(provider or "aws", _RESERVATION_FORMS["aws"])
    return "" if re.fullmatch(pattern, reservation_id) else words
