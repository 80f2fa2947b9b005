"""Entry point run by the Pulumi engine; the logic lives in aks_pools.py so tests can drive it."""

from __future__ import annotations

from aks_pools import load_config, program

program(load_config())
