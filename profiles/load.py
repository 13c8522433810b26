"""YAML/JSON text -> ConfigSpec, strictly: unknown fields, wrong types and duplicate keys are
errors with their field path (upstream decodes the v1 config with a strict decoder)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import yaml

from apimachinery.bounded_yaml import DocumentTooLarge, excerpt, load
from profiles.config import (
    API_VERSION,
    KIND,
    ClientConnection,
    ConfigSpec,
    Extender,
    ExtenderManagedResource,
    ExtenderTLS,
    LeaderElectionSpec,
    PluginConfigEntry,
    PluginRef,
    Plugins,
    PluginSet,
    ProfileSpec,
    frozen_mapping,
)
from profiles.duration import parse_duration
from profiles.errors import ErrorSink, child, index
from profiles.spec import PLUGIN_SET_KEYS

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Fields v1 dropped but that configs carried over from v1beta* still set; accepted, ignored.
DEPRECATED_TOP_LEVEL = ("healthzBindAddress", "metricsBindAddress")

# Every field name the decoder accepts, per object (profiles/fields.py says what each one does).
TOP_LEVEL_FIELDS: tuple[str, ...] = (
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
    "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
    "delayCacheUntilActive", *DEPRECATED_TOP_LEVEL,
)  # fmt: skip
LEADER_ELECTION_FIELDS: tuple[str, ...] = (
    "leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
    "resourceName", "resourceNamespace",
)  # fmt: skip
CLIENT_CONNECTION_FIELDS: tuple[str, ...] = (
    "kubeconfig", "acceptContentTypes", "contentType", "qps", "burst",
)  # fmt: skip
EXTENDER_FIELDS: tuple[str, ...] = (
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
    "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
    "ignorable",
)  # fmt: skip
EXTENDER_TLS_FIELDS: tuple[str, ...] = (
    "insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData",
)  # fmt: skip
MANAGED_RESOURCE_FIELDS: tuple[str, ...] = ("name", "ignoredByScheduler")
PROFILE_FIELDS: tuple[str, ...] = (
    "schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig",
)  # fmt: skip
PLUGIN_SET_FIELDS: tuple[str, ...] = ("enabled", "disabled")
PLUGIN_FIELDS: tuple[str, ...] = ("name", "weight")
PLUGIN_CONFIG_FIELDS: tuple[str, ...] = ("name", "args")

T = TypeVar("T")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (the strict JSON decoder does too)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate field {key!r} (line {mark.line + 1})", mark
            )
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# A KubeSchedulerConfiguration is a few levels deep (plugin args included). PyYAML and the
# decoder recurse once per level, so a document nested thousands deep would otherwise end in a
# RecursionError instead of a message naming the file.
MAX_NESTING_DEPTH = 100
#: The largest configuration accepted. kube-scheduler's own is a few kilobytes; this leaves
#: room for large pluginConfig args while keeping a parse (pure-Python YAML, about a second per
#: megabyte) short. Larger files are refused before they are parsed.
MAX_CONFIG_BYTES = 1 << 20


def parse_text(text: str, source: str = "<string>") -> ConfigSpec:
    """Decode one KubeSchedulerConfiguration document; raises ConfigInvalidError."""
    sink = ErrorSink(source)
    try:
        doc = load(text, _StrictLoader, max_bytes=MAX_CONFIG_BYTES)
    except DocumentTooLarge as exc:
        sink.add("", str(exc))
        sink.raise_if_any()
        raise AssertionError("unreachable") from exc
    except yaml.YAMLError as exc:
        sink.add("", f"not valid YAML/JSON{_yaml_problem(exc)}")
        sink.raise_if_any()
        raise AssertionError("unreachable") from exc
    except RecursionError:
        doc = _TOO_DEEP
    if doc is _TOO_DEEP or nesting_depth(doc) > MAX_NESTING_DEPTH:
        sink.add("", f"nested more than {MAX_NESTING_DEPTH} levels deep")
        sink.raise_if_any()
    if doc is None:
        sink.add("", "empty document: expected a KubeSchedulerConfiguration object")
        sink.raise_if_any()
    spec = _Decoder(sink).config(doc)
    sink.raise_if_any()
    return spec


_TOO_DEEP = object()


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line: where, then what (its own text spans several lines and
    quotes the offending source line)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    parts = (getattr(exc, "context", None), getattr(exc, "problem", None))
    what = ", ".join(p for p in parts if p) or " ".join(str(exc).split())
    return f"{where}: {what}"


def nesting_depth(doc: Any) -> int:
    """How many mappings/lists deep ``doc`` goes, walked without recursion. YAML aliases make
    shared (even cyclic) containers: one already walked at this depth or deeper is skipped, so
    an alias "bomb" costs its size, not its expansion."""
    deepest = 0
    walked_at: dict[int, int] = {}  # id(container) -> deepest depth it was walked at
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        depth += 1
        if walked_at.get(id(value), 0) >= depth:
            continue
        walked_at[id(value)] = depth
        deepest = max(deepest, depth)
        if depth > MAX_NESTING_DEPTH:
            break
        stack.extend((child_value, depth) for child_value in children)
    return deepest


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class _Decoder:
    def __init__(self, sink: ErrorSink) -> None:
        self.sink = sink
        self.notes: list[str] = []

    # ---- primitives -----------------------------------------------------------------------

    def _expect(self, path: str, what: str, value: Any) -> None:
        self.sink.add(path, f"expected {what}, got {_type_name(value)} {excerpt(value)}")

    def obj(self, value: Any, path: str, fields: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self._expect(path, "an object", value)
            return None
        for key in value:
            if not isinstance(key, str):
                self.sink.add(path, f"field names must be strings, got {excerpt(key)}")
            elif key not in fields:
                self.sink.add(
                    child(path, key), f"unknown field; expected one of {', '.join(fields)}"
                )
        return value

    def int_(self, m: Mapping[str, Any], key: str, path: str, lo: int, hi: int) -> int | None:
        v = m.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            self._expect(child(path, key), "an integer", v)
            return None
        if not lo <= v <= hi:
            self.sink.add(child(path, key), f"{v} is out of range [{lo}, {hi}]")
            return None
        return v

    def float_(self, m: Mapping[str, Any], key: str, path: str) -> float | None:
        v = m.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            self._expect(child(path, key), "a number", v)
            return None
        return float(v)

    def str_(self, m: Mapping[str, Any], key: str, path: str) -> str | None:
        v = m.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            self._expect(child(path, key), "a string", v)
            return None
        return v

    def bool_(self, m: Mapping[str, Any], key: str, path: str) -> bool | None:
        v = m.get(key)
        if v is None:
            return None
        if not isinstance(v, bool):
            self._expect(child(path, key), "a boolean", v)
            return None
        return v

    def duration(self, m: Mapping[str, Any], key: str, path: str) -> float | None:
        v = self.str_(m, key, path)
        if v is None:
            return None
        try:
            return parse_duration(v)
        except ValueError:
            self.sink.add(child(path, key), f'expected a duration like "15s", got {excerpt(v)}')
            return None

    def list_(
        self, m: Mapping[str, Any], key: str, path: str, item: Callable[[Any, str], T | None]
    ) -> tuple[T, ...]:
        v = m.get(key)
        if v is None:
            return ()
        p = child(path, key)
        if not isinstance(v, list):
            self._expect(p, "a list", v)
            return ()
        out = (item(x, index(p, i)) for i, x in enumerate(v))
        return tuple(x for x in out if x is not None)

    # ---- KubeSchedulerConfiguration ----------------------------------------------------------

    def config(self, doc: Any) -> ConfigSpec:
        m = self.obj(doc, "", TOP_LEVEL_FIELDS)
        if m is None:
            return ConfigSpec(source=self.sink.source)
        api_version = self.str_(m, "apiVersion", "")
        kind = self.str_(m, "kind", "")
        if api_version is None:
            self.sink.add("apiVersion", f'required: expected "{API_VERSION}"')
        elif api_version != API_VERSION:
            self.sink.add("apiVersion", f'expected "{API_VERSION}", got {excerpt(api_version)}')
        if kind is None:
            self.sink.add("kind", f'required: expected "{KIND}"')
        elif kind != KIND:
            self.sink.add("kind", f'expected "{KIND}", got {excerpt(kind)}')
        for key in DEPRECATED_TOP_LEVEL:
            if key in m:
                self.notes.append(f"{key} is not part of v1 and is ignored")
        return ConfigSpec(
            source=self.sink.source,
            api_version=api_version or API_VERSION,
            kind=kind or KIND,
            parallelism=self.int_(m, "parallelism", "", INT32_MIN, INT32_MAX),
            percentage_of_nodes_to_score=self.int_(
                m, "percentageOfNodesToScore", "", INT32_MIN, INT32_MAX
            ),
            pod_initial_backoff_seconds=self.int_(
                m, "podInitialBackoffSeconds", "", INT64_MIN, INT64_MAX
            ),
            pod_max_backoff_seconds=self.int_(m, "podMaxBackoffSeconds", "", INT64_MIN, INT64_MAX),
            leader_election=self.leader_election(m.get("leaderElection"), "leaderElection"),
            client_connection=self.client_connection(m.get("clientConnection"), "clientConnection"),
            extenders=self.list_(m, "extenders", "", self.extender),
            profiles=self.list_(m, "profiles", "", self.profile),
            delay_cache_until_active=bool(self.bool_(m, "delayCacheUntilActive", "")),
            enable_profiling=self.bool_(m, "enableProfiling", ""),
            enable_contention_profiling=self.bool_(m, "enableContentionProfiling", ""),
            notes=tuple(self.notes),
        )

    def leader_election(self, value: Any, path: str) -> LeaderElectionSpec:
        if value is None:
            return LeaderElectionSpec()
        m = self.obj(value, path, LEADER_ELECTION_FIELDS)
        if m is None:
            return LeaderElectionSpec()
        return LeaderElectionSpec(
            leader_elect=self.bool_(m, "leaderElect", path),
            lease_duration=self.duration(m, "leaseDuration", path) or 0.0,
            renew_deadline=self.duration(m, "renewDeadline", path) or 0.0,
            retry_period=self.duration(m, "retryPeriod", path) or 0.0,
            resource_lock=self.str_(m, "resourceLock", path) or "",
            resource_name=self.str_(m, "resourceName", path) or "",
            resource_namespace=self.str_(m, "resourceNamespace", path) or "",
        )

    def client_connection(self, value: Any, path: str) -> ClientConnection:
        unset = ClientConnection(content_type="", qps=0.0, burst=0)
        if value is None:
            return unset
        m = self.obj(value, path, CLIENT_CONNECTION_FIELDS)
        if m is None:
            return unset
        return ClientConnection(
            kubeconfig=self.str_(m, "kubeconfig", path) or "",
            accept_content_types=self.str_(m, "acceptContentTypes", path) or "",
            content_type=self.str_(m, "contentType", path) or "",
            qps=self.float_(m, "qps", path) or 0.0,
            burst=self.int_(m, "burst", path, INT32_MIN, INT32_MAX) or 0,
        )

    # ---- extenders ------------------------------------------------------------------------

    def extender(self, value: Any, path: str) -> Extender | None:
        m = self.obj(value, path, EXTENDER_FIELDS)
        if m is None:
            return None
        tls = m.get("tlsConfig")
        return Extender(
            url_prefix=self.str_(m, "urlPrefix", path) or "",
            filter_verb=self.str_(m, "filterVerb", path) or "",
            preempt_verb=self.str_(m, "preemptVerb", path) or "",
            prioritize_verb=self.str_(m, "prioritizeVerb", path) or "",
            weight=self.int_(m, "weight", path, INT64_MIN, INT64_MAX) or 0,
            bind_verb=self.str_(m, "bindVerb", path) or "",
            enable_https=bool(self.bool_(m, "enableHTTPS", path)),
            tls_config=None if tls is None else self.extender_tls(tls, child(path, "tlsConfig")),
            http_timeout=self.duration(m, "httpTimeout", path) or 0.0,
            node_cache_capable=bool(self.bool_(m, "nodeCacheCapable", path)),
            managed_resources=self.list_(m, "managedResources", path, self.managed_resource),
            ignorable=bool(self.bool_(m, "ignorable", path)),
        )

    def extender_tls(self, value: Any, path: str) -> ExtenderTLS | None:
        m = self.obj(value, path, EXTENDER_TLS_FIELDS)
        if m is None:
            return None
        return ExtenderTLS(
            insecure=bool(self.bool_(m, "insecure", path)),
            server_name=self.str_(m, "serverName", path) or "",
            cert_file=self.str_(m, "certFile", path) or "",
            key_file=self.str_(m, "keyFile", path) or "",
            ca_file=self.str_(m, "caFile", path) or "",
            cert_data=self.str_(m, "certData", path) or "",
            key_data=self.str_(m, "keyData", path) or "",
            ca_data=self.str_(m, "caData", path) or "",
        )

    def managed_resource(self, value: Any, path: str) -> ExtenderManagedResource | None:
        m = self.obj(value, path, MANAGED_RESOURCE_FIELDS)
        if m is None:
            return None
        return ExtenderManagedResource(
            name=self.str_(m, "name", path) or "",
            ignored_by_scheduler=bool(self.bool_(m, "ignoredByScheduler", path)),
        )

    # ---- profiles -------------------------------------------------------------------------

    def profile(self, value: Any, path: str) -> ProfileSpec | None:
        m = self.obj(value, path, PROFILE_FIELDS)
        if m is None:
            return None
        plugins = m.get("plugins")
        return ProfileSpec(
            scheduler_name=self.str_(m, "schedulerName", path),
            percentage_of_nodes_to_score=self.int_(
                m, "percentageOfNodesToScore", path, INT32_MIN, INT32_MAX
            ),
            plugins=None if plugins is None else self.plugins(plugins, child(path, "plugins")),
            plugin_config=self.list_(m, "pluginConfig", path, self.plugin_config),
        )

    def plugins(self, value: Any, path: str) -> Plugins | None:
        m = self.obj(value, path, PLUGIN_SET_KEYS)
        if m is None:
            return None
        sets: dict[str, PluginSet] = {}
        for key in PLUGIN_SET_KEYS:
            if m.get(key) is not None:
                ps = self.plugin_set(m[key], child(path, key))
                if ps is not None:
                    sets[key] = ps
        return Plugins(frozen_mapping(sets))

    def plugin_set(self, value: Any, path: str) -> PluginSet | None:
        m = self.obj(value, path, PLUGIN_SET_FIELDS)
        if m is None:
            return None
        return PluginSet(
            enabled=self.list_(m, "enabled", path, self.plugin_ref),
            disabled=self.list_(m, "disabled", path, self.plugin_ref),
        )

    def plugin_ref(self, value: Any, path: str) -> PluginRef | None:
        m = self.obj(value, path, PLUGIN_FIELDS)
        if m is None:
            return None
        name = self.str_(m, "name", path)
        if not name:
            if "name" not in m or name == "":
                self.sink.add(child(path, "name"), "required: expected a plugin name")
            return None
        return PluginRef(name, self.int_(m, "weight", path, INT32_MIN, INT32_MAX), origin=path)

    def plugin_config(self, value: Any, path: str) -> PluginConfigEntry | None:
        m = self.obj(value, path, PLUGIN_CONFIG_FIELDS)
        if m is None:
            return None
        name = self.str_(m, "name", path)
        if not name:
            if "name" not in m or name == "":
                self.sink.add(child(path, "name"), "required: expected a plugin name")
            return None
        args = m.get("args")
        if args is not None and not isinstance(args, dict):
            self._expect(child(path, "args"), "an object", args)
            return None
        return PluginConfigEntry(name, None if args is None else args)
