# Runs ON THE CONTROLLER: the model-sync task's timeout, from the size of the bundle its
# manifest lists. Any problem with the bundle gives the base timeout: the task itself then
# refuses the bundle, naming the problem.
from __future__ import annotations

import json
import os

BASE_TIMEOUT_S = 120
BYTES_PER_S = 5000000  # the slowest link a sync is expected to see, per host


def bundle_timeout_s(bundle_dir):
    """2 minutes plus 5 MB/s for the files the manifest of bundle_dir lists."""
    try:
        fd = os.open(os.path.join(bundle_dir, "manifest.json"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as stream:
            files = json.loads(stream.read().decode("utf-8"))["files"]
        total = sum(f["size_bytes"] for f in files if isinstance(f.get("size_bytes"), int))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return BASE_TIMEOUT_S
    return BASE_TIMEOUT_S + max(0, total) // BYTES_PER_S


class FilterModule:
    def filters(self):
        return {"hybridctl_bundle_timeout_s": bundle_timeout_s}
