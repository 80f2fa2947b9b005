"""The cached Debian root filesystem every test host overlays.

Built once with debootstrap (about 40 s, 240-290 MB) and reused by every later run. Two
pytest processes may ask at once: the build runs under an exclusive file lock, into a
temporary directory that is renamed into place only when complete, so a crashed build
never leaves a half-made root filesystem behind under the final name.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SUITE = "bookworm"
# openssl: model-sync verifies Ed25519 signatures on the host with `openssl pkeyutl`.
# containerd: node.yml merges the NVIDIA runtime into its config, checked with `containerd config dump`
# (which needs no running daemon). chrony: node.yml configures time sync, checked with `chronyd -p`.
PACKAGES = ("python3", "openssh-server", "iproute2", "openssl", "containerd", "chrony")
DEFAULT_CACHE_DIR = Path("/var/cache/hybridctl-test-rootfs")
_RECIPE_VERSION = "1"  # bump when the post-processing below changes


class RootfsError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("HYBRIDCTL_TEST_ROOTFS", str(DEFAULT_CACHE_DIR)))


def _recipe_id() -> str:
    recipe = f"{_RECIPE_VERSION}:{SUITE}:{','.join(PACKAGES)}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def rootfs_path() -> Path:
    """Where the finished root filesystem lives (it may not exist yet)."""
    return cache_dir() / f"{SUITE}-minbase-{_recipe_id()}"


def _deb822_uris(text: str) -> list[tuple[str, list[str]]]:
    """(URI, suites) of each enabled `Types: deb` stanza of a deb822 .sources file."""
    found = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            found.append((uri, fields.get("suites", "").split()))
    return found


def _one_line_uris(text: str) -> list[tuple[str, list[str]]]:
    found = []
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            found.append((words[1], [words[2]]))
    return found


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt already uses for the suite: no hard-coded host.

    ``HYBRIDCTL_TEST_MIRROR`` overrides it.
    """
    override = os.environ.get("HYBRIDCTL_TEST_MIRROR")
    if override:
        return override
    candidates: list[tuple[str, list[str]]] = []
    one_line = apt_dir / "sources.list"
    if one_line.is_file():
        candidates += _one_line_uris(one_line.read_text())
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            if path.suffix == ".sources":
                candidates += _deb822_uris(path.read_text())
            elif path.suffix == ".list":
                candidates += _one_line_uris(path.read_text())
    for uri, suites in candidates:
        # The main archive carries the bare suite; security and updates mirrors do not.
        if SUITE in suites and "security" not in uri:
            return uri
    raise RootfsError(
        f"no apt source for Debian {SUITE} found under {apt_dir}; set HYBRIDCTL_TEST_MIRROR to a Debian mirror URL"
    )


def _post_process(root: Path) -> None:
    # openssh-server's postinst generated host keys: every host would share them. The lab
    # writes fresh keys per host, so none may live in the shared lower layer.
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (root / "run/sshd").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    (root / "root/.ssh").mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / ".hybridctl-rootfs").write_text(f"{SUITE} {' '.join(PACKAGES)}\n")


def ensure_rootfs(log: Path | None = None) -> Path:
    """Return the cached root filesystem, building it first if it is missing."""
    final = rootfs_path()
    if (final / ".hybridctl-rootfs").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / ".hybridctl-rootfs").is_file():  # another process built it while we waited
            return final
        if shutil.which("debootstrap") is None:
            raise RootfsError("debootstrap is not installed (apt-get install debootstrap)")
        for stale in final.parent.glob(".build-*"):
            shutil.rmtree(stale, ignore_errors=True)
        build = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
        target = build / "rootfs"
        command = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(target),
            debian_mirror(),
        ]
        log_path = log or (final.parent / "debootstrap.log")
        with open(log_path, "w") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            shutil.rmtree(build, ignore_errors=True)
            raise RootfsError(f"debootstrap failed with exit code {done.returncode}; see {log_path}")
        _post_process(target)
        target.rename(final)
        shutil.rmtree(build, ignore_errors=True)
    return final
