"""Pools priced from the shipped catalog are warned of once that price has aged past
policies.catalog_price_max_age_days: a plan of 2026-12 read prices of 2025 with no word of it."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
import yaml
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.price_age import aged_catalog_prices
from support.examples import EXAMPLES
from support.inproc import run_cli

P5 = catalog().instances["p5.48xlarge"]


def _loaded(text: str):
    return load_sources([Source("fleet.yaml", text)])


def _cloud_burst(max_age: int | None = None) -> str:
    document = yaml.safe_load((EXAMPLES / "cloud-burst.yaml").read_text())
    if max_age is not None:
        document["policies"]["catalog_price_max_age_days"] = max_age
    return yaml.safe_dump(document, sort_keys=False)


@pytest.mark.parametrize(("days", "warned"), [(365, False), (366, True)])
def test_the_limit_is_inclusive(days: int, warned: bool) -> None:
    loaded = _loaded(_cloud_burst())
    found = aged_catalog_prices(loaded.inventory, loaded.locator, P5.price_read_on + timedelta(days=days))
    assert ("use1-p5-od" in " ".join(d.message for d in found)) is warned


def test_the_warning_names_the_pool_its_line_and_the_dates() -> None:
    text = _cloud_burst(max_age=30)
    loaded = _loaded(text)
    today = P5.price_read_on + timedelta(days=31)
    (p5,) = [d for d in aged_catalog_prices(loaded.inventory, loaded.locator, today) if "use1-p5-od" in d.message]
    assert p5.code == "catalog-price-aged" and p5.severity.value == "warning"
    assert p5.message == (f"pool use1-p5-od: priced from the catalog's list price for p5.48xlarge, read on "
                          f"{P5.price_read_on.isoformat()}, 31 days before {today.isoformat()} "
                          "(policies.catalog_price_max_age_days: 30)")
    line = text.splitlines()[p5.location.line - 1]
    assert "instance_type: p5.48xlarge" in line


def test_a_pool_with_its_own_price_is_never_warned() -> None:
    loaded = _loaded(_cloud_burst())
    found = aged_catalog_prices(loaded.inventory, loaded.locator, date(9000, 1, 1))
    # use1-p5-spot sets usd_per_gpu_hour: its own price, whatever the catalog's date
    assert all("use1-p5-spot" not in d.message for d in found) and found


@pytest.mark.parametrize("bad", [0, 3651, "30"])
def test_the_limit_is_checked_at_its_line(bad: object) -> None:
    with pytest.raises(InvalidInventoryError) as raised:
        _loaded(_cloud_burst(max_age=bad))  # type: ignore[arg-type]
    assert "catalog_price_max_age_days" in str(raised.value.diagnostics[0].message) + str(
        raised.value.diagnostics[0].location)


def test_plan_notes_aged_prices_and_still_plans(tmp_path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(_cloud_burst(max_age=1))  # any catalog read is more than a day old
    done = run_cli("plan", str(fleet), "--state", str(tmp_path / "state"))
    assert done.code == 0
    assert f"note: {fleet}:" in done.stderr and "pool use1-p5-od: priced from the catalog's list price" in done.stderr
    assert "hint: set usd_per_gpu_hour to today's price, or update hybridctl (its catalog)" in done.stderr
