"""Matching CLI output in tests."""

from __future__ import annotations


def flat(text: str) -> str:
    """Output with rich's line wrapping undone, for matching messages."""
    return " ".join(text.split())
