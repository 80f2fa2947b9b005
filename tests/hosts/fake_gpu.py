"""A stand-in `nvidia-smi` for test hosts: no GPU exists here, but preflight reads this tool.

It answers the queries hybridctl's playbooks make in the real tool's formats:
``--query-gpu=FIELDS --format=csv[,noheader][,nounits]`` and ``-L``. The GPUs it reports
come from /etc/hybridctl-fake-gpus.json inside the host, so a test can change them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

CONFIG_PATH = "etc/hybridctl-fake-gpus.json"
SCRIPT_PATH = "usr/bin/nvidia-smi"
# The container toolkit's runtime, a runc wrapper: preflight looks for it, containerd's config names it.
RUNTIME_PATH = "usr/bin/nvidia-container-runtime"


@dataclass(frozen=True)
class FakeGpus:
    count: int
    model: str = "NVIDIA H100 80GB HBM3"
    memory_mib: int = 81559
    driver_version: str = "550.54.15"
    cuda_version: str = "12.4"
    container_toolkit: bool = True  # install the nvidia-container-runtime stand-in too
    mig_mode: str = "Disabled"  # mig.mode.current and mig.mode.pending, as an H100 answers them


_SCRIPT = r'''#!/usr/bin/python3
"""Fake nvidia-smi installed by hybridctl's test lab."""
import json
import sys
import uuid

try:
    with open("/etc/hybridctl-fake-gpus.json") as f:
        cfg = json.load(f)
except OSError:
    cfg = {"count": 0}
if cfg["count"] == 0:
    print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
          "Make sure that the latest NVIDIA driver is installed and running.")
    sys.exit(9)

def gpu_uuid(i):
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, "%s-%d" % (open("/etc/hostname").read().strip(), i)))

FIELDS = {  # name: (unit, value(i))
    "index": ("", lambda i: str(i)),
    "count": ("", lambda i: str(cfg["count"])),
    "name": ("", lambda i: cfg["model"]),
    "gpu_name": ("", lambda i: cfg["model"]),
    "uuid": ("", gpu_uuid),
    "gpu_uuid": ("", gpu_uuid),
    "driver_version": ("", lambda i: cfg["driver_version"]),
    "memory.total": ("MiB", lambda i: str(cfg["memory_mib"])),
    "memory.used": ("MiB", lambda i: "0"),
    "memory.free": ("MiB", lambda i: str(cfg["memory_mib"])),
    "pci.bus_id": ("", lambda i: "00000000:%02X:00.0" % (0x18 + i)),
    "utilization.gpu": ("%", lambda i: "0"),
    "temperature.gpu": ("", lambda i: "34"),
    "mig.mode.current": ("", lambda i: cfg.get("mig_mode", "Disabled")),
    "mig.mode.pending": ("", lambda i: cfg.get("mig_mode", "Disabled")),
}

args = sys.argv[1:]
if args in (["-L"], ["--list-gpus"]):
    for i in range(cfg["count"]):
        print("GPU %d: %s (UUID: %s)" % (i, cfg["model"], gpu_uuid(i)))
    sys.exit(0)
query = fmt = None
for arg in args:
    if arg.startswith("--query-gpu="):
        query = arg.split("=", 1)[1]
    elif arg.startswith("--format="):
        fmt = arg.split("=", 1)[1].split(",")
if query is None:
    if not args:
        print("NVIDIA-SMI %s    Driver Version: %s    CUDA Version: %s"
              % (cfg["driver_version"], cfg["driver_version"], cfg["cuda_version"]))
        for i in range(cfg["count"]):
            print("|   %d  %s  %dMiB |" % (i, cfg["model"], cfg["memory_mib"]))
        sys.exit(0)
    print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
    sys.exit(2)
if fmt is None or fmt[0] != "csv":
    print('"--format" must be given with "--query-gpu"; try --format=csv')
    sys.exit(2)
names = [n.strip() for n in query.split(",") if n.strip()]
for n in names:
    if n not in FIELDS:
        print('Field "%s" is not a valid field to query.' % n)
        sys.exit(2)
units = "nounits" not in fmt
if "noheader" not in fmt:
    print(", ".join(n + (" [%s]" % FIELDS[n][0] if FIELDS[n][0] else "") for n in names))
for i in range(cfg["count"]):
    cells = []
    for n in names:
        unit, value = FIELDS[n]
        cell = value(i)
        cells.append(cell + (" " + unit if units and unit else ""))
    print(", ".join(cells))
'''


def install(root: Path, gpus: FakeGpus) -> None:
    """Put the fake nvidia-smi and its GPU list into a host's root filesystem."""
    script = root / SCRIPT_PATH
    script.write_text(_SCRIPT)
    script.chmod(0o755)
    (root / CONFIG_PATH).write_text(json.dumps(asdict(gpus)))
    if gpus.container_toolkit:
        install_runtime(root)


def install_runtime(root: Path) -> None:
    """A stand-in for nvidia-container-runtime: no GPU to hook here, so it is plain runc."""
    runtime = root / RUNTIME_PATH
    runtime.write_text('#!/bin/sh\nexec runc "$@"\n')
    runtime.chmod(0o755)
