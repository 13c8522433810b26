"""``aiosched check-config FILE``: print the resolved profiles as YAML, or the errors."""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from profiles.api import load_config
from profiles.config import ResolvedConfig, ResolvedProfile
from profiles.duration import format_duration
from profiles.errors import ConfigInvalidError
from profiles.spec import EXTENSION_POINTS, PluginRegistry


def render_profiles(cfg: ResolvedConfig) -> str:
    """Every profile, every extension point's plugins in order (score with weights), the
    decoded args and the notes about what was left out, as a YAML document."""
    le = cfg.leader_election
    doc: dict[str, Any] = {
        "source": cfg.source,
        "parallelism": cfg.parallelism,
        "percentageOfNodesToScore": _pct(cfg.percentage_of_nodes_to_score),
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resource": f"{le.resource_lock}/{le.resource_namespace}/{le.resource_name}",
        },
        "clientConnection": {
            "qps": cfg.client_connection.qps,
            "burst": cfg.client_connection.burst,
        },
    }
    if cfg.extenders:
        doc["extenders"] = [_plain(e) for e in cfg.extenders]
    if cfg.notes:
        doc["notes"] = list(cfg.notes)
    doc["profiles"] = [_profile(p) for p in cfg.profiles]
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100)


def _pct(value: int) -> Any:
    return "0 (adaptive)" if value == 0 else value


def _profile(p: ResolvedProfile) -> dict[str, Any]:
    plugins: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        entries = p.at(point)
        if entries:
            plugins[point] = [
                f"{e.name} (weight {e.weight})" if point == "score" else e.name for e in entries
            ]
    out: dict[str, Any] = {
        "schedulerName": p.scheduler_name,
        "percentageOfNodesToScore": _pct(p.percentage_of_nodes_to_score),
        "plugins": plugins,
    }
    if p.args:
        out["pluginConfig"] = {name: _plain(p.args[name]) for name in sorted(p.args)}
    if p.notes:
        out["notes"] = list(p.notes)
    return out


def _plain(value: Any) -> Any:
    """Decoded args (dataclasses, enums, tuples, mappings) as plain YAML-safe data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def check_config_main(
    path: str | Path,
    registry: PluginRegistry,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Print the resolved config and return 0, or print every error to ``err`` and return 1."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        cfg = load_config(path, registry)
    except ConfigInvalidError as exc:
        err.write(f"{path}: invalid KubeSchedulerConfiguration ({len(exc.errors)} errors)\n")
        for e in exc.errors:
            err.write(f"  {e}\n")
        return 1
    out.write(render_profiles(cfg))
    return 0
