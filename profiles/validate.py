"""Validation of a defaulted configuration, as pkg/scheduler/apis/config/validation does it
(plus component-base's leader election / client connection checks).

Registry-dependent checks (unknown plugins, extension points, weights, args) live in resolve.py.
"""

from __future__ import annotations

from apimachinery.validation import QualifiedNameViolation, qualified_name_violations
from profiles.config import (
    API_VERSION,
    ClientConnection,
    ConfigSpec,
    Extender,
    LeaderElection,
    PluginSet,
    ProfileSpec,
)
from profiles.errors import ErrorSink, child, index
from profiles.spec import EXTENSION_POINTS, MULTI_POINT

# Plugins removed from the v1 API (validation.go invalidPluginsByVersion).
REMOVED_IN_V1 = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

# IsQualifiedName's rules (apimachinery.validation), worded as profile validation reports them
_QUALIFIED_NAME_PROBLEMS = {
    QualifiedNameViolation.TOO_MANY_PARTS: (
        "a qualified name must consist of an optional prefix and a name"
    ),
    QualifiedNameViolation.PREFIX_EMPTY: "prefix part must be non-empty",
    QualifiedNameViolation.PREFIX_TOO_LONG: "prefix part must be a lowercase RFC 1123 subdomain",
    QualifiedNameViolation.PREFIX_INVALID: "prefix part must be a lowercase RFC 1123 subdomain",
    QualifiedNameViolation.NAME_EMPTY: "name part must be non-empty",
    QualifiedNameViolation.NAME_TOO_LONG: "name part must be no more than 63 characters",
    QualifiedNameViolation.NAME_INVALID: (
        "name part must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    ),
}


def validate_config(
    spec: ConfigSpec, le: LeaderElection, cc: ClientConnection, sink: ErrorSink
) -> None:
    """``spec`` must already have gone through defaults.apply_defaults."""
    _validate_client_connection(cc, sink)
    _validate_leader_election(le, sink)
    if spec.parallelism is not None and spec.parallelism <= 0:
        sink.add("parallelism", f"must be greater than 0, got {spec.parallelism}")
    if not spec.profiles:
        sink.add("profiles", "required: at least one profile")
    seen: dict[str, int] = {}
    for i, profile in enumerate(spec.profiles):
        path = index("profiles", i)
        _validate_profile(profile, path, sink)
        name = profile.scheduler_name
        if name:
            if name in seen:
                first = child(index("profiles", seen[name]), "schedulerName")
                sink.add(
                    child(path, "schedulerName"),
                    f"duplicate scheduler name {name!r} (also at {first})",
                )
            else:
                seen[name] = i
    if spec.profiles:
        _validate_common_queue_sort(spec.profiles, sink)
    _validate_percentage("percentageOfNodesToScore", spec.percentage_of_nodes_to_score, sink)
    initial = spec.pod_initial_backoff_seconds
    maximum = spec.pod_max_backoff_seconds
    if initial is not None and initial <= 0:
        sink.add("podInitialBackoffSeconds", f"must be greater than 0, got {initial}")
    if initial is not None and maximum is not None and maximum < initial:
        sink.add(
            "podMaxBackoffSeconds",
            f"must be greater than or equal to podInitialBackoffSeconds ({initial}), got {maximum}",
        )
    _validate_extenders(spec.extenders, sink)


def _validate_client_connection(cc: ClientConnection, sink: ErrorSink) -> None:
    if cc.burst < 0:
        sink.add("clientConnection.burst", f"must be non-negative, got {cc.burst}")
    if cc.qps < 0:
        sink.add("clientConnection.qps", f"must be non-negative, got {cc.qps}")


def _validate_leader_election(le: LeaderElection, sink: ErrorSink) -> None:
    if not le.leader_elect:
        return
    p = "leaderElection"
    for key, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            sink.add(child(p, key), f"must be greater than zero, got {value}s")
    if le.lease_duration <= le.renew_deadline:
        sink.add(
            child(p, "leaseDuration"),
            f"must be greater than renewDeadline ({le.renew_deadline}s), got {le.lease_duration}s",
        )
    if le.resource_lock != "leases":
        sink.add(child(p, "resourceLock"), f'must be "leases", got {le.resource_lock!r}')


def _validate_percentage(path: str, value: int | None, sink: ErrorSink) -> None:
    if value is not None and not 0 <= value <= 100:
        sink.add(path, f"must be in the range [0, 100], got {value}")


def _removed_message(name: str) -> str:
    return (
        f"plugin {name!r} was removed in {API_VERSION!r} "
        f"(KubeSchedulerConfiguration is version {API_VERSION!r})"
    )


def _validate_profile(profile: ProfileSpec, path: str, sink: ErrorSink) -> None:
    if not profile.scheduler_name:
        sink.add(child(path, "schedulerName"), "required: expected a non-empty scheduler name")
    _validate_percentage(
        child(path, "percentageOfNodesToScore"), profile.percentage_of_nodes_to_score, sink
    )
    if profile.plugins is not None:
        for point in (*EXTENSION_POINTS, MULTI_POINT):
            for ref in profile.plugins[point].enabled:
                where = ref.origin or child(child(path, "plugins"), point)
                if point != MULTI_POINT and ref.name in REMOVED_IN_V1:
                    sink.add(where, _removed_message(ref.name))
                if ref.weight is not None and ref.weight < 0:
                    sink.add(
                        child(where, "weight"),
                        f"must be non-negative (unset or 0 means 1), got {ref.weight}",
                    )
    seen: set[str] = set()
    for j, entry in enumerate(profile.plugin_config):
        p = index(child(path, "pluginConfig"), j)
        if entry.name in seen:
            sink.add(p, f"duplicate pluginConfig for plugin {entry.name!r}")
        seen.add(entry.name)
        if entry.name in REMOVED_IN_V1:
            sink.add(p, _removed_message(entry.name))


def _queue_sort_set(profile: ProfileSpec) -> PluginSet:
    return profile.plugins["queueSort"] if profile.plugins is not None else PluginSet()


def _validate_common_queue_sort(profiles: tuple[ProfileSpec, ...], sink: ErrorSink) -> None:
    """validateCommonQueueSort: the queueSort plugin set (as merged) and its args must be equal
    in every profile. The resolved queue sort plugin is compared again in resolve.py."""
    canon = _queue_sort_set(profiles[0])
    if len(canon.enabled) > 1:
        sink.add(
            "profiles[0].plugins.queueSort.enabled",
            f"only one queue sort plugin can be enabled, got {len(canon.enabled)}",
        )
    name = canon.enabled[0].name if canon.enabled else ""
    canon_args = next((c.args for c in profiles[0].plugin_config if c.name == name), None)
    for i in range(1, len(profiles)):
        if _queue_sort_set(profiles[i]) != canon:
            sink.add(
                child(index("profiles", i), "plugins.queueSort"),
                "must be the same for all profiles",
            )
        for c in profiles[i].plugin_config:
            if name and c.name == name and c.args != canon_args:
                sink.add(
                    child(index("profiles", i), "pluginConfig"),
                    f"args of queueSort plugin {name!r} must be the same for all profiles",
                )


def _validate_extenders(extenders: tuple[Extender, ...], sink: ErrorSink) -> None:
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = index("extenders", i)
        if not ext.url_prefix:
            sink.add(child(path, "urlPrefix"), "required: expected the extender's URL prefix")
        if ext.prioritize_verb and ext.weight <= 0:
            sink.add(
                child(path, "weight"),
                f"must be positive when prioritizeVerb is set, got {ext.weight}",
            )
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            p = child(index(child(path, "managedResources"), j), "name")
            for msg in extended_resource_name_errors(res.name):
                sink.add(p, msg)
            if res.name in managed:
                sink.add(p, f"duplicate extender managed resource name {res.name!r}")
            managed.add(res.name)
    if binders > 1:
        sink.add("extenders", f"only one extender can implement bind, found {binders}")


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery IsQualifiedName: optional DNS-1123 subdomain prefix, '/', 63-char name;
    the first problem only."""
    violations = qualified_name_violations(value)
    return [f"{value!r}: {_QUALIFIED_NAME_PROBLEMS[violations[0]]}"] if violations else []


def extended_resource_name_errors(name: str) -> list[str]:
    errors = qualified_name_errors(name)
    if errors:
        return errors
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or qualified_name_errors("requests." + name):
        return [f"{name!r} is an invalid extended resource name"]
    return []
