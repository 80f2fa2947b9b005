"""The "cloud changes" section of `plan`: what the plan would do to each Pulumi stack.

By default it is the diff of the stack configurations the plan maps to (pure, no pulumi
import); with --cloud-preview it is a real `pulumi preview` of every stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan

CONFIG_DIFF = "config-diff"
PULUMI_PREVIEW = "pulumi-preview"


@dataclass(frozen=True)
class CloudChangeRow:
    project: str
    stack: str
    kind: str
    name: str
    action: str
    detail: str = ""


@dataclass(frozen=True)
class CloudChanges:
    source: str  # config-diff | pulumi-preview
    rows: tuple[CloudChangeRow, ...]

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "changes": [row.__dict__ for row in self.rows]}


def config_diff(inventory: Inventory, plan: Plan, baseline: Plan | None) -> CloudChanges:
    from hybridctl.core.stackconfig import diff_stack_configs, stack_configs

    before = stack_configs(inventory, baseline, digest="baseline") if baseline is not None else None
    after = stack_configs(inventory, plan, digest="plan")
    return CloudChanges(CONFIG_DIFF, tuple(CloudChangeRow(c.project, c.stack, c.kind, c.name, c.action, c.detail)
                                           for c in diff_stack_configs(before, after)))


def pulumi_preview(inventory: Inventory, plan: Plan, state_dir: str | None) -> CloudChanges:
    """A real `pulumi preview` of every stack the plan maps to; needs the pulumi CLI and credentials."""
    from hybridctl.core.stackconfig import plan_digest, stack_configs
    from hybridctl.drivers.pulumi import PulumiDriver, StackSpec, check_credentials
    from hybridctl.drivers.state import resolve_state_dir
    from hybridctl.runners import cloud_driver

    configs = stack_configs(inventory, plan, digest=plan_digest(plan))
    driver = cloud_driver(resolve_state_dir(state_dir))
    specs = [StackSpec(c.project, c.stack_name, c.values()) for c in configs.gpu_pools]
    specs += [StackSpec(q.project, q.stack_name, q.values()) for q in configs.queues]
    if isinstance(driver, PulumiDriver):
        for spec in specs:
            check_credentials(spec)
    rows: list[CloudChangeRow] = []
    for spec in specs:
        result = driver.preview(spec)
        if result.changes:
            rows += [CloudChangeRow(spec.project, spec.stack_name, c.type, c.name, c.op) for c in result.changes]
        else:
            rows += [CloudChangeRow(spec.project, spec.stack_name, "stack", spec.stack_name, op, f"{count} resource(s)")
                     for op, count in sorted(result.summary.items()) if count]
    return CloudChanges(PULUMI_PREVIEW, tuple(rows))


def render_cloud_changes(console: Console, changes: CloudChanges) -> None:
    label = ("from a pulumi preview" if changes.source == PULUMI_PREVIEW
             else "from the plan-to-stack-configuration diff, not a pulumi preview (--cloud-preview runs one)")
    moving = [r for r in changes.rows if r.action != "same"]
    if not moving:
        console.print(f"Cloud changes: none ({label})")
        return
    table = Table(title=f"Cloud changes ({label})", title_justify="left")
    for column in ("stack", "kind", "name", "action", "detail"):
        table.add_column(column)
    for row in moving:
        table.add_row(f"{row.project}/{row.stack}", row.kind, row.name, row.action, row.detail)
    console.print(table)
