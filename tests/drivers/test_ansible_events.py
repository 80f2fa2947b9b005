"""Folding runner events into host results (no Ansible run needed)."""

from __future__ import annotations

from hybridctl.drivers.ansible_events import Collector, HostState, dispatch


def _event(name: str, host: str, res: dict[str, object]) -> dict[str, object]:
    return {"event": name, "event_data": {"host": host, "task": "Sync", "play": "p", "res": res}}


class TestResultFact:
    def test_a_failed_task_that_reports_a_result_hands_it_back(self) -> None:
        # model-sync and preflight do a host's whole play in one task, which fails with its result.
        collector = Collector()
        dispatch(_event("runner_on_failed", "h1", {"msg": "refused v3", "failed": True,
                                                   "ansible_facts": {"hybridctl_result": {"status": "refused"}}}),
                 collector, None)
        (host,) = collector.results()
        assert host.state is HostState.FAILED and host.message == "refused v3"
        assert host.data == {"status": "refused"}

    def test_results_of_later_tasks_merge_into_earlier_ones(self) -> None:
        collector = Collector()
        dispatch(_event("runner_on_ok", "h1", {"ansible_facts": {"hybridctl_result": {"a": 1, "b": 1}}}),
                 collector, None)
        dispatch(_event("runner_on_ok", "h1", {"ansible_facts": {"hybridctl_result": {"b": 2}}}), collector, None)
        assert collector.results()[0].data == {"a": 1, "b": 2}
