"""failover, drill, runbook resume|rollback|show: incidents and the rehearsals for them.

`failover` replans the applied plan (from the state) with the events applied and prints the
runbook; with --execute it runs it through apply's executor, journal and drivers. With --plan
it rehearses from a plan file instead, reading no state and never executing. `drill` changes
nothing: it replans scenarios from a fresh plan (or --plan) and acts as a CI gate.

Exit codes: 0 done; 1 a drill gate failed, a step failed, or an input file is invalid;
2 bad arguments or event syntax; 3 state locked; 4 refused (nothing applied, no approval);
130 interrupted (resume with `hybridctl runbook resume`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.commands.moments import WEEK_HELP
from hybridctl.operations.common import SAFETY_SECONDS, ReportFormat

runbook_app = typer.Typer(name="runbook", help="Resume, roll back, abandon or show a failover runbook.",
                          no_args_is_help=True)
app.add_typer(runbook_app)

STATE_HELP = "State directory (default: $HYBRIDCTL_STATE, else ./.hybridctl/state)."
MANUAL_HELP = ("I did the runbook's manual steps (fencing a lost site, checking a cut link) myself: record them as "
               "done by me without asking. Skips those questions only; the journal records who and how.")
AUTO_HELP = "Approve every group of automated steps without asking (never a manual step: see --manual-steps-done)."


# core.failover.replan.DEFAULT_FAILOVER_MOVE_THRESHOLD_USD, written out so that --help needs no solver import
MOVE_THRESHOLD_USD = 10_000.0


@app.command()
def failover(
    events: list[str] = typer.Argument(..., metavar="EVENT", help="Events, e.g. `site-lost dc-fra`, `pool-lost P`, "
                                       "`capacity P=50%`, `price P=x3`, `spot-reclaim P`, `link-down SITE`."),
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="The inventory (default: the one the "
                                          "applied plan was applied from, as the state records it)."),
    output_format: ReportFormat = typer.Option(ReportFormat.markdown, "--format", "-f", help="Output format."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the runbook as JSON to this file."),
    execute: bool = typer.Option(False, "--execute", help="Run the runbook: a confirmation per group of steps, "
                                 "journaled, resumable with `hybridctl runbook resume`."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="With --execute: approve every group of "
                                      "automated steps without asking (never a manual step: see --manual-steps-done)."),
    manual_steps_done: bool = typer.Option(False, "--manual-steps-done", help=MANUAL_HELP),
    move_threshold_usd: float = typer.Option(MOVE_THRESHOLD_USD, "--move-threshold-usd", min=0.0,
                                             help="A replica that still has capacity moves only if that saves this "
                                                  "much per month."),
    time_limit: float = typer.Option(SAFETY_SECONDS, "--time-limit", min=0.1, help="A safety net only: stop the solver after this many seconds of wall time (its work is otherwise counted, so a failover never depends on the machine's load); a replan it cuts short says so."),
    skip_cloud: bool = typer.Option(False, "--skip-cloud", help="With --execute: skip the Pulumi steps."),
    bundles: Path | None = typer.Option(None, "--bundles", help="Signed model bundles, DIR/<workload>/: synced to "
                                        "the hosts that receive moved workloads."),
    bundle_public_key: Path | None = typer.Option(None, "--bundle-public-key", help="Key the bundles are signed with."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file for the hosts."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key for the hosts."),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help="Wait this long for the state lock (30s, 5m)."),
    parallelism: int = typer.Option(4, "--parallelism", min=1, max=64, help="Steps run at once, at most."),
    plan_file: Path | None = typer.Option(None, "--plan", help="Rehearse: fail over this plan file (with "
                                          "--inventory, the inventory it was made from) instead of the applied "
                                          "state. The same runbook, never executed; no state is read."),
    at: str = typer.Option("now", "--at", metavar="TIME", help="When the events strike: `now`, or an ISO 8601 "
                           "date-time with its offset (2026-11-27T02:30+01:00, ...Z). The runbook names the "
                           "segment of the plan's week its first steps act in, and the steps needed only later."),
) -> None:
    """Replan from the applied plan with the events applied, and print (or --execute) the runbook."""
    from hybridctl.commands.apply_cmds import parse_duration
    from hybridctl.operations.failover import ExecOptions, run_failover
    from hybridctl.operations.moments import parse_moment_within
    from hybridctl.render.terminal import Terminal

    moment = parse_moment_within(at, MOMENT_RANGE_DAYS,
                                 why="a failover acts now; a rehearsal names a moment within a year of now")
    code = run_failover(
        events, state=state, inventory=inventory, output_format=output_format.value, out=out, execute=execute,
        move_threshold_usd=move_threshold_usd, time_limit_s=time_limit,
        options=ExecOptions(auto_approve, skip_cloud, bundles, bundle_public_key, known_hosts, ssh_key,
                            parse_duration(lock_timeout), parallelism, manual_steps_done),
        view=Terminal(), plan_file=plan_file, at=moment)
    if code:
        raise typer.Exit(code)


# a failover happens now; a rehearsal names a moment of the past or the coming year, never further
MOMENT_RANGE_DAYS = 366


@app.command()
def drill(
    inventory: Path = typer.Argument(..., help="Inventory file or directory."),
    scenario: list[Path] = typer.Option([], "--scenario", "-s", help="A scenario file (repeatable)."),
    standard: bool = typer.Option(False, "--standard", help="The built-in scenarios: each site lost, each spot pool "
                                  "reclaimed, -50 % of each GPU type, spot prices x3, each edge link down "
                                  "(the default when no --scenario is given)."),
    output_format: ReportFormat = typer.Option(ReportFormat.table, "--format", "-f", help="Output format."),
    json_out: Path | None = typer.Option(None, "--json-out", help="Also write the JSON report to this file."),
    move_threshold_usd: float = typer.Option(MOVE_THRESHOLD_USD, "--move-threshold-usd", min=0.0,
                                             help="As for failover."),
    time_limit: float = typer.Option(SAFETY_SECONDS, "--time-limit", min=0.1, help="A safety net only, per replan: stop the solver after this many seconds of wall time (its work is otherwise counted); a replan it cuts short says so in its row."),
    plan_file: Path | None = typer.Option(None, "--plan", help="Drill from this plan file (made from INVENTORY) "
                                          "instead of a fresh plan: e.g. the plan that is about to be applied."),
    week: str | None = typer.Option(None, "--week", metavar="YYYY-Www", help=WEEK_HELP + " Not with --plan: "
                                    "a plan file's drill is for the plan's own week."),
) -> None:
    """Tabletop exercise: what each scenario would move, degrade and lose. Exit 1 when a fixed-tier workload
    would lose service or miss its rto_minutes."""
    from hybridctl.errors import UsageError
    from hybridctl.operations.drill import run_drill
    from hybridctl.operations.moments import parse_week
    from hybridctl.render.terminal import Terminal

    drill_week = parse_week(week)
    if drill_week is not None and plan_file is not None:
        raise UsageError("--week and --plan contradict each other: a drill from a plan file is for the plan's own week",
                         hint=f"drop --week, or make the plan for that week: hybridctl plan {inventory} --week {week} "
                              f"--out {plan_file}")
    code = run_drill(inventory, scenario, standard=standard or not scenario, output_format=output_format.value,
                     json_out=json_out, move_threshold_usd=move_threshold_usd, time_limit_s=time_limit,
                     view=Terminal(), plan_file=plan_file, week=drill_week)
    if code:
        raise typer.Exit(code)


@runbook_app.command("resume")
def resume(
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    auto_approve: bool = typer.Option(False, "--auto-approve", help=AUTO_HELP),
    manual_steps_done: bool = typer.Option(False, "--manual-steps-done", help=MANUAL_HELP),
    skip_cloud: bool = typer.Option(False, "--skip-cloud", help="Skip the Pulumi steps."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file for the hosts."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key for the hosts."),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help="Wait this long for the state lock."),
    parallelism: int = typer.Option(4, "--parallelism", min=1, max=64, help="Steps run at once, at most."),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="The inventory its steps are checked "
                                          "against (default: the state's)."),
    bundles: Path | None = typer.Option(None, "--bundles", help="The signed model bundles the failover was given: "
                                        "its model sync steps run only with them (verified again)."),
    bundle_public_key: Path | None = typer.Option(None, "--bundle-public-key", help="Key the bundles are signed with."),
) -> None:
    """Finish an interrupted or failed runbook: steps already done are not run again; every step left is checked
    against what the inventory and the runbook's plan make before any runs."""
    from hybridctl.commands.apply_cmds import parse_duration
    from hybridctl.operations.failover import ExecOptions, run_resume
    from hybridctl.render.terminal import Terminal

    code = run_resume(state, ExecOptions(auto_approve, skip_cloud, bundles, bundle_public_key, known_hosts, ssh_key,
                                         parse_duration(lock_timeout), parallelism, manual_steps_done), Terminal(),
                      inventory)
    if code:
        raise typer.Exit(code)


