"""The one Kubernetes provider of a k8s-queues stack: the EKS cluster the inventory names.

Never the ambient kubeconfig context: with several clusters, every stack would otherwise write
its queues into whichever cluster the user last switched to. The provider is built from the
EKS cluster's own endpoint and CA (looked up by name and region), authenticating with
`aws eks get-token`, so it can only reach that cluster. When the user names a kubeconfig
context instead (`hybridctl:kubeContext`, e.g. for a private endpoint reached through a
proxy), the program first checks that the context's server is that cluster's endpoint, and
refuses otherwise, before any resource is declared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml
from queues_config import ConfigError, QueuesConfig


def eks_kubeconfig(cluster_name: str, region: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig that reaches only this EKS cluster, with a short-lived token from the AWS CLI."""
    user = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
        "interactiveMode": "Never",
    }}
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster_name,
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "users": [{"name": cluster_name, "user": user}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
    }, sort_keys=True)


def context_server(kubeconfig: Mapping[str, Any], context: str) -> str | None:
    """The API server URL a kubeconfig context points at, or None if the context is not there."""
    contexts = {c.get("name"): c.get("context", {}) for c in kubeconfig.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster", {}) for c in kubeconfig.get("clusters") or []}
    if context not in contexts:
        return None
    server = clusters.get(contexts[context].get("cluster"), {}).get("server")
    return str(server) if server else None


def _read_kubeconfig(env: Mapping[str, str]) -> dict[str, Any]:
    merged: dict[str, Any] = {"contexts": [], "clusters": []}
    paths = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p] or [Path.home() / ".kube" / "config"]
    for path in paths:
        if path.is_file():
            loaded = yaml.safe_load(path.read_text()) or {}
            merged["contexts"] += loaded.get("contexts") or []
            merged["clusters"] += loaded.get("clusters") or []
    return merged


def check_context(cfg: QueuesConfig, endpoint: str, kubeconfig: Mapping[str, Any]) -> None:
    """Refuse a named context that does not point at the intended cluster."""
    server = context_server(kubeconfig, cfg.kube_context or "")
    if server is None:
        raise ConfigError(f"hybridctl:kubeContext: no context {cfg.kube_context!r} in the kubeconfig")
    if server.rstrip("/").lower() != endpoint.rstrip("/").lower():
        raise ConfigError(
            f"hybridctl:kubeContext: context {cfg.kube_context!r} points at {server}, not at EKS cluster "
            f"{cfg.cluster_name} ({endpoint}); refusing to write its queues into another cluster")


def cluster_provider(cfg: QueuesConfig, env: Mapping[str, str] | None = None) -> k8s.Provider:
    """The stack's Kubernetes provider; every resource of the stack is declared with it."""
    if cfg.on_premises:
        # No EKS cluster to check the context against: the context named as the inventory names the cluster
        # (the operator's kubeconfig); the provider fails on `pulumi up` if it is not there.
        return k8s.Provider(f"k8s-{cfg.cluster_name}", context=cfg.kube_context, cluster_identifier=cfg.cluster_name,
                            delete_unreachable=False)
    cluster = aws.eks.get_cluster_output(name=cfg.cluster_name)
    # Identity is the cluster, not the credentials: a new token or context never replaces objects.
    identity = cluster.arn
    if cfg.kube_context:
        kubeconfig = _read_kubeconfig(os.environ if env is None else env)
        checked = cluster.endpoint.apply(lambda endpoint: check_context(cfg, endpoint, kubeconfig) or cfg.kube_context)
        return k8s.Provider(f"k8s-{cfg.cluster_name}", context=checked, cluster_identifier=identity,
                            delete_unreachable=False)
    kubeconfig_json = pulumi.Output.all(cluster.endpoint, cluster.certificate_authorities).apply(
        lambda args: eks_kubeconfig(cfg.cluster_name, cfg.region, args[0], args[1][0]["data"]
                                    if isinstance(args[1][0], dict) else args[1][0].data))
    return k8s.Provider(f"k8s-{cfg.cluster_name}", kubeconfig=kubeconfig_json, cluster_identifier=identity,
                        delete_unreachable=False)
