"""Entry point run by the Pulumi engine; the logic lives in kueue_queues.py so tests can drive it."""

from __future__ import annotations

from kueue_queues import program
from queues_config import load_config

program(load_config())
