"""The prerequisites of the Google Cloud and Azure GPU pools stacks, checked before `pulumi up`: some
credential source the provider would find, the project or subscription to work in, and the cluster the
site names (the stacks add pools to an existing GKE or AKS cluster; they never create one)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from hybridctl.errors import PrerequisiteError

_GCP_PROJECT_VARS = ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT")


def _gcloud_project(home: Path) -> str:
    """The project of gcloud's default configuration, '' without one."""
    config = home / ".config" / "gcloud" / "configurations" / "config_default"
    if not config.is_file():
        return ""
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "project":
            return value.strip()
    return ""


def check_gcp_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    """Application Default Credentials and a project, as pulumi-gcp finds them."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    adc = home / ".config" / "gcloud" / "application_default_credentials.json"
    key_file = env.get("GOOGLE_APPLICATION_CREDENTIALS", "")
    if not (env.get("GOOGLE_CREDENTIALS") or (key_file and Path(key_file).is_file()) or adc.is_file()):
        raise PrerequisiteError(
            "no Google Cloud credentials found for the gcp-gpu-pools stacks",
            hint="run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service "
                 "account key file (or GOOGLE_CREDENTIALS to its contents)")
    if not (any(env.get(v) for v in _GCP_PROJECT_VARS) or _gcloud_project(home)):
        raise PrerequisiteError(
            "no Google Cloud project for the gcp-gpu-pools stacks (the GKE cluster's project)",
            hint="set GOOGLE_PROJECT (or GOOGLE_CLOUD_PROJECT), or `gcloud config set project PROJECT`")


def _az_login_subscription(home: Path) -> bool:
    profile = home / ".azure" / "azureProfile.json"
    if not profile.is_file():
        return False
    try:
        subscriptions = json.loads(profile.read_text(encoding="utf-8-sig")).get("subscriptions", [])
    except (ValueError, AttributeError):
        return False
    return any(isinstance(s, dict) and s.get("isDefault") for s in subscriptions)


def check_azure_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    """A service principal, a managed identity or `az login`, and a subscription, as pulumi-azure-native
    finds them."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    principal = env.get("ARM_CLIENT_ID") and env.get("ARM_TENANT_ID") and (
        env.get("ARM_CLIENT_SECRET") or env.get("ARM_CLIENT_CERTIFICATE_PATH") or env.get("ARM_OIDC_TOKEN"))
    logged_in = _az_login_subscription(home)
    if not (principal or env.get("ARM_USE_MSI") == "true" or logged_in):
        raise PrerequisiteError(
            "no Azure credentials found for the azure-gpu-pools stacks",
            hint="run `az login`, or set ARM_CLIENT_ID, ARM_TENANT_ID and ARM_CLIENT_SECRET for a service principal "
                 "(ARM_USE_MSI=true for a managed identity)")
    if not (env.get("ARM_SUBSCRIPTION_ID") or logged_in):
        raise PrerequisiteError(
            "no Azure subscription for the azure-gpu-pools stacks (the AKS cluster's subscription)",
            hint="set ARM_SUBSCRIPTION_ID, or `az account set --subscription SUBSCRIPTION`")
