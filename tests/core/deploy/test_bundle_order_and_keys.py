"""Version order and key IDs: the controller's rules (hybridctl.core.deploy.bundle) and the hosts'
copy of them (playbooks' hybridctl_models.py, which runs where hybridctl is not installed)
must agree, or a host would refuse what the controller plans, or accept what it refuses."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hybridctl.core.deploy.bundle import key_id, version_order
from hybridctl.paths import playbooks_dir
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def host_rules() -> ModuleType:
    path = playbooks_dir() / "roles/hybridctl_common/module_utils/hybridctl_models.py"
    spec = importlib.util.spec_from_file_location("hybridctl_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORDERED = ["0", "v0", "v1", "v2", "v9", "v10", "v10a", "v11", "2026.04.3", "2026.05.1", "2026.05.2",
           "2026.05.10", "2026.12.1"]


class TestVersionOrder:
    @pytest.mark.parametrize("older,newer", [("v0", "v2"), ("v1", "v2"), ("v9", "v10"), ("2026.05.2", "2026.05.10"),
                                             ("1.0", "1.0.1"), ("v2", "v2a")])
    def test_older_sorts_first(self, older: str, newer: str) -> None:
        assert version_order(older) < version_order(newer)

    def test_a_list_sorts_naturally(self) -> None:
        names = [n for n in ORDERED if n.startswith("v")]
        assert sorted(reversed(names), key=version_order) == names

    @given(st.lists(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,12}", fullmatch=True), min_size=2, max_size=6))
    def test_the_hosts_order_versions_as_the_controller_does(self, host_rules: ModuleType, names: list[str]) -> None:
        host = host_rules
        assert sorted(names, key=version_order) == sorted(names, key=host.version_key)
        assert [version_order(n) for n in names] == [host.version_key(n) for n in names]


class TestKeyIds:
    def test_the_host_computes_the_key_id_from_the_pem_file(self, host_rules: ModuleType) -> None:
        for _ in range(5):
            public = Ed25519PrivateKey.generate().public_key()
            pem = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
            assert host_rules.key_id_of_pem(pem) == key_id(public)
            assert len(key_id(public)) == 32

    @pytest.mark.parametrize("text", [b"", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                                      b"-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n"])
    def test_anything_else_has_no_key_id(self, host_rules: ModuleType, text: bytes) -> None:
        assert host_rules.key_id_of_pem(text) is None
