"""kube-scheduler's debug pages on the secure port: /configz, /debug/flags/v, /statusz, /flagz.

They exist so that what operators run against kube-scheduler (``kubectl get --raw``, curl, the
z-pages tooling) works against aiosched. Each follows its upstream source:

- ``/configz``: component-base/configz, installed by cmd/kube-scheduler/app/server.go as
  ``configz.New("componentconfig")`` set to the running KubeSchedulerConfiguration. The body is
  ``{"componentconfig": {...}}``, the configuration as Go's encoding/json writes upstream's
  internal type (pkg/scheduler/apis/config/types.go has no json tags, so the keys are Go field
  names: ``Parallelism``, ``LeaderElection``, ``Profiles``...; durations as ``"15s"``), with
  ExtenderTLSConfig.KeyData redacted (its ``datapolicy`` tag). aiosched updates it on every
  accepted reload; fields only a restart applies keep their running values. Two differences:
  a profile's ``Plugins`` show each extension point's resolved list (what runs, multiPoint
  expanded) where upstream shows the defaulted sets before expansion, and ``PluginConfig`` args
  keep their v1 field names (``kind``/``apiVersion`` plus camelCase fields).
- ``/debug/flags/v``: k8s.io/apiserver routes.DebugFlags with StringFlagPutHandler(GlogSetter):
  PUT a number to set the verbosity (answer ``successfully set klog.logging.verbosity to N``),
  any other method is 406 ``unsupported http method``; ``/debug/flags`` lists the flags.
  Installed only with enableProfiling (default true), as upstream.
- ``/statusz`` and ``/flagz``: k8s.io/apiserver/pkg/server/statusz and flagz as of v1.36
  (feature gates ComponentStatusz and ComponentFlagz, beta and on by default there). Plain text
  without an Accept header (or with ``text/plain``, ``*/*``); the structured form with
  ``Accept: application/json;v=v1beta1;g=config.k8s.io;as=Statusz`` (or ``as=Flagz``; YAML
  with ``application/yaml``; v1alpha1 still answers, with a ``Warning: 299`` header that it is
  deprecated); anything else is 406. CBOR is not served (upstream serves it only with the
  CBORServingAndStorage gate, off by default).

They sit behind the secure port's guard like /metrics and /debug (delegated authentication and
authorization; the verb of a non-resource request is its method in lower case, so changing the
verbosity needs ``put`` on ``/debug/flags/v``).
"""

from __future__ import annotations

import argparse
import datetime
import html
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
import yaml
from aiohttp import web

from observability.version import git_version
from profiles.config import API_VERSION, KIND, ResolvedConfig, ResolvedProfile
from profiles.duration import format_duration
from profiles.render import _plain as v1_plain
from profiles.spec import EXTENSION_POINTS

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: The name upstream's pages carry (statusz/flagz headers and metadata.name).
COMPONENT: Final = "kube-scheduler"
CONFIGZ_PATH: Final = "/configz"
STATUSZ_PATH: Final = "/statusz"
FLAGZ_PATH: Final = "/flagz"
DEBUG_FLAGS_PATH: Final = "/debug/flags"
VERBOSITY_PATH: Final = "/debug/flags/v"

#: zpages/features: ComponentStatusz and ComponentFlagz, beta and on by default since v1.36.
ZPAGES_GATE_DEFAULTS: Final = {"ComponentStatusz": True, "ComponentFlagz": True}

_WARNING_LINE: Final = (
    "Warning: This endpoint is not meant to be machine parseable, has no formatting "
    "compatibility guarantees and is for debugging purposes only."
)
#: statusz/flagz textserializer.go: one of these, picked at random per answer, so that nobody
#: parses the text.
DELIMITERS: Final = (":", ": ", "=", " ")
_GROUP: Final = "config.k8s.io"
_CURRENT_VERSION: Final = "v1beta1"
_DEPRECATED_VERSIONS: Final = frozenset({"v1alpha1"})
_STRUCTURED_TYPES: Final = {"application/json": "json", "application/yaml": "yaml"}
#: What the 406 names (responsewriters' NotAcceptable lists the serializers).
_ACCEPTED: Final = "application/json, application/yaml, text/plain"

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------- /configz


