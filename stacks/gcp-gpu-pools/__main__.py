"""Entry point run by the Pulumi engine; the logic lives in gke_pools.py so tests can drive it."""

from __future__ import annotations

from gke_pools import load_config, program

program(load_config())
