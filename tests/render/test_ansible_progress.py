"""The live playbook progress table: rows per host, tallies, and failures printed as they happen."""

from __future__ import annotations

from hybridctl.drivers.ansible import AnsibleEvent, EventKind
from hybridctl.render.ansible_progress import AnsibleProgress
from rich.console import Console


def events() -> list[AnsibleEvent]:
    play = "node baseline"
    return [
        AnsibleEvent(EventKind.PLAY_STARTED, play=play),
        AnsibleEvent(EventKind.TASK_STARTED, play, "Install packages"),
        *(
            AnsibleEvent(EventKind.TASK_STARTED, play, "Install packages", h)
            for h in ("fra-01", "fra-02", "edge-7")
        ),
        AnsibleEvent(EventKind.HOST_CHANGED, play, "Install packages", "fra-01"),
        AnsibleEvent(EventKind.HOST_OK, play, "Install packages", "fra-02"),
        AnsibleEvent(
            EventKind.HOST_UNREACHABLE, play, "Install packages", "edge-7", "Host key verification failed."
        ),
        AnsibleEvent(EventKind.TASK_STARTED, play, "Write config", "fra-01"),
        AnsibleEvent(EventKind.TASK_STARTED, play, "Write config", "fra-02"),
        AnsibleEvent(EventKind.HOST_FAILED, play, "Write config", "fra-02", "disk full"),
    ]


def render(progress: AnsibleProgress, console: Console) -> list[str]:
    console.print(progress.table())
    return console.export_text().splitlines()


class TestAnsibleProgress:
    def test_rows_show_each_hosts_task_tallies_and_end(self) -> None:
        console = Console(record=True, width=120, force_terminal=False)
        progress = AnsibleProgress(console, title="apply", hosts=["fra-01", "fra-02", "edge-7"])
        for event in events():
            progress(event)
        lines = render(progress, console)
        rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]] for line in lines
                if line.startswith("│") and "host" not in line}  # fmt: skip
        # columns: task, ok, changed, skipped, failed, unreachable
        assert rows["fra-01"] == ["… Write config", "0", "1", "0", "0", "0"]
        assert rows["fra-02"] == ["Write config (failed)", "1", "0", "0", "1", "0"]
        assert rows["edge-7"] == ["Install packages (unreachable)", "0", "0", "0", "0", "1"]
        assert any(line.strip() == "apply — node baseline" for line in lines)

    def test_failures_are_printed_as_lines_when_they_happen(self) -> None:
        console = Console(record=True, width=120, force_terminal=False)
        with AnsibleProgress(console, title="apply") as progress:
            for event in events():
                progress(event)
        text = console.export_text()
        assert "unreachable: edge-7: Install packages: Host key verification failed." in text
        assert "failed: fra-02: Write config: disk full" in text
        assert text.index("unreachable: edge-7") < text.index("failed: fra-02")
        # The final table is left on screen; rows for hosts first seen in events are added.
        assert "fra-01" in text.split("failed: fra-02")[-1]
