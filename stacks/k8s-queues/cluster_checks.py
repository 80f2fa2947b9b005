"""What the queues rely on in the cluster but do not own, read live and checked on every deployment.

- Kueue's own Configuration, in the manager ConfigMap its install owns (`hybridctl:kueueConfigMap`,
  default `kueue-system/kueue-manager-config`, key `controller_manager_config.yaml`): it must hold
  what kueue_queues.kueue_configuration asks (GPUs counted alone, the pods-ready timeout, on a
  MultiKueue manager the incremental dispatcher). The stack does not write it: Kueue reads it at
  start, and it holds the install's other settings. A difference is refused, naming each setting.
- Cluster Autoscaler's `--enable-provisioning-requests`, where burst and opportunistic queues wait
  for a ProvisioningRequest (cloud clusters): read from its Deployment (`hybridctl:clusterAutoscaler`,
  default `kube-system/cluster-autoscaler`); `attested` where the autoscaler is no Deployment the
  stack can read (a managed add-on, another namespace's operator): the operator vouches for the flag.

The ClusterQueues wait for these checks (their spec is an output of them): where one fails, no queue
is created or changed, so Kueue never admits work the cluster would not run as planned. This module
must not import hybridctl.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from queues_config import ConfigError, QueuesConfig

KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
ATTESTED = "attested"
PROVISIONING_FLAG = "--enable-provisioning-requests"
UNKNOWN = "<unknown:"  # what `hybridctl synth`, which reads no cluster, answers for a live object
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s|ms)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _seconds(text: object) -> float | None:
    """A Go duration ("20m", "1h0m0s", "1200s") in seconds; None when it is not one."""
    parts = _DURATION.findall(str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def differences(live: object, wanted: Mapping[str, Any], where: str = "") -> list[str]:
    """Each setting of `wanted` the live configuration does not hold: a list must contain wanted's items,
    a duration be the same length of time, anything else be equal."""
    found = []
    for key, value in wanted.items():
        if not where and key in ("apiVersion", "kind"):
            continue
        path = f"{where}{key}"
        have = live.get(key) if isinstance(live, Mapping) else None
        if isinstance(value, Mapping):
            found += differences(have, value, f"{path}.")
        elif isinstance(value, list):
            missing = [v for v in value if not isinstance(have, list) or v not in have]
            if missing:
                found.append(f"{path} lacks {', '.join(map(str, missing))}")
        elif isinstance(value, str) and _seconds(value) is not None:
            if _seconds(have) != _seconds(value):
                found.append(f"{path} is {have!r}, these queues need {value!r}")
        elif have != value:
            found.append(f"{path} is {have!r}, these queues need {value!r}")
    return found


def check_kueue(data: Mapping[str, Any] | None, wanted: Mapping[str, Any], where: str) -> None:
    text = (data or {}).get(KUEUE_CONFIG_KEY)
    if isinstance(text, str) and text.startswith(UNKNOWN):
        return
    if not isinstance(text, str):
        raise ConfigError(f"hybridctl:kueueConfigMap: ConfigMap {where} has no {KUEUE_CONFIG_KEY}: it is not "
                          "Kueue's manager configuration; name the one your Kueue install reads")
    try:
        live = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"hybridctl:kueueConfigMap: {where} {KUEUE_CONFIG_KEY} is not YAML: {exc}") from exc
    found = differences(live, wanted)
    if found:
        raise ConfigError(f"Kueue's configuration ({where}) is not what these queues need: {'; '.join(found)}. "
                          "Set them as stacks/README.md shows (\"Kueue's own configuration\") and restart Kueue's "
                          "controller; no queue was created or changed")


def _runs_with_flag(spec: Mapping[str, Any]) -> bool:
    containers = (spec.get("template") or {}).get("spec", {}).get("containers") or []
    words = [str(w) for c in containers for w in (*(c.get("command") or []), *(c.get("args") or []))]
    return any(w in (PROVISIONING_FLAG, f"{PROVISIONING_FLAG}=true") for w in words)


def check_autoscaler(spec: Mapping[str, Any] | str | None, where: str) -> None:
    if isinstance(spec, str) and spec.startswith(UNKNOWN):
        return
    if not isinstance(spec, Mapping) or not _runs_with_flag(spec):
        raise ConfigError(
            f"hybridctl:clusterAutoscaler: Cluster Autoscaler ({where}) runs without {PROVISIONING_FLAG}: every burst "
            "and opportunistic job would wait for its ProvisioningRequest forever. Add the flag, or, where the "
            f"autoscaler is not that Deployment, name it, or set hybridctl:clusterAutoscaler to {ATTESTED} to vouch "
            "for the flag; no queue was created or changed")


def prerequisites(cfg: QueuesConfig, provider: pulumi.ProviderResource, wanted: Mapping[str, Any]) -> pulumi.Output[None]:
    """Read and check what the cluster must hold; the output fails (the deployment with it) on a difference."""
    opts = pulumi.ResourceOptions(provider=provider)
    config_map = k8s.core.v1.ConfigMap.get("kueue-manager-config", cfg.kueue_config_map, opts=opts)
    checks: list[pulumi.Output[None]] = [config_map.data.apply(
        lambda data: check_kueue(data, wanted, cfg.kueue_config_map))]
    if cfg.provisioning_request and cfg.cluster_autoscaler != ATTESTED:
        deployment = k8s.apps.v1.Deployment.get("cluster-autoscaler", cfg.cluster_autoscaler, opts=opts)
        checks.append(deployment.spec.apply(lambda spec: check_autoscaler(spec, cfg.cluster_autoscaler)))
    return pulumi.Output.all(*checks).apply(lambda _: None)