@runbook_app.command("rollback")
def rollback(
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="The inventory (default: the state's)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print the rollback runbook."),
    output_format: ReportFormat = typer.Option(ReportFormat.markdown, "--format", "-f", help="Output format."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help=AUTO_HELP),
    manual_steps_done: bool = typer.Option(False, "--manual-steps-done", help=MANUAL_HELP),
    skip_cloud: bool = typer.Option(False, "--skip-cloud", help="Skip the Pulumi steps."),
    bundles: Path | None = typer.Option(None, "--bundles", help="Signed model bundles, DIR/<workload>/."),
    bundle_public_key: Path | None = typer.Option(None, "--bundle-public-key", help="Key the bundles are signed with."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help="SSH known_hosts file for the hosts."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key for the hosts."),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help="Wait this long for the state lock."),
    parallelism: int = typer.Option(4, "--parallelism", min=1, max=64, help="Steps run at once, at most."),
) -> None:
    """Once the site is back: return to the plan that ran before the failover (checks the site first)."""
    from hybridctl.commands.apply_cmds import parse_duration
    from hybridctl.operations.failover import ExecOptions, run_rollback
    from hybridctl.render.terminal import Terminal

    code = run_rollback(state, inventory, dry_run=dry_run, output_format=output_format.value,
                        options=ExecOptions(auto_approve, skip_cloud, bundles, bundle_public_key, known_hosts,
                                            ssh_key, parse_duration(lock_timeout), parallelism, manual_steps_done), view=Terminal())
    if code:
        raise typer.Exit(code)


@runbook_app.command("abandon")
def abandon(
    reason: str = typer.Option(..., "--reason", help="Why it is abandoned: journaled, with who and what its steps "
                               "left changed."),
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    lock_timeout: str = typer.Option("0", "--lock-timeout", help="Wait this long for the state lock."),
) -> None:
    """End the unfinished runbook as it is: nothing is run or undone (`runbook rollback` undoes it instead)."""
    from hybridctl.commands.apply_cmds import parse_duration
    from hybridctl.operations.failover import ExecOptions, run_abandon
    from hybridctl.render.terminal import Terminal

    code = run_abandon(state, reason, ExecOptions(lock_timeout_s=parse_duration(lock_timeout)), Terminal())
    if code:
        raise typer.Exit(code)


@runbook_app.command("show")
def show(
    state: str | None = typer.Option(None, "--state", help=STATE_HELP),
    output_format: ReportFormat = typer.Option(ReportFormat.markdown, "--format", "-f", help="Output format."),
) -> None:
    """Show the runbook that is unfinished, or else the failover in effect."""
    from hybridctl.operations.failover import run_show
    from hybridctl.render.terminal import Terminal

    code = run_show(state, output_format.value, Terminal())
    if code:
        raise typer.Exit(code)
