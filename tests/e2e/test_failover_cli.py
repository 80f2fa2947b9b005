"""`hybridctl drill`, `failover` and `runbook` as subprocesses, against a real state directory and the
recording cloud double (HYBRIDCTL_CLOUD_DRIVER). Real SSH hosts: test_failover_hosts.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from hybridctl.paths import inventories_dir
from support.apply_cli import cli_env, write_inventory
from support.recording_cloud import RecordingCloud
from support.text import flat

# `hybridctl` with the apply and failover commands registered, whether or not app._register() lists them yet
_BOOT = ("import sys; import hybridctl.commands.apply_cmds, hybridctl.commands.failover_cmds; "
         "from hybridctl.commands.app import run; sys.argv[0] = 'hybridctl'; run()")


def argv(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", _BOOT, *map(str, args)]


def cli(*args: str | Path, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv(*args), env=cli_env(**env), cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, check=False)


def two_regions() -> dict[str, Any]:
    """On-prem (no hosts) and two cloud regions in two clusters; `api` runs in aws-a until aws-a is lost."""
    def region(name: str, price: float) -> dict[str, Any]:
        return {"name": name, "kind": "cloud", "provider": "aws", "region": f"eu-{name}", "cluster": f"k8s-{name}",
                "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
                "provision_minutes": 12 if name == "aws-a" else 15,
                "pools": [{"name": f"{name}-g6", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 16,
                           "capacity_type": "on_demand", "usd_per_gpu_hour": price}]}

    return {"version": 1, "name": "regions", "regions": ["eu-users"],
            "sites": [{"name": "dc", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
                       "latency_ms": {"eu-users": 10},
                       "pools": [{"name": "dc-l4", "gpu": "L4", "gpus": 2, "capacity_type": "reserved",
                                  "usd_per_gpu_hour": 0.4}]},
                      region("aws-a", 0.8), region("aws-b", 1.0)],
            "workloads": [{"name": "api", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                           "replicas": 4, "rto_minutes": 20, "model_gb": 10},
                          {"name": "ocr", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                           "sites": ["dc"]}]}


def enterprise_with_copies() -> dict[str, Any]:
    """The enterprise example without hosts, with a second data centre holding copies of the EU data as well
    (the example's own copies and survives_site_loss: false on the store cameras are kept)."""
    merged: dict[str, Any] = {}
    for path in sorted((inventories_dir() / "enterprise").glob("*.yaml")):
        for key, value in yaml.safe_load(path.read_text()).items():
            if isinstance(value, list):
                merged.setdefault(key, []).extend(value)
            else:
                merged[key] = value
    for site in merged["sites"]:
        site.pop("hosts", None)
    merged["sites"].insert(1, {
        "name": "dc-amsterdam", "kind": "onprem", "jurisdiction": "EU", "failure_domain": "ams",
        "egress_usd_per_gb": 0.01, "latency_ms": {"eu-users": 14, "us-users": 98}, "uplink_mbps": 20000,
        "pools": [{"name": "ams-l40s", "gpu": "L40S", "gpus": 16, "capacity_type": "reserved", "usd_per_gpu_hour": 0.8},
                  {"name": "ams-h100", "gpu": "H100", "gpus": 16, "capacity_type": "reserved",
                   "usd_per_gpu_hour": 2.0}]})
    copies = {"claims-2026": ["dc-amsterdam"], "patient-imaging": ["dc-amsterdam"],
              "customer-chats-eu": ["dc-amsterdam"], "customer-chats-us": ["edge-nyc-01"],
              "product-catalog": ["aws-eu-central-1"], "web-corpus": ["aws-eu-central-1"],
              "eval-benchmarks": ["aws-eu-central-1"]}
    for dataset in merged["datasets"]:
        if dataset["name"] in copies:
            dataset["copies"] = copies[dataset["name"]]
    for workload in merged["workloads"]:
        if workload["name"].startswith("store-vision-"):
            workload["survives_site_loss"] = False
    return merged


class Lab:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.inventory = write_inventory(root / "inventory.yaml", two_regions())
        self.state = root / "state"

    @property
    def cloud(self) -> RecordingCloud:
        return RecordingCloud(self.state / "recording-cloud")

    def ups(self) -> list[str]:
        return [str(c["stack"]) for c in self.cloud.calls() if c["operation"] == "up"]

    def store(self) -> StateStore:
        return StateStore(self.state)

    def run(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return cli(*args, "--state", self.state, cwd=self.root, **env)

    def applied(self) -> dict[str, Any]:
        plan = self.store().read().applied_plan
        assert plan is not None
        return {(p["workload"], p["pool"]): p["replicas"] for p in plan["placements"]}  # type: ignore[return-value]


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    lab = Lab(tmp_path)
    done = cli("apply", lab.inventory, "--state", lab.state, "--auto-approve", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert lab.applied() == {("api", "dc-l4"): 1, ("api", "aws-a-g6"): 3, ("ocr", "dc-l4"): 1}
    return lab


class TestDrill:
    def test_the_enterprise_example_passes_the_standard_drill(self, tmp_path: Path) -> None:
        # its replicated datasets have copies, and its store cameras go down with their store
        report_file = tmp_path / "drill.json"
        done = cli("drill", inventories_dir() / "enterprise", "--standard", "--json-out", report_file)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "drill passed" in flat(done.stdout)
        report = json.loads(report_file.read_text())
        assert report["format_version"] == 1 and report["passed"] is True and report["failed"] == []
        scenarios = {s["name"]: s for s in report["scenarios"]}
        assert "site-lost-dc-frankfurt" in scenarios and "spot-price-x3" in scenarios
        assert any(n.startswith("link-down-edge-") for n in scenarios)
        # every scenario built its runbook and its rollback
        assert all(s["runbook_problem"] is None for s in report["scenarios"])
        assert scenarios["site-lost-dc-frankfurt"]["runbook_steps"] > 0
        assert scenarios["site-lost-dc-frankfurt"]["rollback_steps"] > 0
        # a store's camera model goes down with its store: expected, reported, not a gate failure
        berlin = scenarios["site-lost-edge-berlin-01"]
        assert berlin["expected_losses"] == ["store-vision-berlin"]
        assert {
            k: v for k, v in berlin["lost"][0].items() if k != "reason"} == {"workload": "store-vision-berlin", "tier": "fixed", "expected_loss": True}
        assert "expected (fixed" in flat(done.stdout) or "fixed, expected" in flat(done.stdout)
        # data lost with its only holder: the workloads reading it are down for want of data
        paris = scenarios["site-lost-edge-paris-01"]
        finetune = next(x for x in paris["lost"] if x["workload"] == "vision-finetune-edge")
        assert finetune["reason"].startswith("data unavailable: every holder of dataset store-video-paris")

    def test_without_copies_a_lost_data_site_takes_its_readers_down(self, tmp_path: Path) -> None:
        document = enterprise_with_copies()
        for dataset in document["datasets"]:
            dataset.pop("copies", None)
        done = cli("drill", write_inventory(tmp_path / "enterprise.json", document), "--format", "json")
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        frankfurt = next(s for s in report["scenarios"] if s["name"] == "site-lost-dc-frankfurt")
        assert not frankfurt["passed"]
        assert "fraud-scoring (fixed) loses service: data unavailable: every holder of dataset claims-2026 " \
               "(dc-frankfurt) is lost" in frankfurt["gate_failures"]

    def test_the_example_scenario_file_runs_on_the_enterprise_example(self) -> None:
        done = cli("drill", inventories_dir() / "enterprise", "--scenario",
                   inventories_dir() / "scenarios" / "enterprise-drills.yaml", "--format", "json")
        report = json.loads(done.stdout)
        assert done.returncode == 0 and report["failed"] == [], done.stderr
        assert [s["name"] for s in report["scenarios"]] == ["frankfurt-dark", "eu-central-brownout",
                                                            "us-east-spot-storm", "h100-failures", "edge-region-cut"]
        dark = report["scenarios"][0]
        assert dark["events"] == ["site-lost dc-frankfurt", "capacity euc1-p5-spot=-75%", "price euc1-p5-spot=x2"]
        # revision 4: the burst work that would rent cloud H100s and A100s at more than twice what it paid waits
        # (policies.failover_max_price_ratio), so the scenario keeps within the monthly budget ($332,829.61 before)
        assert dark["budget_problem"] is None
        held = {x["workload"] for x in dark["lost"] if "policies.failover_max_price_ratio 2" in x["reason"]}
        assert held == {"llm-pretrain", "support-llm-finetune-eu", "ablation-sweeps"}
        # support chat reads its EU data from the copy at dc-munich-dr: it keeps running
        assert "support-chat-eu" not in {x["workload"] for x in dark["lost"]}
        # the imaging data lives at dc-frankfurt alone: what trains on it is down (burst: reported, not gated)
        imaging = next(x for x in dark["lost"] if x["workload"] == "imaging-train")
        assert imaging["reason"].startswith("data unavailable: every holder of dataset patient-imaging")

    def test_a_fixed_workload_that_loses_service_fails_the_gate(self, tmp_path: Path) -> None:
        document = two_regions()
        document["workloads"][1]["rto_minutes"] = 5
        inventory = write_inventory(tmp_path / "inv.yaml", document)
        done = cli("drill", inventory, "--format", "json")
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        failed = {s["name"]: s["gate_failures"] for s in report["scenarios"] if not s["passed"]}
        assert failed == {"site-lost-dc": ["ocr (fixed) loses service: no eligible pool left: every pool it may use "
                                           "has lost its capacity; it ran in dc-l4 (site-lost dc)"]}

    def test_scenario_files_and_their_errors(self, tmp_path: Path) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", two_regions())
        good = tmp_path / "good.yaml"
        good.write_text("version: 1\nscenarios:\n  - name: both-regions\n    events: [site-lost aws-a, "
                        "capacity aws-b-g6=50%]\n")
        done = cli("drill", inventory, "--scenario", good, "--format", "markdown")
        assert done.returncode == 0, done.stderr
        assert "`both-regions`" in done.stdout and "✅ passed" in done.stdout
        bad = tmp_path / "bad.yaml"
        bad.write_text("version: 1\nscenarios:\n  - name: typo\n    events:\n      - site-lost aws-c\n")
        done = cli("drill", inventory, "--scenario", bad)
        assert done.returncode == 1
        assert f"{bad}:5:9" in flat(done.stderr) and "did you mean 'aws-" in flat(done.stderr)
        assert flat(done.stderr).count("bad.yaml:5:9") == 1


class TestFailoverRefusals:
    def test_nothing_applied(self, tmp_path: Path) -> None:
        done = cli("failover", "site-lost", "aws-a", "--state", tmp_path / "state",
                   "--inventory", write_inventory(tmp_path / "inv.yaml", two_regions()))
        assert done.returncode == 4 and "nothing is applied" in flat(done.stderr)

    def test_event_syntax_and_unknown_sites_are_usage_errors(self, lab: Lab) -> None:
        done = lab.run("failover", "capacity", "aws-a-g6")
        assert done.returncode == 2 and "'capacity aws-a-g6' is malformed" in flat(done.stderr)
        done = lab.run("failover", "site-lost", "aws-c")
        assert done.returncode == 2 and "did you mean 'aws-" in flat(done.stderr)

    def test_an_inventory_changed_since_the_apply_is_noted(self, lab: Lab) -> None:
        done = lab.run("failover", "site-lost", "aws-a")
        assert done.returncode == 0 and "the inventory has changed" not in flat(done.stderr), done.stderr
        changed = two_regions()
        changed["workloads"][0]["rto_minutes"] = 30
        write_inventory(lab.inventory, changed)
        done = lab.run("failover", "site-lost", "aws-a")
        assert done.returncode == 0, done.stderr
        assert "note: the inventory has changed since the applied plan was made" in flat(done.stderr)

    def test_execute_without_a_terminal_needs_auto_approve(self, lab: Lab) -> None:
        done = lab.run("failover", "site-lost", "aws-a", "--execute")
        assert done.returncode == 4 and "--auto-approve" in flat(done.stderr)
        assert lab.store().read().pending is None


def _ocr_price(document: dict[str, Any]) -> None:
    document["sites"][0]["pools"][0]["usd_per_gpu_hour"] = 0.85


def _ocr_removed(document: dict[str, Any]) -> None:
    document["workloads"].pop(1)


def _ocr_two_gpus(document: dict[str, Any]) -> None:
    document["workloads"][1]["gpu"]["count"] = 2


class TestAnInventoryEditedSinceTheApply:
    """What the edit no longer supports is replanned with what the lost site displaces: before, the pinned
    placements kept the applied plan's prices and shapes, and the checker refused the failover plan (exit 70)."""

    @pytest.mark.parametrize(("edit", "ocr"), [(_ocr_price, [("dc-l4", 1, 620.5)]), (_ocr_removed, []),
                                               (_ocr_two_gpus, [("dc-l4", 2, 584.0)])],
                             ids=["pool-price", "workload-removed", "workload-gpus"])
    def test_the_failover_plan_keeps_to_the_inventory_as_it_is_now(self, lab: Lab, edit: Any,
                                                                    ocr: list[tuple[str, int, float]]) -> None:
        document = two_regions()
        edit(document)
        write_inventory(lab.inventory, document)
        done = lab.run("failover", "site-lost", "aws-a", "--format", "json")
        assert done.returncode == 0, done.stderr
        assert "the inventory has changed since the applied plan was made" in flat(done.stderr)
        after = json.loads(done.stdout)["after_plan"]["placements"]
        assert [(p["pool"], p["gpus"], p["usd_per_month"]) for p in after if p["workload"] == "ocr"] == ocr

    def test_executed_it_leaves_the_applied_plan_of_the_inventory_as_it_is_now(self, lab: Lab) -> None:
        document = two_regions()
        _ocr_removed(document)
        write_inventory(lab.inventory, document)
        done = lab.run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done")
        assert done.returncode == 0, done.stdout + done.stderr
        # the GPU ocr held on dc-l4 is free now: api takes it, and needs one replica fewer in aws-b
        assert lab.applied() == {("api", "dc-l4"): 2, ("api", "aws-b-g6"): 2}


class TestFailoverLoop:
    def test_dry_run_changes_nothing(self, lab: Lab) -> None:
        ups, serial = lab.ups(), lab.store().read().serial
        done = lab.run("failover", "site-lost", "aws-a", "--format", "json")
        assert done.returncode == 0, done.stderr
        runbook = json.loads(done.stdout)
        assert runbook["format_version"] == 1 and runbook["kind"] == "failover"
        assert [s["id"] for s in runbook["steps"]] == ["confirm/contain", "manual/fence/aws-a", "confirm/capacity",
                                                       "cloud-pools/aws-b", "confirm/admission",
                                                       "cluster-queues/k8s-aws-b"]
        # the lost region's stacks are left alone (their teardown waits): rollback brings them back
        assert [d["step_id"] for d in runbook["deferred"]] == ["destroy/cluster-queues/k8s-aws-a",
                                                               "destroy/cloud-pools/aws-a"]
        api = next(w for w in runbook["workloads"] if w["workload"] == "api")
        # one replica kept serving on dc-l4; the three from aws-a start in aws-b: 15 min + 10 GB at no uplink limit
        assert api["status"] == "moved" and api["after"] == {"aws-b-g6": 3, "dc-l4": 1}
        assert api["outage_minutes"] is None and api["recovery_minutes"] == 15.0 and api["meets_rto"] is True
        # 3 replicas × 730 h × ($1.00 - $0.80)
        assert runbook["summary"]["usd_per_month_delta"] == pytest.approx(438.0)
        assert lab.ups() == ups and lab.store().read().serial == serial

    def test_execute_then_roll_back(self, lab: Lab) -> None:
        original = lab.applied()
        done = lab.run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done")
        assert done.returncode == 0, done.stdout + done.stderr
        assert lab.applied() == {("api", "dc-l4"): 1, ("api", "aws-b-g6"): 3, ("ocr", "dc-l4"): 1}
        assert lab.ups()[-2:] == ["regions-aws-b", "regions-k8s-aws-b"]  # nothing was sent to the lost region
        assert "runbook rollback" in flat(done.stdout)
        state = lab.store().read()
        assert state.last_run is not None and state.last_run.operation == "runbook"
        shown = lab.run("runbook", "show", "--format", "json")
        assert json.loads(shown.stdout)["events"] == ["site-lost aws-a"]

        back = lab.run("runbook", "rollback", "--auto-approve")
        assert back.returncode == 0, back.stdout + back.stderr
        assert lab.applied() == original
        assert lab.ups()[-2:] == ["regions-aws-a", "regions-k8s-aws-a"] or \
            sorted(lab.ups()[-4:]) == ["regions-aws-a", "regions-aws-b", "regions-k8s-aws-a", "regions-k8s-aws-b"]
        again = lab.run("runbook", "rollback", "--auto-approve")
        assert again.returncode == 4 and "no failover is in effect" in flat(again.stderr)
        assert journal_problems(lab.store().journal.records()) == []

    def test_a_killed_runbook_resumes_without_repeating_done_steps(self, lab: Lab) -> None:
        process = subprocess.Popen(argv("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                                        "--state", lab.state),
                                   env=cli_env(HYBRIDCTL_RECORDING_CLOUD_DELAY_S="1.5"), cwd=lab.root,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        journal = lab.store().journal
        deadline = time.monotonic() + 120
        while not any(r.event == JournalEvent.STEP_DONE and r.step == "cloud-pools/aws-b" for r in journal.records()):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the runbook never finished its first cloud step"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)  # halfway: the queues step is still to come
        process.communicate()
        pending = lab.store().read().pending
        assert pending is not None and pending.operation == "runbook"
        ups = lab.ups()
        assert ups.count("regions-aws-b") == 1

        resumed = lab.run("runbook", "resume", "--auto-approve")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "already-done" in flat(resumed.stdout) or "done in an earlier run" in flat(resumed.stdout)
        assert lab.ups().count("regions-aws-b") == 1  # not repeated
        assert lab.ups()[-1] == "regions-k8s-aws-b"
        assert lab.store().read().pending is None
        assert lab.applied() == {("api", "dc-l4"): 1, ("api", "aws-b-g6"): 3, ("ocr", "dc-l4"): 1}
        nothing = lab.run("runbook", "resume", "--auto-approve")
        assert nothing.returncode == 0 and "nothing to resume" in flat(nothing.stdout)


class TestApplyDoesNotUndoAFailover:
    """apply refuses (exit 4) to put work back on a fenced site, unless the failover is ended explicitly."""

    def test_after_a_completed_failover(self, lab: Lab) -> None:
        assert lab.run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done").returncode == 0
        after_failover = lab.applied()
        refused = lab.run("apply", lab.inventory, "--auto-approve")
        assert refused.returncode == 4, refused.stdout + refused.stderr
        said = flat(refused.stderr)
        assert "is in effect; applying now would undo it without a rollback" in said
        assert "api: aws-b-g6×3, dc-l4×1 → aws-a-g6×3, dc-l4×1" in said, said  # what would move back
        assert "hybridctl runbook rollback" in said and "--end-failover" in said
        assert lab.applied() == after_failover
        assert json.loads(lab.run("runbook", "show", "--format", "json").stdout)["events"] == ["site-lost aws-a"]

        ended = lab.run("apply", lab.inventory, "--auto-approve", "--end-failover", "--allow-machine-removal")
        assert ended.returncode == 0, ended.stdout + ended.stderr
        assert lab.applied() == {("api", "dc-l4"): 1, ("api", "aws-a-g6"): 3, ("ocr", "dc-l4"): 1}
        assert "no failover is in effect" in lab.run("runbook", "show").stdout

    def test_while_a_runbook_is_unfinished(self, lab: Lab) -> None:
        failed = lab.run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                         HYBRIDCTL_RECORDING_CLOUD_FAIL="regions-aws-b")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        pending = lab.store().read().pending
        assert pending is not None and pending.operation == "runbook"
        refused = lab.run("apply", lab.inventory, "--auto-approve")
        assert refused.returncode == 4, refused.stdout + refused.stderr
        assert "is unfinished" in flat(refused.stderr) and "runbook resume" in flat(refused.stderr)
        assert lab.store().read().pending == pending  # not abandoned


class TestConfirmation:
    """Each group opens with a confirmation; a decline stops the runbook where it is (resume asks again)."""

    @staticmethod
    def gate() -> Any:
        from hybridctl.core.deploy.steps import make_step

        return make_step("confirm/capacity", "runbook-confirm", "confirm: bring capacity into service",
                         {"group": "capacity", "title": "Bring capacity into service", "steps": ["cloud-pools/a"]})

    def run(self, monkeypatch: pytest.MonkeyPatch, answer: bool, auto_approve: bool = False) -> Any:
        import threading

        import typer
        from hybridctl.executor import StepContext
        from hybridctl.operations.failover import ExecOptions, _confirm_runner
        from hybridctl.render.terminal import Terminal
        from rich.console import Console

        asked: list[str] = []
        monkeypatch.setattr(typer, "confirm", lambda question, default=False: asked.append(question) or answer)
        step = self.gate()
        outcome = _confirm_runner(ExecOptions(auto_approve=auto_approve), Terminal(out=Console(file=open(os.devnull, "w"))))(  # noqa: SIM115
            step, StepContext(step, threading.Event(), lambda message: None))
        return outcome, asked

    def test_approved(self, monkeypatch: pytest.MonkeyPatch) -> None:
        outcome, asked = self.run(monkeypatch, True)
        assert outcome.status.value == "done" and outcome.detail["how"] == "asked on the terminal"
        assert asked == ["Go ahead?"]

    def test_declined(self, monkeypatch: pytest.MonkeyPatch) -> None:
        outcome, _ = self.run(monkeypatch, False)
        assert outcome.status.value == "failed" and "runbook resume" in (outcome.error or "")

    def test_auto_approved_without_asking(self, monkeypatch: pytest.MonkeyPatch) -> None:
        outcome, asked = self.run(monkeypatch, False, auto_approve=True)
        assert outcome.status.value == "done" and asked == []
        assert outcome.detail["how"] == "--auto-approve" and "@" in str(outcome.detail["approved_by"])


def test_the_cli_default_move_threshold_is_the_core_default() -> None:
    from hybridctl.commands.failover_cmds import MOVE_THRESHOLD_USD
    from hybridctl.core.failover.replan import DEFAULT_FAILOVER_MOVE_THRESHOLD_USD

    assert MOVE_THRESHOLD_USD == DEFAULT_FAILOVER_MOVE_THRESHOLD_USD


class TestRehearsal:
    """`failover --plan` and `drill --plan`: from a plan file, no state; the runbook an applied state gives."""

    def test_the_rehearsed_runbook_is_the_applied_states_runbook(self, tmp_path: Path) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", two_regions())
        plan_file = tmp_path / "plan.json"
        assert cli("plan", inventory, "--out", plan_file).returncode in (0, 2)
        # one moment for both (`at` says when the runbook acts; the default, now, differs between the runs)
        at = datetime.now(UTC).replace(microsecond=0).isoformat()
        rehearsed = cli("failover", "site-lost", "aws-a", "--plan", plan_file, "-i", inventory, "--format", "json",
                        "--at", at, cwd=tmp_path)
        assert rehearsed.returncode == 0, rehearsed.stderr
        assert not (tmp_path / ".hybridctl").exists()  # no state was made or read
        state = tmp_path / "state"
        applied = cli("apply", plan_file, "--inventory", inventory, "--state", state, "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        real = cli("failover", "site-lost", "aws-a", "--state", state, "--format", "json", "--at", at)
        assert real.returncode == 0, real.stderr
        mine, theirs = json.loads(rehearsed.stdout), json.loads(real.stdout)
        assert mine.pop("base_serial") is None and theirs.pop("base_serial") == 1
        # a real failover is an incident of its own (its id covers the state serial, issue 46); a rehearsal is none
        assert mine.pop("incident") != theirs.pop("incident") and mine.pop("id") != theirs.pop("id")
        for document in (mine, theirs):  # the confirmations and manual steps name their incident
            document.pop("steps_digest", None)
            for step in document["steps"]:
                if step["kind"] in ("runbook-confirm", "runbook-manual"):
                    step["params"].pop("incident")
                    step.pop("digest")
                    step.pop("key", None)
        assert mine == theirs and mine["steps"]  # same steps, digests, plans, impacts

    def test_execute_is_refused_and_the_inventory_must_be_the_plans(self, tmp_path: Path) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", two_regions())
        plan_file = tmp_path / "plan.json"
        cli("plan", inventory, "--out", plan_file)
        done = cli("failover", "site-lost", "aws-a", "--plan", plan_file, "-i", inventory, "--execute",
                   "--auto-approve")
        assert done.returncode == 2 and "cannot be executed" in flat(done.stderr)
        other = two_regions()
        other["workloads"][1]["replicas"] = 2
        changed = write_inventory(tmp_path / "other.yaml", other)
        done = cli("failover", "site-lost", "aws-a", "--plan", plan_file, "-i", changed)
        assert done.returncode == 4 and "made from another inventory" in flat(done.stderr)
        done = cli("failover", "site-lost", "aws-a", "--plan", plan_file)
        assert done.returncode == 2 and "--plan needs --inventory" in flat(done.stderr)

    def test_drill_from_a_plan_file(self, tmp_path: Path) -> None:
        inventory = write_inventory(tmp_path / "inv.yaml", two_regions())
        plan_file = tmp_path / "plan.json"
        cli("plan", inventory, "--out", plan_file)
        from_plan = cli("drill", inventory, "--plan", plan_file, "--format", "json")
        report = json.loads(from_plan.stdout)
        assert from_plan.returncode == 1 and report["failed"] == ["site-lost-dc"], from_plan.stderr  # ocr: dc only
        assert report["usd_per_month_base"] == json.loads(plan_file.read_text())["total_usd_per_month"]
        assert {s["name"] for s in report["scenarios"]} >= {"site-lost-aws-a", "site-lost-dc"}
        other = two_regions()
        other["workloads"][1]["replicas"] = 2
        done = cli("drill", write_inventory(tmp_path / "other.yaml", other), "--plan", plan_file)
        assert done.returncode == 4 and "made from another inventory" in flat(done.stderr)
