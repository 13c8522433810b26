"""What aiosched does with every field of KubeSchedulerConfiguration it accepts.

Nothing in a configuration is silently ignored: each field the decoder (load.py) accepts is
listed in :data:`FIELDS` with its effect, and tests/profiles/test_fields.py holds every entry to
where it takes effect. A value aiosched cannot honour is refused when the file is loaded (by
``aiosched run``, by a reload and by ``aiosched check-config``) with the field path and what to
write instead; fields that are accepted but change nothing are reported as caveats by
check-config and at start-up.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from profiles.config import JSON_CONTENT_TYPE, PROTOBUF_CONTENT_TYPE, ConfigSpec, ResolvedConfig
from profiles.load import (
    CLIENT_CONNECTION_FIELDS,
    DEPRECATED_TOP_LEVEL,
    EXTENDER_FIELDS,
    EXTENDER_TLS_FIELDS,
    LEADER_ELECTION_FIELDS,
    MANAGED_RESOURCE_FIELDS,
    PLUGIN_CONFIG_FIELDS,
    PLUGIN_FIELDS,
    PLUGIN_SET_FIELDS,
    PROFILE_FIELDS,
    TOP_LEVEL_FIELDS,
)
from profiles.spec import PLUGIN_SET_KEYS


class Effect(enum.Enum):
    IDENTIFIES = "identifies the document; any other value is refused"
    RELOADABLE = "applied at start; a reload applies a change between two scheduling cycles"
    RESTART = (
        "applied at start; a reload that changes it is logged and counted as "
        'aiosched_config_reloads_total{result="restart_required"}: restart to apply it'
    )
    NO_EFFECT = "accepted and validated as upstream does, but changes nothing in aiosched"
    NOT_SERVED = "false or absent: nothing is served; true is refused"
    IGNORED = "not part of v1; accepted for files carried over from v1beta*, ignored with a note"


@dataclass(frozen=True)
class FieldSupport:
    effect: Effect
    where: str  # what consumes the field in aiosched
    refused: str = ""  # the values refused at load, when some are


_PROFILING = (
    "kube-scheduler serves /debug/pprof; aiosched serves no profiling endpoints. true is "
    "refused; absent (upstream's default, true) or false serve nothing"
)


def _plugin_paths() -> Iterator[str]:
    for point in PLUGIN_SET_KEYS:
        for list_name in PLUGIN_SET_FIELDS:
            for field_name in PLUGIN_FIELDS:
                yield f"profiles[].plugins.{point}.{list_name}[].{field_name}"


def _fields() -> dict[str, FieldSupport]:
    reload = Effect.RELOADABLE
    restart = Effect.RESTART
    fields: dict[str, FieldSupport] = {
        "apiVersion": FieldSupport(Effect.IDENTIFIES, "profiles/load.py"),
        "kind": FieldSupport(Effect.IDENTIFIES, "profiles/load.py"),
        "parallelism": FieldSupport(
            restart,
            "the filter worker processes (min(parallelism, cores) - 1, aiosched-filter-N) over "
            "which a cycle's Filter row pass is split when its estimated cost is worth it "
            "(scheduler/parallel/, docs/processes.md); also framework Handle.parallelism",
        ),
        "percentageOfNodesToScore": FieldSupport(
            reload, "numFeasibleNodesToFind, per profile unless the profile sets its own"
        ),
        "podInitialBackoffSeconds": FieldSupport(
            reload, "scheduling queue backoff (pods entering backoffQ after a reload use it)"
        ),
        "podMaxBackoffSeconds": FieldSupport(
            reload, "scheduling queue backoff (pods entering backoffQ after a reload use it)"
        ),
        "delayCacheUntilActive": FieldSupport(
            restart,
            "with leader election: informers start only after the Lease is won (false: they "
            "sync while standing by, and scheduling starts on winning)",
        ),
        "enableProfiling": FieldSupport(Effect.NOT_SERVED, "HTTP endpoints", _PROFILING),
        "enableContentionProfiling": FieldSupport(Effect.NOT_SERVED, "HTTP endpoints", _PROFILING),
        "leaderElection.leaderElect": FieldSupport(restart, "scheduler/client/leaderelection.py"),
        "leaderElection.leaseDuration": FieldSupport(restart, "scheduler/client/leaderelection.py"),
        "leaderElection.renewDeadline": FieldSupport(restart, "scheduler/client/leaderelection.py"),
        "leaderElection.retryPeriod": FieldSupport(restart, "scheduler/client/leaderelection.py"),
        "leaderElection.resourceLock": FieldSupport(
            restart, "scheduler/client/leaderelection.py", 'anything but "leases" (as upstream)'
        ),
        "leaderElection.resourceName": FieldSupport(restart, "scheduler/client/leaderelection.py"),
        "leaderElection.resourceNamespace": FieldSupport(
            restart, "scheduler/client/leaderelection.py"
        ),
        "clientConnection.kubeconfig": FieldSupport(
            restart, "scheduler/client/rest.py (--kubeconfig, when given, wins)"
        ),
        "clientConnection.acceptContentTypes": FieldSupport(
            restart,
            "scheduler/client/rest.py sends Accept: application/json",
            "a list without application/json",
        ),
        "clientConnection.contentType": FieldSupport(
            restart,
            "scheduler/client/rest.py encodes request bodies as JSON",
            f"anything but {JSON_CONTENT_TYPE} (absent means JSON in aiosched; upstream's "
            f"default is {PROTOBUF_CONTENT_TYPE})",
        ),
        "clientConnection.qps": FieldSupport(restart, "scheduler/client/rest.py token bucket"),
        "clientConnection.burst": FieldSupport(restart, "scheduler/client/rest.py token bucket"),
        "profiles[].schedulerName": FieldSupport(reload, "scheduler/cycle/profile_set.py"),
        "profiles[].percentageOfNodesToScore": FieldSupport(reload, "scheduler/cycle/algorithm.py"),
        "profiles[].pluginConfig[].name": FieldSupport(reload, "plugin args (decode_args)"),
        "profiles[].pluginConfig[].args": FieldSupport(reload, "plugin args (decode_args)"),
    }
    for path in _plugin_paths():
        fields[path] = FieldSupport(reload, "scheduler/framework/runtime.py plugin lists")
        weighted = (".score.enabled[].", ".placementScore.enabled[].", ".multiPoint.enabled[].")
        if path.endswith(".weight") and not any(point in path for point in weighted):
            fields[path] = FieldSupport(
                Effect.NO_EFFECT,
                "only Score and PlacementScore plugins have weights; ignored here, as upstream",
            )
    for name in EXTENDER_FIELDS:
        if name not in ("tlsConfig", "managedResources"):
            fields[f"extenders[].{name}"] = FieldSupport(reload, "scheduler/extenders/")
    for name in EXTENDER_TLS_FIELDS:
        fields[f"extenders[].tlsConfig.{name}"] = FieldSupport(reload, "scheduler/extenders/tls.py")
    for name in MANAGED_RESOURCE_FIELDS:
        fields[f"extenders[].managedResources[].{name}"] = FieldSupport(
            reload, "scheduler/extenders/ and NodeResourcesFit's ignored resources"
        )
    for name in DEPRECATED_TOP_LEVEL:
        fields[name] = FieldSupport(Effect.IGNORED, "a note at load")
    return fields


#: Every leaf field aiosched accepts, by path (``[]`` marks a list's items).
FIELDS: Mapping[str, FieldSupport] = MappingProxyType(_fields())


def accepted_paths() -> frozenset[str]:
    """Every leaf path the decoder accepts, built from its own field lists (load.py)."""
    paths: set[str] = set()
    nested = {"leaderElection", "clientConnection", "profiles", "extenders"}
    paths.update(name for name in TOP_LEVEL_FIELDS if name not in nested)
    paths.update(f"leaderElection.{name}" for name in LEADER_ELECTION_FIELDS)
    paths.update(f"clientConnection.{name}" for name in CLIENT_CONNECTION_FIELDS)
    for name in PROFILE_FIELDS:
        if name == "plugins":
            paths.update(_plugin_paths())
        elif name == "pluginConfig":
            paths.update(f"profiles[].pluginConfig[].{c}" for c in PLUGIN_CONFIG_FIELDS)
        else:
            paths.add(f"profiles[].{name}")
    for name in EXTENDER_FIELDS:
        if name == "tlsConfig":
            paths.update(f"extenders[].tlsConfig.{t}" for t in EXTENDER_TLS_FIELDS)
        elif name == "managedResources":
            paths.update(f"extenders[].managedResources[].{m}" for m in MANAGED_RESOURCE_FIELDS)
        else:
            paths.add(f"extenders[].{name}")
    return frozenset(paths)


# ---- refused values -------------------------------------------------------------------------


def refusals(spec: ConfigSpec) -> list[tuple[str, str]]:
    """(path, message) for every value in ``spec`` (as written, before defaults) that aiosched
    cannot honour."""
    out: list[tuple[str, str]] = []
    for path, value in (
        ("enableProfiling", spec.enable_profiling),
        ("enableContentionProfiling", spec.enable_contention_profiling),
    ):
        if value is True:
            out.append(
                (
                    path,
                    "aiosched serves no profiling endpoints (kube-scheduler's /debug/pprof); "
                    "remove the field or set it to false",
                )
            )
    cc = spec.client_connection
    if cc.content_type and cc.content_type != JSON_CONTENT_TYPE:
        out.append(
            (
                "clientConnection.contentType",
                f"aiosched's client sends {JSON_CONTENT_TYPE} only, got {cc.content_type!r}; "
                f'set it to "{JSON_CONTENT_TYPE}" or leave it out',
            )
        )
    accepted = [t.strip().split(";")[0] for t in cc.accept_content_types.split(",") if t.strip()]
    if accepted and JSON_CONTENT_TYPE not in accepted and "*/*" not in accepted:
        out.append(
            (
                "clientConnection.acceptContentTypes",
                f"aiosched's client decodes {JSON_CONTENT_TYPE} only, got "
                f"{cc.accept_content_types!r}; include {JSON_CONTENT_TYPE} or leave it out",
            )
        )
    return out


# ---- reload ---------------------------------------------------------------------------------

_RESOLVED: Mapping[str, Callable[[ResolvedConfig], Any]] = MappingProxyType(
    {
        "delayCacheUntilActive": lambda c: c.delay_cache_until_active,
        "leaderElection.leaderElect": lambda c: c.leader_election.leader_elect,
        "leaderElection.leaseDuration": lambda c: c.leader_election.lease_duration,
        "leaderElection.renewDeadline": lambda c: c.leader_election.renew_deadline,
        "leaderElection.retryPeriod": lambda c: c.leader_election.retry_period,
        "leaderElection.resourceLock": lambda c: c.leader_election.resource_lock,
        "leaderElection.resourceName": lambda c: c.leader_election.resource_name,
        "leaderElection.resourceNamespace": lambda c: c.leader_election.resource_namespace,
        "clientConnection.kubeconfig": lambda c: c.client_connection.kubeconfig,
        "clientConnection.acceptContentTypes": lambda c: c.client_connection.accept_content_types,
        "clientConnection.contentType": lambda c: c.client_connection.content_type,
        "clientConnection.qps": lambda c: c.client_connection.qps,
        "clientConnection.burst": lambda c: c.client_connection.burst,
        "parallelism": lambda c: c.parallelism,
    }
)


def restart_required(running: ResolvedConfig, new: ResolvedConfig) -> tuple[str, ...]:
    """The fields whose change a reload cannot apply (Effect.RESTART) that differ."""
    return tuple(
        path
        for path, support in FIELDS.items()
        if support.effect is Effect.RESTART and _RESOLVED[path](running) != _RESOLVED[path](new)
    )


# ---- caveats --------------------------------------------------------------------------------


def caveats(config: ResolvedConfig) -> tuple[str, ...]:
    """What a valid configuration asks for that aiosched does not do (check-config prints
    these; ``aiosched run`` logs them at start)."""
    out: list[str] = []
    if config.enable_profiling:
        out.append(
            "enableProfiling is true by default (kube-scheduler serves /debug/pprof); aiosched "
            "serves no profiling endpoints"
        )
    if config.delay_cache_until_active and not config.leader_election.leader_elect:
        out.append(
            "delayCacheUntilActive has no effect without leader election (informers start at "
            "once), as in kube-scheduler"
        )
    return tuple(out)
