"""The console script keeps numpy's BLAS on one thread (hybridctl.__main__.single_threaded_blas).

OpenBLAS starts a thread per core for a large dot product, and its threads spin while they
wait: in `drill`, on the core the other worker process runs on. Counted here as the process's
threads after such a product, in a fresh interpreter (numpy reads the setting when imported).
"""

from __future__ import annotations

import os
import subprocess
import sys

_SCRIPT = """
import os
from hybridctl.__main__ import single_threaded_blas
single_threaded_blas()
import numpy as np
a = np.ones(2_000_000)
for _ in range(20):
    a @ a
print(len(os.listdir("/proc/self/task")))
"""


def test_the_console_script_runs_blas_on_the_calling_thread() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=60,
                          check=True)
    assert int(done.stdout) == 1, done.stdout