def configz_document(config: ResolvedConfig) -> dict[str, Any]:
    """``config`` as upstream's /configz shows its KubeSchedulerConfiguration (Go field names,
    in types.go's order; embedded DebuggingConfiguration fields at the top level)."""
    le = config.leader_election
    cc = config.client_connection
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "Parallelism": config.parallelism,
        "LeaderElection": {
            "LeaderElect": le.leader_elect,
            "LeaseDuration": format_duration(le.lease_duration),
            "RenewDeadline": format_duration(le.renew_deadline),
            "RetryPeriod": format_duration(le.retry_period),
            "ResourceLock": le.resource_lock,
            "ResourceName": le.resource_name,
            "ResourceNamespace": le.resource_namespace,
        },
        "ClientConnection": {
            "Kubeconfig": cc.kubeconfig,
            "AcceptContentTypes": cc.accept_content_types,
            "ContentType": cc.content_type,
            "QPS": _go_number(cc.qps),
            "Burst": cc.burst,
        },
        "HealthzBindAddress": "",
        "MetricsBindAddress": "",
        "EnableProfiling": config.enable_profiling,
        "EnableContentionProfiling": config.enable_contention_profiling,
        "PercentageOfNodesToScore": config.percentage_of_nodes_to_score,
        "PodInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "PodMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "Profiles": [_profile(p) for p in config.profiles],
        "Extenders": [_extender(e) for e in config.extenders] or None,
        "DelayCacheUntilActive": config.delay_cache_until_active,
    }


def _go_number(value: float) -> float | int:
    """encoding/json writes a whole float32 without a fraction (50, not 50.0)."""
    return int(value) if float(value).is_integer() else value


def _profile(profile: ResolvedProfile) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    for point in EXTENSION_POINTS:
        enabled = [{"Name": p.name, "Weight": p.weight} for p in profile.at(point)]
        plugins[point[0].upper() + point[1:]] = {"Enabled": enabled or None, "Disabled": None}
    plugins["MultiPoint"] = {"Enabled": None, "Disabled": None}
    plugin_config = [
        {
            "Name": name,
            "Args": {"kind": f"{name}Args", "apiVersion": API_VERSION, **_args(args)},
        }
        for name, args in profile.args.items()
    ]
    return {
        "SchedulerName": profile.scheduler_name,
        "PercentageOfNodesToScore": profile.percentage_of_nodes_to_score,
        "Plugins": plugins,
        "PluginConfig": plugin_config or None,
    }


def _args(args: Any) -> dict[str, Any]:
    plain = v1_plain(args)
    return plain if isinstance(plain, dict) else {}


def _extender(extender: Any) -> dict[str, Any]:
    tls = extender.tls_config
    return {
        "URLPrefix": extender.url_prefix,
        "FilterVerb": extender.filter_verb,
        "PreemptVerb": extender.preempt_verb,
        "PrioritizeVerb": extender.prioritize_verb,
        "Weight": extender.weight,
        "BindVerb": extender.bind_verb,
        "EnableHTTPS": extender.enable_https,
        "TLSConfig": None
        if tls is None
        else {
            "Insecure": tls.insecure,
            "ServerName": tls.server_name,
            "CertFile": tls.cert_file,
            "KeyFile": tls.key_file,
            "CAFile": tls.ca_file,
            "CertData": tls.cert_data or None,
            "KeyData": None,  # datapolicy:"security-key": configz.Set redacts it
            "CAData": tls.ca_data or None,
        },
        "HTTPTimeout": format_duration(extender.http_timeout),
        "NodeCacheCapable": extender.node_cache_capable,
        "ManagedResources": [
            {"Name": r.name, "IgnoredByScheduler": r.ignored_by_scheduler}
            for r in extender.managed_resources
        ]
        or None,
        "Ignorable": extender.ignorable,
    }


class Configz:
    """The configuration /configz serves; ``set`` replaces it (at start and on reload)."""

    def __init__(self) -> None:
        self._document: dict[str, Any] | None = None

    def set(self, config: ResolvedConfig) -> None:
        self._document = configz_document(config)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        # configz.write: every registered config by name, json.Marshal's compact form
        configs = {} if self._document is None else {"componentconfig": self._document}
        return web.Response(
            body=orjson.dumps(configs),
            headers={"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"},
        )


# ---------------------------------------------------------------------------- /debug/flags/v

_OCTAL = re.compile(r"0[0-7_]+")


def parse_klog_level(text: str) -> int:
    """klog's Level.Set: strconv.ParseUint(text, 0, 32), with Go's error text."""
    syntax = ValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    if not text or text != text.strip() or text[0] in "+-":
        raise syntax
    try:
        value = int(text, 8) if _OCTAL.fullmatch(text) else int(text, 0)
    except ValueError:
        raise syntax from None
    if value >= 1 << 32:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


