"""An error that ends a command, as the user reads it on stderr: where, what, and the hint."""

from __future__ import annotations

from rich.markup import escape

from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.errors import HybridctlError
from hybridctl.render.console import stderr


def located_message(error: HybridctlError) -> str:
    """The message with its location in front, once: many messages already start with their file."""
    location = error.location
    if location is None or error.message.startswith(str(location)):
        return error.message
    if location.file and error.message.startswith((f"{location.file}:", f"{location.file} ")):
        return str(location) + error.message[len(location.file):]
    return f"{location}: {error.message}"


def render_error(error: HybridctlError) -> None:
    console = stderr()
    if isinstance(error, InvalidInventoryError):
        from hybridctl.render.diagnostics import InventoryReport, render_text

        path = error.diagnostics[0].location.file if error.diagnostics[0].location else "inventory"
        render_text(console, [InventoryReport(path, tuple(error.diagnostics))])
        return
    console.print(f"[red]error:[/] {escape(located_message(error))}")
    if error.hint:
        console.print(f"[cyan]hint:[/] {escape(error.hint)}")
