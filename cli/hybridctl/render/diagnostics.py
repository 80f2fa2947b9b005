"""Validation results as text for people, and as JSON, GitHub annotations or SARIF for machines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import groupby

from rich.console import Console
from rich.markup import escape

from hybridctl import __version__
from hybridctl.core.inventory.diagnostics import Diagnostic, Severity
from hybridctl.errors import Location

FORMAT_VERSION = 1


@dataclass(frozen=True)
class InventoryReport:
    path: str
    diagnostics: tuple[Diagnostic, ...]
    workloads: int = 0
    sites: int = 0
    pools: int = 0

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity is Severity.WARNING for d in self.diagnostics)


def _diagnostic_dict(d: Diagnostic) -> dict[str, object]:
    return {
        "severity": d.severity.value,
        "code": d.code,
        "message": d.message,
        "file": d.location.file if d.location else None,
        "line": d.location.line if d.location else None,
        "column": d.location.column if d.location else None,
        "hint": d.hint,
        "related": [str(r) for r in d.related],
    }


# A person reads the first few: 8,000 duplicated workloads printed 16,000 lines in 13 s (--format json has all)
TEXT_DIAGNOSTICS_SHOWN = 200


def render_text(console: Console, reports: list[InventoryReport]) -> None:
    for report in reports:
        if not report.diagnostics:
            console.print(f"[green]✓[/] {escape(report.path)}: valid ({report.sites} sites, {report.pools} pools, "
                          f"{report.workloads} workloads)")
            continue
        mark = "[red]✗[/]" if report.errors else "[yellow]![/]"
        console.print(f"{mark} {escape(report.path)}: {report.errors} error(s), {report.warnings} warning(s)")
        ordered = sorted(report.diagnostics, key=lambda d: (d.location.file if d.location else "",
                                                            d.location.line or 0 if d.location else 0))
        shown = ordered[:TEXT_DIAGNOSTICS_SHOWN]
        for file, group in groupby(shown, key=lambda d: d.location.file if d.location else report.path):
            console.print(f"  [bold]{escape(file)}[/]")
            for d in group:
                colour = "red" if d.severity is Severity.ERROR else "yellow"
                where = f"{d.location.line}:{d.location.column}" if d.location and d.location.line else "-"
                console.print(f"    [dim]{where:>8}[/]  [{colour}]{d.severity.value}[/] {escape(d.message)} "
                              f"[dim]\\[{d.code}][/]")
                if d.hint:
                    console.print(f"              [cyan]hint:[/] {escape(d.hint)}")
        if len(ordered) > len(shown):
            console.print(f"  … and {len(ordered) - len(shown):,} more (the first {len(shown)} are shown; "
                          "--format json lists them all)")


def render_json(reports: list[InventoryReport]) -> str:
    return json.dumps({
        "format_version": FORMAT_VERSION,
        "tool": {"name": "hybridctl", "version": __version__},
        "valid": all(r.errors == 0 for r in reports),
        "inventories": [{"path": r.path, "valid": r.errors == 0, "errors": r.errors, "warnings": r.warnings,
                         "diagnostics": [_diagnostic_dict(d) for d in r.diagnostics]} for r in reports],
    }, indent=2, sort_keys=False)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# GitHub shows a step's first ten annotations of a kind: the lines a finding names beside its own are capped
RELATED_ANNOTATIONS = 3


def _annotation(command: str, file: str, location: Location | None, title: str, body: str) -> str:
    props = [f"file={_escape_property(location.file if location else file)}"]
    if location and location.line:
        props.append(f"line={location.line}")
        if location.column:
            props.append(f"col={location.column}")
    props.append(f"title={_escape_property(title)}")
    return f"::{command} {','.join(props)}::{_escape_data(body)}"


def render_github(reports: list[InventoryReport]) -> str:
    """GitHub Actions workflow commands: one annotation per finding, on the file and line, and one on each
    line it names beside (a pool's capacity, for a workload that no longer fits), where an author's change is."""
    lines: list[str] = []
    for report in reports:
        for d in report.diagnostics:
            command = "error" if d.severity is Severity.ERROR else "warning"
            body = d.message + (f"\nhint: {d.hint}" if d.hint else "")
            lines.append(_annotation(command, report.path, d.location, f"hybridctl {d.code}", body))
            elsewhere = [r for r in d.related if r != d.location][:RELATED_ANNOTATIONS]
            lines.extend(_annotation(command, report.path, r, f"hybridctl {d.code} (related)",
                                     f"{d.message}\n(reported at {d.location or report.path})") for r in elsewhere)
    return "\n".join(lines)


def _physical(location: Location | None, path: str) -> dict[str, object]:
    region: dict[str, int] = {}
    if location and location.line:
        region["startLine"] = location.line
        if location.column:
            region["startColumn"] = location.column
    physical: dict[str, object] = {"artifactLocation": {"uri": location.file if location else path}}
    if region:
        physical["region"] = region
    return physical


def render_sarif(reports: list[InventoryReport]) -> str:
    """SARIF 2.1.0, for code-scanning upload."""
    rules: dict[str, dict[str, object]] = {}
    results: list[dict[str, object]] = []
    for report in reports:
        for d in report.diagnostics:
            rule_id = d.code.split(":")[0]
            rules.setdefault(rule_id, {"id": rule_id, "name": rule_id,
                                       "shortDescription": {"text": rule_id.replace("-", " ")},
                                       "helpUri": "https://github.com/hybridctl/hybridctl/blob/main/README.md"})
            text = d.message + (f" (hint: {d.hint})" if d.hint else "")
            result: dict[str, object] = {"ruleId": rule_id,
                                         "level": "error" if d.severity is Severity.ERROR else "warning",
                                         "message": {"text": text},
                                         "locations": [{"physicalLocation": _physical(d.location, report.path)}]}
            if d.related:
                result["relatedLocations"] = [{"id": i, "physicalLocation": _physical(r, report.path),
                                               "message": {"text": "involved here"}}
                                              for i, r in enumerate(d.related)]
            results.append(result)
    return json.dumps({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "hybridctl", "version": __version__,
                                      "informationUri": "https://github.com/hybridctl/hybridctl",
                                      "rules": list(rules.values())}},
                  "results": results}],
    }, indent=2)
