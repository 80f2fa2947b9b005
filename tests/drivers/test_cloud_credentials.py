"""The GCP and Azure stacks' prerequisites, checked before `pulumi up`, each missing one named with how to
provide it (revision 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.drivers.pulumi import StackSpec, check_credentials
from hybridctl.errors import PrerequisiteError

GCP = StackSpec("gcp-gpu-pools", "inv-gcp-usc1", {})
AZURE = StackSpec("azure-gpu-pools", "inv-az-eus", {})


def test_gcp_without_credentials_says_how_to_log_in(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="no Google Cloud credentials") as caught:
        check_credentials(GCP, {}, tmp_path)
    assert "gcloud auth application-default login" in (caught.value.hint or "")


def test_gcp_without_a_project_says_how_to_set_one(tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    key.write_text("{}")
    with pytest.raises(PrerequisiteError, match="no Google Cloud project") as caught:
        check_credentials(GCP, {"GOOGLE_APPLICATION_CREDENTIALS": str(key)}, tmp_path)
    assert "GOOGLE_PROJECT" in (caught.value.hint or "")
    check_credentials(GCP, {"GOOGLE_APPLICATION_CREDENTIALS": str(key), "GOOGLE_PROJECT": "ml"}, tmp_path)


def test_gcp_reads_gclouds_own_files(tmp_path: Path) -> None:
    gcloud = tmp_path / ".config" / "gcloud"
    (gcloud / "configurations").mkdir(parents=True)
    (gcloud / "application_default_credentials.json").write_text("{}")
    (gcloud / "configurations" / "config_default").write_text("[core]\nproject = ml-prod\n")
    check_credentials(GCP, {}, tmp_path)


def test_azure_without_credentials_or_subscription(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match="no Azure credentials") as caught:
        check_credentials(AZURE, {}, tmp_path)
    assert "az login" in (caught.value.hint or "")
    principal = {"ARM_CLIENT_ID": "a", "ARM_TENANT_ID": "t", "ARM_CLIENT_SECRET": "s"}
    with pytest.raises(PrerequisiteError, match="no Azure subscription") as caught:
        check_credentials(AZURE, principal, tmp_path)
    assert "ARM_SUBSCRIPTION_ID" in (caught.value.hint or "")
    check_credentials(AZURE, {**principal, "ARM_SUBSCRIPTION_ID": "0000"}, tmp_path)


def test_azure_after_az_login(tmp_path: Path) -> None:
    (tmp_path / ".azure").mkdir()
    (tmp_path / ".azure" / "azureProfile.json").write_text(json.dumps({"subscriptions": [{"isDefault": True}]}))
    check_credentials(AZURE, {}, tmp_path)
