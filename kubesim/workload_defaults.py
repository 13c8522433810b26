"""API-server defaults of the workload kinds kubesim's controllers run (Deployment, DaemonSet,
Job), as pkg/apis/apps/v1/defaults.go and pkg/apis/batch/v1/defaults.go set them. The pod
template itself is defaulted by defaults.py like any pod spec."""

from __future__ import annotations

from typing import Any


def _rolling(spec: dict[str, Any], key: str, defaults: dict[str, Any]) -> None:
    strategy = spec.setdefault(key, {})
    if not isinstance(strategy, dict):
        return
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        if isinstance(rolling, dict):
            for name, value in defaults.items():
                rolling.setdefault(name, value)


def default_deployment(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    _rolling(spec, "strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def default_daemonset(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    _rolling(spec, "updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})
    spec.setdefault("revisionHistoryLimit", 10)


def default_job(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")


WORKLOAD_DEFAULTS = {
    "Deployment": default_deployment,
    "DaemonSet": default_daemonset,
    "Job": default_job,
}
