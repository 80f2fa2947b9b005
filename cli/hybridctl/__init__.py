"""hybridctl: plan, deploy and fail over AI workloads across on-prem, cloud and edge GPU capacity."""

from __future__ import annotations

__version__ = "0.1.0"
