#!/usr/bin/env bash
# Set up this checkout for development and tests: a venv with hybridctl (editable) and its test
# extras and, as root, what the real SSH test hosts need (see tests/hosts/README.md).
# Idempotent: a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
if [ "$(id -u)" = 0 ]; then
  bash .ci/hosts-setup.sh
else
  echo "setup: not root, so the real SSH host tests (marked 'hosts') will be skipped"
fi
