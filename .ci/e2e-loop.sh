#!/usr/bin/env bash
# The whole hybridctl loop against local test hosts: plan -> apply -> status -> (drift) -> apply
# -> status -> destroy. Three real SSH hosts (tests/hosts: network namespaces + sshd) stand in for
# an on-prem site and an edge site; the cloud site is skipped with a message when no pulumi CLI
# is installed. Usage, as root:  bash .ci/e2e-loop.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "e2e-loop: run as root: the test hosts need network namespaces, mounts and chroot" >&2
  exit 2
fi
python=${PYTHON:-.venv/bin/python}
# The hosts' root filesystem is built once and cached; this is quick when it exists.
bash .ci/hosts-setup.sh >/dev/null
exec "$python" bench/e2e_loop.py "$@"
