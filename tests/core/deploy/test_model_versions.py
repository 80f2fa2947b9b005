"""The model version a host runs against what the applied model-sync step expects."""

from __future__ import annotations

from hybridctl.core.deploy.model_versions import (
    ExpectedModel,
    VersionState,
    compare,
    compare_all,
    expected_models,
)

RECORD = {"playbook": "model-sync.yml", "extravars": {"hybridctl_model": "chat", "hybridctl_model_version": "v10"},
          "inventory": {"hostvars": {"gpu-02": {}, "gpu-01": {}}, "groups": {}}}


def expected(host: str = "gpu-01") -> ExpectedModel:
    return ExpectedModel(host, "dc-lab", "chat-api", "chat", "v10")


class TestExpected:
    def test_each_host_of_the_step_expects_its_version(self) -> None:
        found = expected_models("model-sync/dc-lab/chat-api", "dc-lab", RECORD)
        assert found == [expected("gpu-01"), expected("gpu-02")]

    def test_a_record_without_a_model_expects_nothing(self) -> None:
        assert expected_models("model-sync/dc-lab/x", "dc-lab", {"extravars": {}, "inventory": {}}) == []


class TestCompare:
    def test_states(self) -> None:
        assert compare(expected(), {"current": "v10", "activated_at": "2026-05-01T10:00:00Z"}).state \
            is VersionState.AS_PLANNED
        assert compare(expected(), {"current": "v9"}).state is VersionState.BEHIND  # natural order: v9 < v10
        assert compare(expected(), {"current": "v11"}).state is VersionState.AHEAD
        assert compare(expected(), None).state is VersionState.MISSING
        unknown = compare(expected(), None, "unreachable: timed out")
        assert unknown.state is VersionState.UNKNOWN and unknown.note == "unreachable: timed out"

    def test_compare_all_reads_each_hosts_report(self) -> None:
        rows = compare_all([expected("gpu-01"), expected("gpu-02"), expected("gpu-03")],
                           {"gpu-01": {"chat": {"current": "v10", "activated_at": "t"}}, "gpu-02": {}},
                           {"gpu-03": "failed: boom"})
        assert [(r.host, r.state, r.activated_at) for r in rows] == [
            ("gpu-01", VersionState.AS_PLANNED, "t"), ("gpu-02", VersionState.MISSING, None),
            ("gpu-03", VersionState.UNKNOWN, None)]
