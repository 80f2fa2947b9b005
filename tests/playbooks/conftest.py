"""Fixtures for running the real playbooks.

Local runs use ``ansible_connection: local`` with every host rooted at its own directory
(``hybridctl_common_root``); they go through the same driver (hybridctl.drivers.ansible) as runs
against the real SSH test hosts, so results arrive the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from hybridctl.drivers.ansible import PlaybookResult, SshOptions, run_playbook
from hybridctl.drivers.bundle import generate_keypair
from hybridctl.paths import playbooks_dir

from .support import BROKEN_KINDS, Bundles, RunPlaybook, break_bundle, local_inventory, make_bundle, payload


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    root = tmp_path_factory.mktemp("bundles")
    private, public = root / "keys/signing.pem", root / "keys/signing.pub.pem"
    other_private, other_public = root / "keys/other.pem", root / "keys/other.pub.pem"
    generate_keypair(private, public)
    generate_keypair(other_private, other_public)
    good: dict[str, Path] = {}
    previous: str | None = None
    for version in ("v1", "v2", "v3"):
        good[version] = make_bundle(root / version, version, private, rollback_to=previous)
        previous = version
    broken: dict[str, Path] = {}
    for kind in BROKEN_KINDS:
        key = other_private if kind == "wrong_key" else private
        broken[kind] = make_bundle(root / f"v3-{kind}", "v3", key, rollback_to="v2")
        break_bundle(broken[kind], kind)
    # Same version as an installed one, different content: versions are immutable.
    broken["republished_v2"] = make_bundle(root / "v2-republished", "v2", private, rollback_to="v1",
                                           files={**payload("v2"), "config.json": b'{"version": "v2b"}'})
    return Bundles(public, other_public, good, broken)


@pytest.fixture(scope="session")
def run_local(tmp_path_factory: pytest.TempPathFactory) -> RunPlaybook:
    """Run a playbook of playbooks/ against local hosts; returns the driver's PlaybookResult."""
    work = tmp_path_factory.mktemp("ansible-work")
    (work / "known_hosts").touch()

    def run(playbook: str, roots: Mapping[str, Path], *, host_vars: Mapping[str, Mapping[str, object]] | None = None,
            check: bool = False, **extravars: object) -> PlaybookResult:
        return run_playbook(playbooks_dir() / playbook, local_inventory(roots, host_vars),
                            ssh=SshOptions(known_hosts=work / "known_hosts"), extravars=extravars, work_dir=work,
                            check=check, diff=check)

    return run


