"""What the consoles print of untrusted text: as written. An inventory's value quoted in an error, or a
name in a plan, that says `:warning:` was printed as ⚠ (rich's emoji codes), so the message no longer
quoted what the file says."""

from __future__ import annotations

from pathlib import Path

from support.inproc import run_cli


def test_an_emoji_code_in_a_quoted_value_is_printed_as_written(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text('version: 1\nname: ":warning: x"\n')
    result = run_cli("validate", str(inventory))
    assert "':warning: x'" in result.output and "⚠" not in result.output
