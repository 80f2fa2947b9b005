#!/usr/bin/env bash
# Prepare this machine for the real SSH test hosts (tests/hosts): the tools the lab calls, and
# the cached Debian root filesystem every host overlays (built once, ~40 s, reused afterwards).
# Usage: bash .ci/hosts-setup.sh   (as root; idempotent, quick when everything is in place)
set -euo pipefail
cd "$(dirname "$0")/.."

# debootstrap builds the root filesystem; openssh-client gives ssh and ssh-keygen; iproute2 the
# namespaces, veths and bridge; util-linux unshare, nsenter and mount; dpkg-dev's
# dpkg-scanpackages the local apt repository of node.yml's package test. The hosts' own sshd,
# python and containerd come from the root filesystem, not from this machine.
needed=(debootstrap openssh-client iproute2 util-linux dpkg-dev)
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Build (or find) the cached root filesystem now, so a failure here names its cause and the
# test run does not pay for it. rootfs.py needs only the standard library.
python3 - <<'PY'
import sys
sys.path.insert(0, "tests")
from hosts.rootfs import ensure_rootfs
print(f"test-host root filesystem: {ensure_rootfs()}")
PY
