"""The format reference ships with the product and stays in step with the JSON Schema."""

from __future__ import annotations

from pathlib import Path

from hybridctl.core.inventory.models import (
    CapacityType,
    CostModel,
    Inventory,
    ReservationType,
    Sensitivity,
    SiteKind,
    TierChoice,
    WorkloadType,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "inventory-format.md"


def test_every_schema_field_is_documented() -> None:
    schema = Inventory.model_json_schema()
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for model, definition in [("Inventory", schema), *schema["$defs"].items()]:
        for field in definition.get("properties", {}):
            if f"`{field}`" not in text:
                missing.append(f"{model}.{field}")
    assert missing == []


def test_every_enumerated_value_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [f"{enum.__name__}.{v.value}" for enum in (CapacityType, CostModel, ReservationType, Sensitivity,
                                                        SiteKind, TierChoice, WorkloadType) for v in enum if f"`{v.value}`" not in text]
    assert missing == []


def test_the_readme_points_at_the_reference() -> None:
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "docs/inventory-format.md" in readme
