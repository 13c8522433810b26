"""``aiosched check-config FILE``: print the resolved profiles as YAML, or the errors."""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from profiles.api import load_config
from profiles.config import ResolvedConfig, ResolvedProfile
from profiles.duration import format_duration
from profiles.errors import ConfigInvalidError
from profiles.fields import caveats
from profiles.spec import EXTENSION_POINTS, WEIGHTED_POINTS, PluginRegistry


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
            "kubeconfig": cfg.client_connection.kubeconfig
            or "unset (--kubeconfig, else in-cluster, else ~/.kube/config)",
            "contentType": cfg.client_connection.content_type,
            "qps": cfg.client_connection.qps,
            "burst": cfg.client_connection.burst,
        },
        "delayCacheUntilActive": cfg.delay_cache_until_active,
    }
    if cfg.extenders:
        doc["extenders"] = [_plain(e) for e in cfg.extenders]
    if cfg.notes:
        doc["notes"] = list(cfg.notes)
    # What the file asks for that aiosched does not do (parallelism, profiling, ...).
    doc["caveats"] = list(caveats(cfg))
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
                f"{e.name} (weight {e.weight})" if point in WEIGHTED_POINTS else e.name
                for e in entries
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


# Decoded args keep Python names; check-config shows them as the YAML a user writes. Fields
# whose upstream place is not simply their camelCased name, by (class name, field): the decoded
# classes belong to plugins, which profiles/ must not import.
_UPSTREAM_PATHS: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("ScoringStrategy", "shape"): ("requestedToCapacityRatio", "shape"),
    ("NodeAffinityArgs", "added_required"): (
        "addedAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    ("NodeAffinityArgs", "added_preferred"): (
        "addedAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    ("NodeSelector", "terms"): ("nodeSelectorTerms",),
    ("NodeSelectorTerm", "label_requirements"): ("matchExpressions",),
    ("NodeSelectorTerm", "field_requirements"): ("matchFields",),
}
_NUMERIC_OPERATORS = ("Gt", "Lt")


def camel_case(name: str) -> str:
    """ignored_resource_groups -> ignoredResourceGroups (upstream's JSON field names)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _plain(value: Any) -> Any:
    """Decoded args (dataclasses, enums, tuples, mappings) as plain YAML-safe data, with
    upstream's field names. Unset (None) and empty fields are left out, as upstream's
    `omitempty`; an object may render itself with a ``to_config()`` method."""
    to_config = getattr(value, "to_config", None)
    if callable(to_config):
        return _plain(to_config())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain_dataclass(value)
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return sorted((_plain(v) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _plain_dataclass(value: Any) -> dict[str, Any]:
    kind = type(value).__name__
    if kind == "Requirement":  # a label selector requirement, as matchExpressions shows it
        values = (
            [str(value.bound)] if value.operator in _NUMERIC_OPERATORS else sorted(value.values)
        )
        return {
            "key": value.key,
            "operator": value.operator,
            **({"values": values} if values else {}),
        }
    if kind == "PreferredSchedulingTerm":  # its preference is held as a one-term selector
        terms = value.preference.terms
        return {"weight": value.weight, "preference": _plain(terms[0]) if terms else {}}
    if kind == "FieldRequirement":
        return {"key": value.key, "operator": value.operator, "values": [value.value]}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        field_value = getattr(value, f.name)
        if field_value is None or (isinstance(field_value, Collection) and not field_value):
            continue
        path = _UPSTREAM_PATHS.get((kind, f.name), (camel_case(f.name),))
        target = out
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = _plain(field_value)
    return out


def check_config_main(
    path: str | Path,
    registry: PluginRegistry,
    out: TextIO | None = None,
    err: TextIO | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> int:
    """Print the resolved config and return 0, or print every error to ``err`` and return 1."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        cfg = load_config(path, registry, feature_gates=feature_gates)
    except ConfigInvalidError as exc:
        err.write(f"{path}: invalid KubeSchedulerConfiguration ({len(exc.errors)} errors)\n")
        for e in exc.errors:
            err.write(f"  {e}\n")
        return 1
    out.write(render_profiles(cfg))
    return 0
