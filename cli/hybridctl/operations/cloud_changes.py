"""The "cloud changes" section of `plan`: what the plan would do to each Pulumi stack.

By default it is the diff of the stack configurations the plan maps to (pure, no pulumi
import); with --cloud-preview it is a real `pulumi preview` of every stack.
"""

from __future__ import annotations

from rich.console import Console

from hybridctl.core.deploy.stackdiff import CONFIG_DIFF, PULUMI_PREVIEW, CloudChange, CloudChanges
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.render.listing import print_table


def config_diff(inventory: Inventory, plan: Plan, baseline: Plan | None) -> CloudChanges:
    from hybridctl.core.deploy.gke_aks import diff_other_cloud_stacks, other_cloud_stacks
    from hybridctl.core.deploy.stackconfig import stack_configs
    from hybridctl.core.deploy.stackdiff import diff_stack_configs
    from hybridctl.core.inventory.catalog import catalog

    before = stack_configs(inventory, baseline, digest="baseline") if baseline is not None else None
    after = stack_configs(inventory, plan, digest="plan")
    # every provider's pools: the EKS node groups and queues, then the GKE and AKS pools
    others = diff_other_cloud_stacks(
        other_cloud_stacks(inventory, baseline, "baseline", catalog()) if baseline is not None else None,
        other_cloud_stacks(inventory, plan, "plan", catalog()))
    return CloudChanges(CONFIG_DIFF, diff_stack_configs(before, after) + others)


def pulumi_preview(inventory: Inventory, plan: Plan, state_dir: str | None) -> CloudChanges:
    """A real `pulumi preview` of every stack the plan maps to; needs the pulumi CLI and credentials."""
    from hybridctl.core.deploy.gke_aks import other_cloud_stacks
    from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
    from hybridctl.core.inventory.catalog import catalog
    from hybridctl.drivers.pulumi import PulumiDriver, StackSpec, check_credentials
    from hybridctl.drivers.state import StateStore, resolve_state_dir
    from hybridctl.runners import cloud_driver

    configs = stack_configs(inventory, plan, digest=plan_digest(plan))
    store = StateStore(resolve_state_dir(state_dir))
    driver = cloud_driver(store.root)
    specs = [StackSpec(c.project, c.stack_name, c.values()) for c in configs.gpu_pools]
    specs += [StackSpec(o.project, o.stack_name, o.values())
              for o in other_cloud_stacks(inventory, plan, plan_digest(plan), catalog())]
    specs += [StackSpec(q.project, q.stack_name, q.values()) for q in configs.queues]
    if isinstance(driver, PulumiDriver):
        for spec in specs:
            check_credentials(spec)
    rows: list[CloudChange] = []
    # A preview writes each stack's configuration: never beside a running apply.
    with store.locked(command="plan --cloud-preview"):
        results = [(spec, driver.preview(spec)) for spec in specs]
    for spec, result in results:
        if result.changes:
            rows += [_previewed(spec.project, spec.stack_name, c.type, c.name, c.op) for c in result.changes]
        else:
            rows += [CloudChange(spec.project, spec.stack_name, "stack", spec.stack_name, op, f"{count} resource(s)")
                     for op, count in sorted(result.summary.items()) if count]
    return CloudChanges(PULUMI_PREVIEW, tuple(rows))


_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def _previewed(project: str, stack: str, type_: str, name: str, op: str) -> CloudChange:
    """A previewed change; a launch template's update is a new version, which rolls its node group's nodes."""
    if type_ == _LAUNCH_TEMPLATE and op == "update":
        return CloudChange(project, stack, type_, name, "roll", "a new version: EKS replaces every node of its group",
                           removes_machines=True)
    return CloudChange(project, stack, type_, name, op)


def approve_destructive(console: Console, inventory: Inventory, plan: Plan, applied: Plan | None, *,
                        auto_approve: bool, allow_machine_removal: bool) -> CloudChanges:
    """Show the rolls, replaces and deletions `apply` will make in the cloud, before its approval prompt.

    Deleting, replacing or rolling node groups that have machines stops the work on them (a roll
    drains and replaces every node): --auto-approve alone does not approve that; it also takes
    --allow-machine-removal.
    """
    from hybridctl.errors import RefusedError

    changes = config_diff(inventory, plan, applied)
    destructive = CloudChanges(changes.source, changes.destructive)
    if not destructive.rows:
        return destructive
    # every one of them, uncapped: this is what the approval is for
    print_table(console, "Destructive cloud changes (roll, replace or delete)", ("stack", "kind", "name", "action", "detail"),
                [(f"{r.project}/{r.stack}", r.kind, r.name, r.action,
                  r.detail + (" — removes running machines" if r.removes_machines else "")) for r in destructive.rows])
    removing = [r for r in destructive.rows if r.removes_machines]
    if removing and auto_approve and not allow_machine_removal:
        raise RefusedError(
            "apply would delete, replace or roll node groups with running machines: "
            + ", ".join(f"{r.stack}/{r.name}" for r in removing),
            hint="review the table above, then pass --allow-machine-removal as well as --auto-approve")
    return destructive
