"""The Pulumi driver: prerequisite checks, config and event translation, and its Automation API
conversation, played against a stand-in `pulumi` executable (the real engine is not installable here)."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hybridctl.drivers import pulumi as driver_mod
from hybridctl.drivers.pulumi import (
    CloudDriver,
    PulumiDriver,
    Secret,
    StackEvent,
    StackResult,
    StackSpec,
    backend_url,
    check_aws_credentials,
    check_credentials,
    check_pulumi_cli,
    flatten_config,
    parse_version,
    passphrase_env,
    translate_event,
)
from hybridctl.errors import ExitCode, HybridctlError, PrerequisiteError, StateLockedError
from pulumi.automation import EngineEvent

FAKE_CLI = Path(__file__).resolve().parent / "fake_pulumi_cli.py"
PASSPHRASE = "correct-horse-battery-staple"


def write_script(bin_dir: Path, body: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "pulumi"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


class TestPulumiCliCheck:
    def test_missing_cli_is_a_prerequisite_error_with_install_hint(self, tmp_path: Path) -> None:
        with pytest.raises(PrerequisiteError, match="not installed") as err:
            check_pulumi_cli({"PATH": str(tmp_path)})
        assert err.value.exit_code == ExitCode.USAGE
        assert int(err.value.exit_code) == 2
        assert err.value.hint is not None and "get.pulumi.com" in err.value.hint

    def test_empty_path_is_a_missing_cli(self) -> None:
        with pytest.raises(PrerequisiteError, match="not installed"):
            check_pulumi_cli({"PATH": ""})

    def test_too_old_cli_is_refused_with_install_hint(self, tmp_path: Path) -> None:
        write_script(tmp_path / "bin", "echo v3.0.0")
        with pytest.raises(PrerequisiteError, match=r"is 3\.0\.0; hybridctl needs 3\.120\.0") as err:
            check_pulumi_cli({"PATH": str(tmp_path / "bin")})
        assert err.value.hint is not None and "pulumi.com/docs/install" in err.value.hint

    def test_unreadable_version_is_refused(self, tmp_path: Path) -> None:
        write_script(tmp_path / "bin", "echo 'something else'")
        with pytest.raises(PrerequisiteError, match="could not read the version"):
            check_pulumi_cli({"PATH": str(tmp_path / "bin")})

    def test_failing_version_command_is_refused(self, tmp_path: Path) -> None:
        write_script(tmp_path / "bin", "echo v3.200.0; exit 1")
        with pytest.raises(PrerequisiteError, match="could not read the version"):
            check_pulumi_cli({"PATH": str(tmp_path / "bin")})

    def test_new_enough_cli_passes(self, tmp_path: Path) -> None:
        script = write_script(tmp_path / "bin", "echo v3.205.1")
        assert check_pulumi_cli({"PATH": str(tmp_path / "bin")}) == (script, (3, 205, 1))

    @pytest.mark.parametrize(
        ("text", "version"),
        [("v3.272.0\n", (3, 272, 0)), ("3.120.0", (3, 120, 0)), ("v3.150.0-dev.0+g1234", (3, 150, 0)), ("dev", None)],
    )
    def test_parse_version(self, text: str, version: tuple[int, int, int] | None) -> None:
        assert parse_version(text) == version

    def test_driver_refuses_before_touching_any_state(self, tmp_path: Path) -> None:
        driver = PulumiDriver(tmp_path / "state", env={"PATH": "", driver_mod.PASSPHRASE_ENV: PASSPHRASE})
        with pytest.raises(PrerequisiteError, match="not installed"):
            driver.preview(StackSpec("aws-gpu-pools", "acme-aws-us-east-1", {}))
        assert not (tmp_path / "state").exists()


class TestPassphrase:
    def test_from_the_hybridctl_variable(self) -> None:
        assert passphrase_env({driver_mod.PASSPHRASE_ENV: PASSPHRASE}) == {"PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}

    def test_from_pulumis_standard_variable(self) -> None:
        assert passphrase_env({"PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}) == {"PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}

    def test_from_a_file(self, tmp_path: Path) -> None:
        secret_file = tmp_path / "passphrase"
        secret_file.write_text(PASSPHRASE)
        assert passphrase_env({"PULUMI_CONFIG_PASSPHRASE_FILE": str(secret_file)}) == {
            "PULUMI_CONFIG_PASSPHRASE_FILE": str(secret_file)
        }

    def test_a_missing_file_is_a_prerequisite_error(self, tmp_path: Path) -> None:
        with pytest.raises(PrerequisiteError, match="not a readable file"):
            passphrase_env({"PULUMI_CONFIG_PASSPHRASE_FILE": str(tmp_path / "nope")})

    def test_none_is_a_prerequisite_error_naming_both_options(self) -> None:
        with pytest.raises(PrerequisiteError) as err:
            passphrase_env({})
        assert err.value.hint is not None
        assert "HYBRIDCTL_PULUMI_PASSPHRASE" in err.value.hint and "PULUMI_CONFIG_PASSPHRASE_FILE" in err.value.hint


class TestCloudCredentials:
    def test_no_aws_source_is_a_prerequisite_error(self, tmp_path: Path) -> None:
        with pytest.raises(PrerequisiteError, match="no AWS credentials") as err:
            check_aws_credentials({}, tmp_path)
        assert err.value.hint is not None and "AWS_PROFILE" in err.value.hint

    @pytest.mark.parametrize(
        "env",
        [
            {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"},
            {"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/r"},
            {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"},
        ],
    )
    def test_environment_sources_pass(self, env: dict[str, str], tmp_path: Path) -> None:
        check_aws_credentials(env, tmp_path)

    def test_an_access_key_without_its_secret_is_not_enough(self, tmp_path: Path) -> None:
        with pytest.raises(PrerequisiteError):
            check_aws_credentials({"AWS_ACCESS_KEY_ID": "AKIA"}, tmp_path)

    def test_shared_files_pass(self, tmp_path: Path) -> None:
        (tmp_path / ".aws").mkdir()
        (tmp_path / ".aws" / "config").write_text("[default]\nregion = us-east-1\n")
        check_aws_credentials({}, tmp_path)

    def test_the_check_follows_the_stacks_project(self, tmp_path: Path) -> None:
        with pytest.raises(PrerequisiteError, match="AWS"):
            check_credentials(StackSpec("aws-gpu-pools", "s", {}), {}, tmp_path)
        # The queues stacks reach EKS with `aws eks get-token`: AWS credentials and the AWS CLI.
        with pytest.raises(PrerequisiteError, match="AWS"):
            check_credentials(StackSpec("k8s-queues", "s", {}), {}, tmp_path)
        keys = {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s", "PATH": str(tmp_path / "bin")}
        with pytest.raises(PrerequisiteError, match="AWS CLI"):
            check_credentials(StackSpec("k8s-queues", "s", {}), keys, tmp_path)
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "aws").write_text("#!/bin/sh\n")
        (tmp_path / "bin" / "aws").chmod(0o755)
        check_credentials(StackSpec("k8s-queues", "s", {}), keys, tmp_path)


class TestConfigFlattening:
    def test_plain_keys_go_in_the_hybridctl_namespace_and_provider_keys_stay(self) -> None:
        flat = flatten_config({"site": "aws-us-east-1", "aws:region": "us-east-1"})
        assert flat == {"hybridctl:site": ("aws-us-east-1", False), "aws:region": ("us-east-1", False)}

    def test_structured_values_become_json_the_program_can_read_back(self) -> None:
        pools = [{"name": "p5-spot", "minSize": 0, "maxSize": 8}]
        flat = flatten_config({"nodePools": pools, "multi": {"b": [1, 2], "a": True}, "count": 3})
        assert json.loads(flat["hybridctl:nodePools"][0]) == pools
        assert flat["hybridctl:multi"] == ('{"a":true,"b":[1,2]}', False)
        assert flat["hybridctl:count"] == ("3", False)

    def test_secrets_are_flagged_and_never_shown(self) -> None:
        secret = Secret("hunter2")
        assert flatten_config({"token": secret}) == {"hybridctl:token": ("hunter2", True)}
        assert "hunter2" not in repr(secret) and "hunter2" not in str(secret)
        assert "hunter2" not in repr(StackSpec("k8s-queues", "s", {"token": secret}))


def engine_event(**fields: Any) -> Any:
    return EngineEvent.from_json({"sequence": 1, "timestamp": 0, **fields})


URN = "urn:pulumi:acme-aws-us-east-1::hybridctl-aws-gpu-pools::aws:eks/nodeGroup:NodeGroup::p5-spot"


class TestEventTranslation:
    @pytest.mark.parametrize(
        ("key", "status"), [("resourcePreEvent", "started"), ("resOutputsEvent", "done"), ("resOpFailedEvent", "failed")]
    )
    def test_resource_events_become_stack_events(self, key: str, status: str) -> None:
        meta = {"op": "create", "urn": URN, "type": "aws:eks/nodeGroup:NodeGroup", "provider": ""}
        event = translate_event("acme-aws-us-east-1", engine_event(**{key: {"metadata": meta}}))
        assert event == StackEvent("acme-aws-us-east-1", URN, "aws:eks/nodeGroup:NodeGroup", "p5-spot", "create", status)

    def test_error_diagnostics_carry_their_message(self) -> None:
        diag = {"message": "  creating EKS Node Group: AccessDenied\n", "color": "never", "severity": "error", "urn": URN}
        event = translate_event("s", engine_event(diagnosticEvent=diag))
        assert event is not None and event.status == "diagnostic" and event.message == "creating EKS Node Group: AccessDenied"

    @pytest.mark.parametrize(
        "fields",
        [
            {"resourcePreEvent": {"metadata": {"op": "create", "type": "pulumi:pulumi:Stack", "urn": "urn:x::Stack::s"}}},
            {"resourcePreEvent": {"metadata": {"op": "create", "type": "pulumi:providers:aws", "urn": "urn:x::aws::default"}}},
            {"stdoutEvent": {"message": "Updating", "color": "never"}},
            {"diagnosticEvent": {"message": "info", "color": "never", "severity": "info", "urn": URN}},
            {"summaryEvent": {"resourceChanges": {"create": 1}}},
        ],
    )
    def test_engine_bookkeeping_is_not_shown(self, fields: dict[str, Any]) -> None:
        assert translate_event("s", engine_event(**fields)) is None


class TestStackResult:
    def test_only_same_means_no_changes(self) -> None:
        assert not StackResult("p", "s", "preview", {"same": 4}).has_changes
        assert StackResult("p", "s", "preview", {"same": 4, "update": 1}).has_changes

    def test_backend_defaults_to_a_file_backend_under_the_state_dir(self, tmp_path: Path) -> None:
        assert backend_url(tmp_path) == f"file://{tmp_path.resolve()}/pulumi"
        assert backend_url(tmp_path, "s3://bucket/prefix") == "s3://bucket/prefix"


# --- against the stand-in CLI --------------------------------------------------------------------


@dataclass
class FakeCli:
    root: Path  # <root>/bin/pulumi
    state: Path

    def calls(self) -> list[dict[str, Any]]:
        path = self.state / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def commands(self) -> list[list[str]]:
        return [[a for a in c["argv"] if a != "--non-interactive"] for c in self.calls()]

    def stack_state(self, name: str) -> dict[str, Any]:
        return dict(json.loads((self.state / "state.json").read_text())["stacks"][name])


@pytest.fixture
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCli]:
    root = tmp_path / "pulumi-cli"
    write_script(root / "bin", f'exec "{sys.executable}" "{FAKE_CLI}" "$@"')
    state = tmp_path / "fake-state"
    state.mkdir()
    monkeypatch.setenv("FAKE_PULUMI_STATE", str(state))
    yield FakeCli(root, state)


def make_driver(tmp_path: Path, fake: FakeCli) -> PulumiDriver:
    env = {"PATH": f"{fake.root / 'bin'}:/usr/bin:/bin", driver_mod.PASSPHRASE_ENV: PASSPHRASE}
    return PulumiDriver(tmp_path / "state", env=env)


POOLS = [{"name": "p5-on-demand", "minSize": 1}, {"name": "p5-spot", "minSize": 0}]
SPEC = StackSpec("aws-gpu-pools", "acme-aws-us-east-1", {"aws:region": "us-east-1", "site": "aws-us-east-1", "nodePools": POOLS})


class TestDriverConversation:
    def test_preview_creates_the_stack_sets_config_and_streams_events(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        seen: list[StackEvent] = []
        result = driver.preview(SPEC, seen.append)

        assert result.summary == {"create": 3}
        assert [(c.name, c.op) for c in result.changes] == [("gpu-nodes", "create"), ("p5-on-demand", "create"), ("p5-spot", "create")]
        assert [(e.name, e.status) for e in seen] == [("gpu-nodes", "started"), ("p5-on-demand", "started"), ("p5-spot", "started")]
        stack = fake_cli.stack_state("acme-aws-us-east-1")
        assert stack["secrets_provider"] == "passphrase"
        assert json.loads(stack["config"]["hybridctl:nodePools"]["value"]) == POOLS
        assert stack["config"]["aws:region"] == {"value": "us-east-1", "secret": False}

    def test_runs_a_working_copy_with_this_interpreter_and_the_file_backend(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        make_driver(tmp_path, fake_cli).preview(SPEC)
        # One working copy per stack: concurrent steps never share one.
        work_dir = tmp_path / "state" / "pulumi" / "projects" / "aws-gpu-pools" / "acme-aws-us-east-1"
        (preview,) = [c for c in fake_cli.calls() if "preview" in c["argv"]]
        assert Path(preview["cwd"]) == work_dir
        assert preview["env"]["PULUMI_BACKEND_URL"] == f"file://{(tmp_path / 'state' / 'pulumi').resolve()}"
        assert preview["env"]["PULUMI_PYTHON_CMD"] == sys.executable
        assert preview["env"]["passphrase_set"] is True
        settings = yaml.safe_load((work_dir / "Pulumi.yaml").read_text())
        assert settings["name"] == "hybridctl-aws-gpu-pools"
        assert settings["runtime"] == {"name": "python", "options": {"toolchain": "pip"}}
        assert {"__main__.py", "gpu_pools.py", "pools_config.py", "requirements.txt"} <= {p.name for p in work_dir.iterdir()}

    def test_the_queues_copy_carries_the_vendored_device_plugin(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        spec = StackSpec("k8s-queues", "acme-ml-use1", {"clusterName": "ml-use1"})
        make_driver(tmp_path, fake_cli).preview(spec)
        copy = tmp_path / "state" / "pulumi" / "projects" / "k8s-queues" / "acme-ml-use1"
        assert (copy / "vendor" / "nvidia-device-plugin" / "nvidia-device-plugin.yml").is_file()

    def test_the_passphrase_never_reaches_the_command_line(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        make_driver(tmp_path, fake_cli).up(SPEC)
        assert fake_cli.calls()
        assert all(PASSPHRASE not in json.dumps(call) for call in fake_cli.calls())

    def test_up_applies_and_a_second_preview_sees_no_changes(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        applied = driver.up(SPEC)
        # what hybridctl decides: the stack it updates and the configuration it sets there
        (up,) = [c for c in fake_cli.commands() if c[0] == "up"]
        assert up[up.index("--stack") + 1] == SPEC.stack_name and "--yes" in up
        (set_all,) = [c for c in fake_cli.commands() if c[:2] == ["config", "set-all"]]
        assert [a for a in set_all if "=" in a] == [
            "aws:region=us-east-1", "hybridctl:site=aws-us-east-1",
            'hybridctl:nodePools=[{"minSize":1,"name":"p5-on-demand"},{"minSize":0,"name":"p5-spot"}]']
        # what the engine reports is handed on as it is, not made up: the summary and the outputs
        stack = fake_cli.stack_state(SPEC.stack_name)
        assert applied.summary == stack["history"][-1]["resourceChanges"]
        assert applied.outputs == stack["outputs"] and applied.outputs
        again = driver.preview(SPEC)
        assert again.summary == {"same": 3} and not again.has_changes and again.changes == ()

    def test_dropped_config_keys_are_removed_from_the_stack(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        driver.preview(StackSpec(SPEC.project, SPEC.stack_name, {**SPEC.config, "subnetIds": ["subnet-1"]}))
        result = driver.preview(SPEC)
        (removal,) = [c for c in fake_cli.commands() if c[:2] == ["config", "rm-all"]]
        assert "hybridctl:subnetIds" in removal and "hybridctl:nodePools" not in removal
        assert "hybridctl:subnetIds" not in fake_cli.stack_state(SPEC.stack_name)["config"]
        assert result.summary == {"create": 3}

    def test_a_shrunk_plan_previews_the_deletion(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        driver.up(SPEC)
        smaller = StackSpec(SPEC.project, SPEC.stack_name, {**SPEC.config, "nodePools": POOLS[:1]})
        result = driver.preview(smaller)
        assert result.summary == {"same": 2, "delete": 1}
        assert [(c.name, c.op) for c in result.changes] == [("p5-spot", "delete")]

    def test_drift_check_is_a_preview_only_refresh(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        driver.up(SPEC)
        drift = driver.refresh(SPEC, preview_only=True)
        assert drift.operation == "preview-refresh" and drift.summary == {"refresh": 3}
        refresh_calls = [c for c in fake_cli.commands() if c[0] == "refresh"]
        assert len(refresh_calls) == 1 and "--preview-only" in refresh_calls[0]

    def test_destroy_deletes_everything(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver = make_driver(tmp_path, fake_cli)
        driver.up(SPEC)
        assert driver.destroy(SPEC).summary == {"delete": 3}
        assert fake_cli.stack_state(SPEC.stack_name)["resources"] == []

    def test_a_locked_stack_is_a_state_locked_error(self, tmp_path: Path, fake_cli: FakeCli, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("FAKE_PULUMI_LOCKED", "1")
        with pytest.raises(StateLockedError, match="locked by another update") as err:
            make_driver(tmp_path, fake_cli).up(SPEC)
        assert err.value.exit_code == ExitCode.LOCKED

    def test_an_unknown_project_is_an_error(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        with pytest.raises(HybridctlError, match="no Pulumi project 'gcp-pools'"):
            make_driver(tmp_path, fake_cli).preview(StackSpec("gcp-pools", "s", {}))

    def test_the_driver_implements_the_cloud_driver_protocol(self, tmp_path: Path, fake_cli: FakeCli) -> None:
        driver: CloudDriver = make_driver(tmp_path, fake_cli)
        assert isinstance(driver, CloudDriver)
