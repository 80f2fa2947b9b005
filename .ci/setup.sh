#!/usr/bin/env bash
# Set up this checkout for development and tests: a venv with hybridctl (editable) and its test
# extras and, as root, what the real SSH test hosts need (see tests/hosts/README.md) and the
# PostgreSQL server the shared-state tests start privately.
# Idempotent: a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -c .ci/constraints.txt -e '.[test]'
# checkov, on what synth writes (tests/stacks/test_synth_validators.py), in a virtualenv of its own:
# its pinned dependencies would fight the project's.
if [ ! -x .venv-checkov/bin/checkov ]; then
  python3 -m venv .venv-checkov
  .venv-checkov/bin/python -m pip install -q --disable-pip-version-check checkov==3.3.30
fi
# Headless Chromium for the HTML report's browser test (tests/render/test_report_browser.py).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  else
    echo "setup: not root, so chromium (for the HTML report's browser test) is not installed: sudo apt-get install chromium"
  fi
fi
if [ "$(id -u)" = 0 ]; then
  bash .ci/hosts-setup.sh
  # A private PostgreSQL server for the shared-state tests (tests/support/pgserver.py starts it).
  if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
else
  echo "setup: not root, so the real SSH host tests (marked 'hosts') will be skipped"
fi
