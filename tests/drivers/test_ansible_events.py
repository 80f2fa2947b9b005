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


class TestLoopMessages:
    def test_a_loop_task_that_loses_its_host_names_the_items_error_not_all_items_completed(self) -> None:
        collector = Collector()
        dispatch(_event("runner_on_unreachable", "h1", {
            "msg": "All items completed", "unreachable": True, "changed": False,
            "results": [{"item": "/var/lib/a", "changed": False},
                        {"item": "/var/lib/b", "unreachable": True,
                         "msg": "Failed to connect to the host via ssh: mux_client_request_session: read from master failed"}]}),
            collector, None)
        (host,) = collector.results()
        assert host.state is HostState.UNREACHABLE
        assert host.message is not None and host.message.startswith("Failed to connect to the host via ssh: mux_client")

    def test_a_loop_whose_items_carry_no_message_keeps_the_loops_own(self) -> None:
        collector = Collector()
        dispatch(_event("runner_on_failed", "h1", {"msg": "One or more items failed", "failed": True,
                                                   "results": [{"item": 1, "failed": True}]}), collector, None)
        assert collector.results()[0].message == "One or more items failed"
