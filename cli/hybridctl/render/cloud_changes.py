"""The "cloud changes" section of `plan` and `apply`: what the plan would do to each Pulumi stack."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from hybridctl.core.deploy.stackdiff import PULUMI_PREVIEW, CloudChanges
from hybridctl.render.listing import print_capped

# apply asks for it (operations/cloud_changes.approve_destructive): --auto-approve alone is not enough
_NEEDS_APPROVAL = " — stops running machines: apply needs approval (--allow-machine-removal)"


def render_cloud_changes(console: Console, changes: CloudChanges, max_rows: int = 0) -> None:
    label = ("from a pulumi preview" if changes.source == PULUMI_PREVIEW
             else "from the plan-to-stack-configuration diff, not a pulumi preview (--cloud-preview runs one)")
    moving = [r for r in changes.rows if r.action != "same"]
    if not moving:
        console.print(f"Cloud changes: none ({label})")
        return
    print_capped(console, f"Cloud changes ({label})", ("stack", "kind", "name", "action", "detail"), moving,
                 lambda r: (f"{r.project}/{r.stack}", r.kind, r.name,
                            Text(r.action, style="bold red") if r.destructive else r.action,
                            r.detail + (_NEEDS_APPROVAL if r.removes_machines else "")),
                 max_rows, "cloud changes")