def _plain_text(status: int, text: str) -> web.Response:
    # routes/flags.go writePlainText: Content-Type text/plain, the text and a newline
    return web.Response(
        status=status, body=(text + "\n").encode(), headers={"Content-Type": "text/plain"}
    )


def verbosity_routes(set_verbosity: Callable[[int], None]) -> dict[str, Handler]:
    """``/debug/flags/v`` (PUT a level) and the ``/debug/flags`` index, for every method."""

    async def put_verbosity(request: web.Request) -> web.StreamResponse:
        if request.method != "PUT":
            return _plain_text(406, "unsupported http method")
        body = (await request.read()).decode("utf-8", "replace")
        try:
            level = parse_klog_level(body)
        except ValueError as exc:
            return _plain_text(400, f"failed set klog.logging.verbosity {body}: {exc}")
        set_verbosity(level)
        log.info("verbosity changed", extra={"v": level})
        return _plain_text(200, f"successfully set klog.logging.verbosity to {body}")

    async def index(request: web.Request) -> web.StreamResponse:
        page = (
            "<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n/debug/flags/<br>\n"
            "<br>\nflags:<br>\n<table>\n\n<tr>v<br>\n\n</table>\n<br>\nfull flags "
            "configurable<br>\n</body>\n</html>\n"
        )
        return web.Response(body=page.encode(), headers={"Content-Type": "text/html"})

    return {DEBUG_FLAGS_PATH: index, DEBUG_FLAGS_PATH + "/": index, VERBOSITY_PATH: put_verbosity}


# ------------------------------------------------------------------------ /statusz and /flagz


@dataclass(frozen=True)
class Negotiated:
    """What an Accept header asked for: text, or (format, version) of the structured kind."""

    text: bool
    format: str = ""
    version: str = ""


def negotiate(accept: str, kind: str) -> Negotiated | None:
    """apiserver's NegotiateOutputMediaType under the z-pages' restrictions: the first clause
    (by q, then specificity, else in order) a serializer takes. text/plain takes a clause
    without a group/version/kind; JSON and YAML only one naming ``kind`` in config.k8s.io at a
    served version. None: 406."""
    if not accept.strip():
        return Negotiated(text=True)
    for media, params in _clauses(accept):
        gvk = (params.get("g"), params.get("v"), params.get("as"))
        media_type, _, subtype = media.partition("/")
        for served in ("application/json", "application/yaml", "text/plain"):
            served_type, _, served_subtype = served.partition("/")
            if media_type not in ("*", served_type) or subtype not in ("*", served_subtype):
                continue
            if served == "text/plain":
                if gvk == (None, None, None):
                    return Negotiated(text=True)
                continue
            group, version, as_kind = gvk
            if group == _GROUP and as_kind == kind and version in _SERVED_VERSIONS:
                return Negotiated(False, _STRUCTURED_TYPES[served], version)
    return None


_SERVED_VERSIONS: Final = frozenset({_CURRENT_VERSION, *_DEPRECATED_VERSIONS})


def _clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    """goautoneg.ParseAccept: clauses ordered by q, then a concrete type and subtype first
    (a stable sort, as Go's insertion sort is on short lists); q=0 clauses are dropped."""
    parsed: list[tuple[float, int, str, dict[str, str]]] = []
    for raw in accept.split(","):
        media, *raw_params = (part.strip() for part in raw.split(";"))
        if not media:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for param in raw_params:
            key, _, value = param.partition("=")
            key, value = key.strip(), value.strip()
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            elif key:
                params[key] = value
        if q <= 0:
            continue
        media = media.lower()
        specificity = (media.split("/")[0] != "*") + (media.partition("/")[2] != "*")
        parsed.append((q, specificity, media, params))
    parsed.sort(key=lambda c: (-c[0], -c[1]))
    return [(media, params) for _, _, media, params in parsed]


def _not_acceptable() -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"only the following media types are accepted: {_ACCEPTED}",
        "reason": "NotAcceptable",
        "code": 406,
    }
    return web.Response(status=406, body=orjson.dumps(status), content_type="application/json")


def _structured(kind: str, negotiated: Negotiated, body: dict[str, Any]) -> web.Response:
    document = {
        "kind": kind,
        "apiVersion": f"{_GROUP}/{negotiated.version}",
        "metadata": {"name": COMPONENT},
        **body,
    }
    if negotiated.format == "yaml":
        payload = yaml.safe_dump(document, sort_keys=False).encode()
        content_type = "application/yaml"
    else:
        payload = orjson.dumps(document) + b"\n"  # the JSON serializer's Encoder adds one
        content_type = "application/json"
    headers = {"Content-Type": content_type}
    if negotiated.version in _DEPRECATED_VERSIONS:
        headers["Warning"] = (
            f'299 - "This version of the {kind.lower()} endpoint is deprecated. Please use a '
            'newer version."'
        )
    return web.Response(body=payload, headers=headers)


