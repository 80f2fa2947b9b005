"""apply, status, destroy: make a plan real, say what is real, take it down.

Everything that changes the world goes through hybridctl.executor under the state lock; the
commands here read arguments, check the preconditions (fresh plan, approval, prerequisites)
and render. Heavy imports happen inside the commands.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.errors import UsageError

STATE_HELP = ("State directory, or a postgresql://…[?environment=NAME] URL for a shared state "
              "(default: $HYBRIDCTL_STATE, else ./.hybridctl/state).")
LOCK_HELP = "Wait this long for another run's lock, e.g. 30s or 5m (default: fail at once, exit 3)."
KNOWN_HOSTS_HELP = "SSH known_hosts file to verify hosts against (default: known_hosts in the state directory)."
SSH_KEY_HELP = "SSH private key for the hosts (default: ssh's own)."


class StatusFormat(StrEnum):
    table = "table"
    json = "json"


def parse_duration(text: str) -> float:
    """Seconds from '30', '30s', '5m' or '1h'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not match:
        raise UsageError(f"--lock-timeout {text!r}: not a duration", hint="write e.g. 30s, 5m or 1h")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


@app.command()
def apply(
    source: Path = typer.Argument(..., help="A plan file from `plan --out`, or an inventory (planned first, "
                                  "then confirmed)."),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="With a plan file: the inventory it was "
                                          "made from (its digest must still match, and it lists the hosts)."),
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help=LOCK_HELP),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Apply without asking for confirmation."),
    allow_machine_removal: bool = typer.Option(False, "--allow-machine-removal", help="With --auto-approve: also "
                                               "approve deleting or replacing node groups that have machines."),
    skip_cloud: bool = typer.Option(False, "--skip-cloud", help="Skip the cloud steps (Pulumi); configure "
                                    "on-prem and edge sites only."),
    bundles: Path | None = typer.Option(None, "--bundles", help="Directory of signed model bundles, one per "
                                        "workload: DIR/<workload>/ (without it, model sync is skipped)."),
    bundle_public_key: Path | None = typer.Option(None, "--bundle-public-key", help="Public key the bundles "
                                                  "must be signed with (needed with --bundles)."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help=KNOWN_HOSTS_HELP),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
    parallelism: int = typer.Option(4, "--parallelism", min=1, max=64, help="Steps run at once, at most."),
    end_failover: bool = typer.Option(False, "--end-failover", help="Apply even though a failover is in effect "
                                      "or unfinished: ends it, and may move workloads back to the sites it "
                                      "fenced (`runbook rollback` is the usual way back)."),
    verify_full: bool = typer.Option(False, "--verify-full", help="Model sync re-hashes every installed model "
                                     "version (by default only those whose file metadata changed since verified)."),
    allow_unplaced: bool = typer.Option(False, "--allow-unplaced", help="Apply even when fixed-tier work is left "
                                        "unplaced (as `plan --allow-unplaced` accepts it)."),
    fail_on_unplaced: bool = typer.Option(False, "--fail-on-unplaced", help="Refuse (exit 1) when any workload, "
                                          "of any tier, is left unplaced."),
    allow_over_budget: bool = typer.Option(False, "--allow-over-budget", help="Apply a plan over "
                                           "policies.monthly_budget_usd (marked over_budget; refused, exit 1, "
                                           "without this)."),
) -> None:
    """Make a plan real: cloud pools and queues (Pulumi), then on-prem/edge hosts (Ansible), journaled and resumable."""
    from hybridctl.operations.apply import run_apply
    from hybridctl.render.terminal import Terminal

    if allow_unplaced and fail_on_unplaced:
        raise UsageError("--allow-unplaced and --fail-on-unplaced contradict each other", hint="pass one of them")

    code = run_apply(source=source, inventory=inventory, state=state, lock_timeout_s=parse_duration(lock_timeout),
                     auto_approve=auto_approve, skip_cloud=skip_cloud, bundles=bundles,
                     bundle_public_key=bundle_public_key, known_hosts=known_hosts, ssh_key=ssh_key,
                     parallelism=parallelism, end_failover=end_failover,
                     allow_machine_removal=allow_machine_removal, verify_full=verify_full,
                     allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced,
                     allow_over_budget=allow_over_budget, view=Terminal())
    if code:
        raise typer.Exit(code)


@app.command()
def status(
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    drift: bool = typer.Option(True, "--drift/--no-drift", help="Check for drift: Pulumi refresh preview for "
                               "cloud stacks, Ansible check mode for nodes."),
    detailed_exitcode: bool = typer.Option(False, "--detailed-exitcode",
                                           help="Exit 0 when nothing drifted, 2 when something did, 1 on error."),
    output_format: StatusFormat = typer.Option(StatusFormat.table, "--format", "-f", help="Output format."),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help=LOCK_HELP),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help=KNOWN_HOSTS_HELP),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
    at: str = typer.Option("now", "--at", metavar="TIME", help="With a timed plan: the moment whose segment of the "
                           "plan's week is shown, with what should run in it: `now`, or an ISO 8601 date-time "
                           "with its offset (2026-11-30T10:00+01:00, ...Z)."),
) -> None:
    """Show the applied plan, each site and pool, the last run, and drift; with a timed plan, the current
    segment of its week and what should be running in it."""
    from hybridctl.operations.status import run_status
    from hybridctl.render.terminal import Terminal

    code = run_status(state=state, drift=drift, detailed_exitcode=detailed_exitcode, as_json=output_format is
                      StatusFormat.json, lock_timeout_s=parse_duration(lock_timeout), known_hosts=known_hosts,
                      ssh_key=ssh_key, view=Terminal(), at=at)
    if code:
        raise typer.Exit(code)




@app.command()
def destroy(
    site: str | None = typer.Option(None, "--site", help="Take down only this site's resources."),
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help=LOCK_HELP),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Destroy without asking for confirmation."),
    skip_cloud: bool = typer.Option(False, "--skip-cloud", help="Leave cloud stacks alone (they stay in the state)."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help=KNOWN_HOSTS_HELP),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP),
    parallelism: int = typer.Option(4, "--parallelism", min=1, max=64, help="Steps run at once, at most."),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="The inventory the state was applied "
                                          "from (default: the state's): only its stacks are destroyed."),
) -> None:
    """Take down what hybridctl made, in reverse dependency order; journaled and resumable like apply."""
    from hybridctl.operations.apply import run_destroy
    from hybridctl.render.terminal import Terminal

    code = run_destroy(site=site, state=state, lock_timeout_s=parse_duration(lock_timeout), auto_approve=auto_approve,
                       skip_cloud=skip_cloud, known_hosts=known_hosts, ssh_key=ssh_key, parallelism=parallelism,
                       view=Terminal(), inventory=inventory)
    if code:
        raise typer.Exit(code)

