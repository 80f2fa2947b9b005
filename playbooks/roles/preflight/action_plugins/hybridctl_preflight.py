# Runs ON THE CONTROLLER: preflight of one host in a single task. One shell command on the host
# (no Python module, so no module upload and no Python start-up there) reports what it finds,
# one `key=value` a line; the findings are checked against the plan here, in Python, and
# returned as the fact hybridctl_result, also when the host fails. (The same checks in Jinja,
# over three tasks, cost about a second per host of controller CPU.)
from __future__ import annotations

import re
import shlex

from ansible.module_utils.compat.version import LooseVersion
from ansible.plugins.action import ActionBase

# What the host reports. nvidia-smi gets its own, shorter timeout: a hung driver must not hang
# the probe. The model cache may not exist yet: its nearest existing ancestor is measured.
PROBE = r"""set -u
echo "os=$(. /etc/os-release 2>/dev/null; printf '%s|%s|%s' "${ID:-}" "${VERSION_ID:-}" "${NAME:-}")"
echo "kernel=$(uname -r)"
echo "arch=$(uname -m)"
echo "python=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null)"
echo "cpus=$(nproc 2>/dev/null)"
echo "mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null)"
p="$CACHE_DIR"
while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done
echo "disk_path=$p"
echo "disk=$(stat -f -c '%a %S' -- "$p")"
if [ -x "$RUNTIME" ]; then echo "runtime=present"; else echo "runtime=absent"; fi
echo "ctk=$(command -v nvidia-ctk || true)"
smi=$(command -v "$NVIDIA_SMI" || true)
echo "smi_path=$smi"
if [ -n "$smi" ]; then
  out=$(timeout "$SMI_TIMEOUT" "$smi" --query-gpu=index,name,memory.total,driver_version \
        --format=csv,noheader,nounits 2>&1)
  echo "smi_rc=$?"
  printf '%s\n' "$out" | sed 's/^/smi=/'
  # MIG mode apart: a GPU or driver without MIG answers [N/A], and a failure here only leaves it unknown.
  mig=$(timeout "$SMI_TIMEOUT" "$smi" --query-gpu=index,mig.mode.current,mig.mode.pending \
        --format=csv,noheader 2>&1)
  echo "mig_rc=$?"
  printf '%s\n' "$mig" | sed 's/^/mig=/'
fi
"""

# The names Ansible's facts use for the common distributions (os-release's ID otherwise).
OS_NAMES = {"debian": "Debian", "ubuntu": "Ubuntu", "rhel": "RedHat", "centos": "CentOS", "rocky": "Rocky",
            "almalinux": "AlmaLinux", "fedora": "Fedora", "sles": "SLES", "amzn": "Amazon"}
TIMED_OUT_RC = "124"  # timeout(1)'s exit status when the command did not finish


def _int(text):
    try:
        return int(str(text).strip())
    except ValueError:
        return 0


def _tokens(text):
    return re.findall("[A-Z0-9]+", str(text).upper())


def _gpus(smi_lines):
    gpus = []
    for line in smi_lines:
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        fields += [""] * (4 - len(fields))
        gpus.append({"index": _int(fields[0]), "name": fields[1], "memory_mib": _int(fields[2]),
                     "driver_version": fields[3]})
    return gpus


MIG_MODES = ("Enabled", "Disabled")


def _mig(mig_lines):
    """GPU index -> (current, pending) MIG mode, for the GPUs that report one (not [N/A])."""
    modes = {}
    for line in mig_lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit() and fields[1] in MIG_MODES:
            pending = fields[2] if len(fields) > 2 and fields[2] in MIG_MODES else fields[1]
            modes[int(fields[0])] = (fields[1], pending)
    return modes