def _text(body: str) -> web.Response:
    return web.Response(body=body.encode(), headers={"Content-Type": "text/plain; charset=utf-8"})


def _header(page: str) -> str:
    return f"\n{COMPONENT} {page}\n{_WARNING_LINE}\n"


def _unix_date(moment: datetime.datetime) -> str:
    """Go's time.UnixDate layout, "Mon Jan _2 15:04:05 MST 2006" (day padded with a space)."""
    return f"{moment:%a %b} {moment.day:2d} {moment:%H:%M:%S} {moment.tzname()} {moment:%Y}"


def _uptime(seconds: int) -> str:
    return f"{seconds // 3600} hr {(seconds // 60) % 60:02d} min {seconds % 60:02d} sec"


def binary_version() -> str:
    """statusz's "Binary version": aiosched's, with the Kubernetes release it follows."""
    return git_version()


@dataclass
class Statusz:
    """statusz's registry: when the process started, what it runs, the pages it lists."""

    paths: tuple[str, ...]
    start_time: float = field(default_factory=time.time)
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    # No goVersion: upstream's is the Go toolchain that built the binary (omitted when empty);
    # aiosched has none, and a Python version under "Go version" read as a mistake.
    version: str = field(default_factory=binary_version)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        negotiated = negotiate(request.headers.get("Accept", ""), "Statusz")
        if negotiated is None:
            return _not_acceptable()
        started = datetime.datetime.fromtimestamp(int(self.start_time), datetime.UTC)
        uptime = max(0, int(self.clock() - self.start_time))
        paths = sorted(self.paths)
        if not negotiated.text:
            return _structured(
                "Statusz",
                negotiated,
                {
                    "startTime": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "uptimeSeconds": uptime,
                    "binaryVersion": self.version,
                    "paths": paths,
                },
            )
        delim = html.escape(self.rng.choice(DELIMITERS))
        listed = f"Paths{delim} {html.escape(' '.join(paths))}" if paths else ""
        return _text(
            _header("statusz")
            + f"\nStarted{delim} {html.escape(_unix_date(started.astimezone()))}"
            + f"\nUp{delim} {_uptime(uptime)}"
            + f"\nBinary version{delim} {html.escape(self.version)}"
            + "\n"  # no emulation version: aiosched emulates no older Kubernetes release
            + f"\n{listed}\n"
        )


@dataclass
class Flagz:
    """flagz's reader: the command line's flags, as given or defaulted."""

    flags: Mapping[str, str]
    rng: random.Random = field(default_factory=random.Random)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        negotiated = negotiate(request.headers.get("Accept", ""), "Flagz")
        if negotiated is None:
            return _not_acceptable()
        if not negotiated.text:
            body = {"flags": dict(self.flags)} if self.flags else {}  # omitempty
            return _structured("Flagz", negotiated, body)
        separator = self.rng.choice(DELIMITERS)
        lines = "".join(f"{name}{separator}{self.flags[name]}\n" for name in sorted(self.flags))
        return _text(_header("flagz") + lines)


def flag_values(
    parser: argparse.ArgumentParser, args: argparse.Namespace, removed: Iterable[str] = ()
) -> dict[str, str]:
    """Every long flag of `parser` with its value in ``args`` as pflag prints values ("true",
    "15s" stays as given, lists comma-joined, an unset flag as ""), except the `removed` ones
    (``--address``: recognised only to refuse them, kube-scheduler has none of them)."""
    values: dict[str, str] = {}
    left_out = set(removed)
    for action in parser._actions:
        names = [o for o in action.option_strings if o.startswith("--")]
        if not names or action.dest in ("help", argparse.SUPPRESS) or names[0] in left_out:
            continue
        values[names[0][2:]] = _flag_text(getattr(args, action.dest, action.default))
    return values


def _flag_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={_flag_text(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return ",".join(_flag_text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def listed_paths(*, flagz: bool, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The pages /statusz lists: upstream lists the registered, listed top-level paths of
    kube-scheduler's mux (/configz /flagz /healthz /livez /metrics /readyz), not /debug."""
    paths = {"/configz", "/healthz", "/livez", "/metrics", "/readyz", *extra}
    if flagz:
        paths.add(FLAGZ_PATH)
    return tuple(sorted(paths))
