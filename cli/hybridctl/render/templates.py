"""The Jinja2 environment over templates/: every generated non-JSON file comes from there."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from hybridctl.core.deploy.ansible_inventory import ansible_value
from hybridctl.paths import templates_dir
from hybridctl.render.untrusted import markdown_text


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,  # a missing variable is a bug, not an empty string
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["usd"] = lambda v: f"${v:,.0f}"
    env.filters["ansible_value"] = ansible_value
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


@cache
def markdown_environment() -> jinja2.Environment:
    """Like environment(), with every value escaped for markdown and HTML (render/untrusted.py): a plan's,
    a runbook's or a drill's names come from files anyone may have written, and land in a pull-request comment."""
    env = environment().overlay(finalize=lambda value: markdown_text(value) if isinstance(value, str) else value)
    return env


def render_markdown_template(template: str, **context: Any) -> str:
    return markdown_environment().get_template(template).render(**context)


@cache
def html_environment() -> jinja2.Environment:
    """Like environment(), with every value escaped: a report shows names from untrusted files."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=True,
    )
    env.filters["usd"] = lambda v: f"${v:,.2f}"
    return env


def render_html(template: str, **context: Any) -> str:
    return html_environment().get_template(template).render(**context)