def findings(lines, s):
    """The preflight result of one host from the probe's lines and the settings `s` (the task's args)."""
    kv, smi_lines, mig_lines = {}, [], []
    for line in lines:
        if line.startswith("smi="):
            smi_lines.append(line[len("smi="):])
        elif line.startswith("mig="):
            mig_lines.append(line[len("mig="):])
        elif "=" in line:
            key, value = line.split("=", 1)
            kv[key] = value
    smi_state = "absent" if not kv.get("smi_path") else "ok" if kv.get("smi_rc", "1") == "0" else "failed"
    gpus = _gpus(smi_lines) if smi_state == "ok" else []
    driver = next((g["driver_version"] for g in gpus if g["driver_version"]), None)
    min_driver = str(s.get("min_driver_version") or "")
    expected = s.get("expected_gpus")
    needs_gpus = _int(expected or 0) > 0
    df = [*kv.get("disk", "0 0").split(), "0", "0"]
    disk = {"path": s["models_dir"], "measured_path": kv.get("disk_path"),
            "available_bytes": _int(df[0]) * _int(df[1]),
            "required_bytes": int(float(s["required_gb"]) * 1000000000)}
    toolkit = "present" if kv.get("runtime") == "present" else "absent"
    to_install = []
    if s["installable"]:  # node.yml installs them from the site's apt repository
        if needs_gpus and smi_state == "absent" and s["driver_packages"]:
            to_install.append("nvidia-driver")
        if needs_gpus and toolkit == "absent":
            to_install.append("nvidia-container-toolkit")

    problems = []
    if smi_state == "failed":
        if kv.get("smi_rc") != TIMED_OUT_RC:
            problems.append("nvidia-smi failed: " + next((x for x in smi_lines if x), "no output"))
        else:
            problems.append(f"nvidia-smi did not answer within {s['smi_timeout_s']} s: the NVIDIA driver is hung")
    if needs_gpus and smi_state == "absent" and "nvidia-driver" not in to_install:
        problems.append(f"NVIDIA driver missing: {s['nvidia_smi']} not found; install the NVIDIA driver"
                        + (f" {min_driver} or later" if min_driver else ""))
    if needs_gpus and toolkit == "absent" and "nvidia-container-toolkit" not in to_install:
        problems.append(f"NVIDIA container toolkit missing: {s['runtime_binary']} not found; "
                        "install nvidia-container-toolkit")
    if expected is not None and len(gpus) < _int(expected) and "nvidia-driver" not in to_install:
        problems.append(f"found {len(gpus)} GPUs, expected {expected}")
    wanted = set(_tokens(s.get("gpu") or ""))
    if wanted:
        problems += [f"GPU {g['index']} is {g['name']}, expected {s['gpu']}" for g in gpus
                     if not wanted <= set(_tokens(g["name"]))]
    if min_driver and driver and LooseVersion(driver) < LooseVersion(min_driver):
        problems.append(f"driver {driver} is older than {min_driver}")
    # hybridctl plans whole GPUs: a GPU in MIG mode offers MIG devices instead, so the device plugin
    # advertises no whole GPU on it (or fewer, smaller ones) and the pool's work cannot run there.
    mig = _mig(mig_lines) if smi_state == "ok" and kv.get("mig_rc") == "0" else {}
    if needs_gpus:
        for index, (current, pending) in sorted(mig.items()):
            if current == "Enabled":
                problems.append(f"GPU {index} has MIG mode enabled, but its pool plans whole GPUs: disable it "
                                f"(nvidia-smi -i {index} -mig 0, then reset the GPU)")
            elif pending == "Enabled":
                problems.append(f"GPU {index} has MIG mode pending enabled (at its next reset), but its pool plans "
                                f"whole GPUs: nvidia-smi -i {index} -mig 0")
    if disk["available_bytes"] < disk["required_bytes"]:
        problems.append(f"model cache {s['models_dir']} has {round(disk['available_bytes'] / 1e9, 1)} GB free, "
                        f"needs {s['required_gb']} GB")

    os_fields = kv.get("os", "").split("|")
    return {
        "playbook": "preflight", "reachable": True, "ok": not problems, "problems": problems,
        "os": {"distribution": OS_NAMES.get(os_fields[0], os_fields[2] if len(os_fields) > 2 else os_fields[0]),
               "version": os_fields[1] if len(os_fields) > 1 else None,
               "kernel": kv.get("kernel"), "architecture": kv.get("arch")},
        "python": kv.get("python") or None,
        "cpus": _int(kv["cpus"]) if kv.get("cpus") else None,
        "memory_mb": _int(kv["mem_kb"]) // 1024 if kv.get("mem_kb") else None,
        "nvidia_smi": smi_state, "gpus": gpus, "gpu_count": len(gpus), "driver_version": driver,
        # GPU index (a string: a fact's keys) -> its current MIG mode; empty when no GPU reports one
        "mig_mode": {str(i): current for i, (current, _) in sorted(mig.items())},
        "min_driver_version": min_driver or None,
        "container_toolkit": {"runtime": toolkit, "nvidia_ctk": kv.get("ctk") or None},
        "to_install": to_install,
        "disk": disk,
    }


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # nothing is uploaded: no remote temporary directory, no round trip for it

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        s = self._task.args
        root = s["root"]
        if not isinstance(root, str) or not root.startswith("/"):
            result.update(failed=True, msg=f"hybridctl_common_root must be an absolute path, got {root}")
            return result
        # The play's environment (the run marker that a cancel or timeout reaps by) and the probe's
        # inputs, each quoted by the shell plugin: values from the inventory are data, never shell.
        environment = self._compute_environment_string()
        inputs = self._connection._shell.env_prefix(
            CACHE_DIR=s["models_dir"], NVIDIA_SMI=s["nvidia_smi"], SMI_TIMEOUT=s["smi_timeout_s"],
            RUNTIME=s["runtime"])
        # Read-only, so it runs under --check too.
        done = self._low_level_execute_command(f"{environment} {inputs} /bin/sh -c {shlex.quote(PROBE)}",
                                               sudoable=True)
        if done["rc"] != 0:
            result.update(failed=True, rc=done["rc"], stdout=done["stdout"], stderr=done["stderr"],
                          msg=f"the preflight probe failed on {s['host']} (exit {done['rc']}): "
                              f"{done['stderr'].strip() or done['stdout'].strip()}")
            return result
        found = findings(done["stdout"].splitlines(), s)
        result.update(changed=False, ansible_facts={"hybridctl_result": found})
        if found["problems"] and s["fail_on_problems"]:
            result.update(failed=True, msg=f"preflight found problems on {s['host']}: {'; '.join(found['problems'])}")
        return result
