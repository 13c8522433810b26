"""KubeSchedulerConfiguration v1 as frozen dataclasses: as written (Spec) and resolved.

The ``*Spec`` types hold what the file says, with None/zero meaning "not set" exactly where
upstream's Go types use a nil pointer or a zero value, so defaults.py can apply upstream's rules.
The resolved types are what the scheduler consumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from profiles.spec import EXTENSION_POINTS, MULTI_POINT

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


def frozen_mapping(items: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(items or {}))


# ---- plugins -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PluginRef:
    """One ``{name, weight}`` entry. ``origin`` is the field path the user wrote it at (None for
    upstream defaults); it only serves error messages and is ignored by equality."""

    name: str
    weight: int | None = None
    origin: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()

    def disabled_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.disabled)


EMPTY_SET = PluginSet()


@dataclass(frozen=True)
class Plugins:
    """The ``plugins:`` block, keyed by v1 field name (``multiPoint`` and every point)."""

    sets: Mapping[str, PluginSet] = field(default_factory=frozen_mapping)

    def __getitem__(self, point: str) -> PluginSet:
        return self.sets.get(point, EMPTY_SET)

    @property
    def multi_point(self) -> PluginSet:
        return self[MULTI_POINT]

    def enabled_names(self) -> frozenset[str]:
        return frozenset(p.name for s in self.sets.values() for p in s.enabled)


@dataclass(frozen=True)
class PluginConfigEntry:
    name: str
    args: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ProfileSpec:
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins | None = None
    plugin_config: tuple[PluginConfigEntry, ...] = ()


# ---- component-base blocks ------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderElectionSpec:
    leader_elect: bool | None = None
    lease_duration: float = 0.0  # seconds; 0 = unset
    renew_deadline: float = 0.0
    retry_period: float = 0.0
    resource_lock: str = ""
    resource_name: str = ""
    resource_namespace: str = ""


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class ClientConnection:
    """Zero qps/burst and empty contentType mean "unset" in the spec; resolved holds defaults.

    The resolved contentType defaults to JSON, not to upstream's protobuf: aiosched's client
    encodes and decodes JSON only, and profiles/fields.py refuses any other value.
    """

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = JSON_CONTENT_TYPE
    qps: float = 50.0
    burst: int = 100


UNSET_CLIENT_CONNECTION = ClientConnection(content_type="", qps=0.0, burst=0)


# ---- extenders ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtenderTLS:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""


@dataclass(frozen=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True)
class Extender:
    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLS | None = None
    http_timeout: float = 0.0  # seconds; 0 = the caller's default (upstream: 5s)
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


# ---- command-line overrides ------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigOverride:
    """One command-line flag that overrides a field of the file (or of the defaults, without
    one), as kube-scheduler's ApplyLeaderElectionTo / ApplyDeprecated do.

    ``path`` is the field's path in the file (``leaderElection.leaseDuration``), ``value`` is
    already of the field's type (seconds for durations), ``flag`` names the flag for messages.
    """

    path: str
    value: Any
    flag: str


ConfigOverrides = tuple[ConfigOverride, ...]


# ---- the whole file as written --------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSpec:
    source: str = "<defaults>"
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: int | None = None
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    leader_election: LeaderElectionSpec = LeaderElectionSpec()
    client_connection: ClientConnection = UNSET_CLIENT_CONNECTION
    extenders: tuple[Extender, ...] = ()
    profiles: tuple[ProfileSpec, ...] = ()
    delay_cache_until_active: bool = False
    enable_profiling: bool | None = None
    enable_contention_profiling: bool | None = None
    notes: tuple[str, ...] = ()


# ---- resolved -------------------------------------------------------------------------------


class WeightedPlugin(NamedTuple):
    name: str
    weight: int  # meaningful at "score" and "placementScore"; 0 elsewhere


@dataclass(frozen=True)
class ResolvedProfile:
    scheduler_name: str
    percentage_of_nodes_to_score: int
    plugins: Mapping[str, tuple[WeightedPlugin, ...]]  # every point in EXTENSION_POINTS
    args: Mapping[str, Any]  # decoded args per plugin name (plugins that have args)
    notes: tuple[str, ...] = ()

    def at(self, point: str) -> tuple[WeightedPlugin, ...]:
        return self.plugins.get(point, ())

    def names_at(self, point: str) -> tuple[str, ...]:
        return tuple(p.name for p in self.at(point))

    @property
    def queue_sort(self) -> str:
        return self.at("queueSort")[0].name

    @property
    def score_weights(self) -> Mapping[str, int]:
        return {p.name: p.weight for p in self.at("score")}

    def plugin_names(self) -> tuple[str, ...]:
        """Every plugin used anywhere in this profile, first-use order."""
        seen: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            for p in self.at(point):
                seen.setdefault(p.name, None)
        return tuple(seen)


@dataclass(frozen=True)
class ResolvedConfig:
    source: str
    parallelism: int
    percentage_of_nodes_to_score: int
    pod_initial_backoff_seconds: int
    pod_max_backoff_seconds: int
    leader_election: LeaderElection
    client_connection: ClientConnection
    extenders: tuple[Extender, ...]
    delay_cache_until_active: bool
    enable_profiling: bool
    enable_contention_profiling: bool
    profiles: tuple[ResolvedProfile, ...]
    notes: tuple[str, ...] = ()

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)

    def profile(self, scheduler_name: str) -> ResolvedProfile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
