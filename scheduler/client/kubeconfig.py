"""Where the API client's configuration comes from, with one-line errors that say what to fix.

kube-scheduler builds its client with clientcmd.BuildConfigFromFlags(--master,
clientConnection.kubeconfig) (cmd/kube-scheduler/app/options/options.go, createKubeConfig).
aiosched follows it, with --kubeconfig winning over clientConnection.kubeconfig:

1. A kubeconfig path (``--kubeconfig``, else ``clientConnection.kubeconfig``): that file, its
   current context (or ``--context``); ``--master`` replaces its cluster's server.
2. Only ``--master``: that URL and no credentials, as clientcmd does with no kubeconfig.
3. Neither: the pod's service account (KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and
   /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}). Outside a pod, aiosched then
   reads $KUBECONFIG or ~/.kube/config as kubectl does (kube-scheduler stops with an error).

kubernetes-asyncio reads the file; what it reports for a missing file, bad YAML or a missing
context ranges from a log line to a TypeError, so the file is checked here first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader

DEFAULT_KUBECONFIG = "~/.kube/config"
_NEXT = "pass --kubeconfig PATH (or set clientConnection.kubeconfig), or --master URL"


class KubeconfigError(Exception):
    """The client configuration cannot be loaded; the message is one line saying what to do."""


@dataclass(frozen=True)
class InCluster:
    """Where a pod's service account is found (injectable for tests)."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    token_file: str = SERVICE_TOKEN_FILENAME
    ca_file: str = SERVICE_CERT_FILENAME


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


async def resolve_configuration(
    kubeconfig: str | None,
    context: str | None = None,
    master: str | None = None,
    in_cluster: InCluster | None = None,
) -> Configuration:
    """kubernetes-asyncio's Configuration for these sources; raises KubeconfigError."""
    configuration = Configuration()
    if kubeconfig:
        await _load_file(kubeconfig, context, master, configuration)
    elif master:
        configuration.host = master  # clientcmd: the URL alone, no credentials
    else:
        place = in_cluster if in_cluster is not None else InCluster()
        loader = InClusterConfigLoader(
            place.token_file,
            place.ca_file,
            environ=dict(place.environ),
        )
        try:
            loader.load_and_set(configuration)
            return configuration
        except kube_config.ConfigException as exc:
            why = _one_line(exc)
            if not place.environ.get("KUBERNETES_SERVICE_HOST"):
                why = "KUBERNETES_SERVICE_HOST is not set"
        except OSError as exc:
            why = f"cannot read the service account: {exc.strerror or exc}"
        default = place.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
        if not _existing(default):
            raise KubeconfigError(
                f"no cluster to connect to: not in a pod ({why}) and no kubeconfig at "
                f"{os.path.expanduser(default)}; {_NEXT}"
            )
        await _load_file(default, context, master, configuration)
    if master:
        configuration.host = master
    if not configuration.host:
        raise KubeconfigError(f"no API server address in the client configuration; {_NEXT}")
    configuration.host = configuration.host.rstrip("/")
    return configuration


def _existing(paths: str) -> list[str]:
    """The files of a kubeconfig path list ($KUBECONFIG's form) that exist."""
    found = []
    for path in paths.split(os.pathsep):
        if path and os.path.exists(os.path.expanduser(path)):
            found.append(os.path.expanduser(path))
    return found


async def _load_file(
    paths: str, context: str | None, master: str | None, configuration: Configuration
) -> None:
    existing = _existing(paths)
    if not existing:
        first = paths.split(os.pathsep)[0] or paths
        check_kubeconfig(first, context, master)  # raises: the file cannot be read
    try:
        if len(existing) == 1:
            doc = check_kubeconfig(existing[0], context, master)
            if master and _server_of(doc, context) is None:
                # kubernetes-asyncio insists on a server; --master provides it (as clientcmd's
                # override does), so hand it the document with that server filled in.
                loader = KubeConfigLoader(
                    config_dict=_with_server(doc, context, master),
                    config_base_path=os.path.dirname(existing[0]),
                    active_context=context,
                )
                await loader.load_and_set(configuration)
                return
        await kube_config.load_kube_config(
            config_file=paths,
            context=context,
            client_configuration=configuration,
            persist_config=False,  # never write the scheduler's kubeconfig back
        )
    except kube_config.ConfigException as exc:
        raise KubeconfigError(f"invalid kubeconfig {paths}: {_one_line(exc)}") from None
    except (
        OSError,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        AssertionError,
        RecursionError,
    ) as exc:
        detail = _one_line(exc) or type(exc).__name__
        raise KubeconfigError(f"invalid kubeconfig {paths}: {detail}") from None


def _server_of(doc: dict[str, Any], context: str | None) -> str | None:
    name = context or doc.get("current-context")
    cluster_name = (_named(doc.get("contexts"), "context").get(str(name)) or {}).get("cluster")
    cluster = _named(doc.get("clusters"), "cluster").get(str(cluster_name)) or {}
    server = cluster.get("server")
    return server if isinstance(server, str) and server else None


def _with_server(doc: dict[str, Any], context: str | None, server: str) -> dict[str, Any]:
    name = context or doc.get("current-context")
    cluster_name = (_named(doc.get("contexts"), "context").get(str(name)) or {}).get("cluster")
    clusters = []
    for item in doc.get("clusters") or []:
        if isinstance(item, dict) and item.get("name") == cluster_name:
            item = {**item, "cluster": {**(item.get("cluster") or {}), "server": server}}
        clusters.append(item)
    return {**doc, "clusters": clusters}


def check_kubeconfig(
    path: str, context: str | None = None, master: str | None = None
) -> dict[str, Any]:
    """The kubeconfig at ``path``; KubeconfigError unless it has a usable context."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or _one_line(exc)
        raise KubeconfigError(f"cannot read kubeconfig {path}: {reason}; {_NEXT}") from None
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or _one_line(exc)
        raise KubeconfigError(
            f"kubeconfig {path} is not valid YAML{where} ({problem}); fix it or pass another "
            "with --kubeconfig"
        ) from None
    except RecursionError:  # PyYAML recurses once per nesting level
        raise KubeconfigError(
            f"kubeconfig {path} is not valid YAML (nested too deeply); fix it or pass another "
            "with --kubeconfig"
        ) from None
    if not isinstance(doc, dict):
        raise KubeconfigError(
            f"kubeconfig {path} is not a kubeconfig (expected a mapping with clusters, users, "
            "contexts and current-context)"
        )
    name = context or doc.get("current-context")
    contexts = _named(doc.get("contexts"), "context")
    if not name:
        known = ", ".join(sorted(contexts)) or "none defined"
        raise KubeconfigError(
            f"kubeconfig {path} has no current-context (contexts: {known}); run `kubectl "
            f"config use-context NAME --kubeconfig {path}` or pass --context NAME"
        )
    if name not in contexts:
        known = ", ".join(sorted(contexts)) or "none defined"
        raise KubeconfigError(
            f"kubeconfig {path}: context {name!r} not found (contexts: {known}); pass "
            "--context NAME or fix current-context"
        )
    cluster_name = (contexts[name] or {}).get("cluster")
    clusters = _named(doc.get("clusters"), "cluster")
    if cluster_name not in clusters:
        raise KubeconfigError(
            f"kubeconfig {path}: context {name!r} names cluster {cluster_name!r}, which is not "
            "in clusters"
        )
    if not master and not (clusters[cluster_name] or {}).get("server"):
        raise KubeconfigError(
            f"kubeconfig {path}: cluster {cluster_name!r} has no server; set it or pass "
            "--master URL"
        )
    return doc


def _named(items: Any, key: str) -> dict[str, dict[str, Any] | None]:
    """A kubeconfig list ([{name, <key>: {...}}]) by name."""
    out: dict[str, dict[str, Any] | None] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = item.get(key)
                out[item["name"]] = value if isinstance(value, dict) else None
    return out


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How to reach the API server (see scheduler/client/kubeconfig.py for the order of sources)."""

    kubeconfig: str | None = None  # None: --master, else in-cluster, else ~/.kube/config
    context: str | None = None
    master: str | None = None  # kube-scheduler's --master: overrides the kubeconfig's server
    qps: float = 50.0
    burst: int = 100
    user_agent: str = "aiosched"
    max_connections: int = 64
    in_cluster: InCluster | None = None  # where a pod's service account is (None: the usual)


async def load_configuration(settings: ClientSettings) -> Configuration:
    """Resolve a kubeconfig path, --master or the in-cluster service account into
    kubernetes-asyncio's Configuration. Raises KubeconfigError (one line) when it cannot."""
    return await resolve_configuration(
        settings.kubeconfig, settings.context, settings.master, settings.in_cluster
    )


def settings_to_json(settings: ClientSettings) -> bytes:
    """``settings`` as the CONFIG frame an API I/O worker is started with."""
    fields = asdict(settings)
    if settings.in_cluster is not None:
        fields["in_cluster"]["environ"] = dict(settings.in_cluster.environ)
    return orjson.dumps(fields)


def settings_from_json(data: bytes) -> ClientSettings:
    """The inverse of :func:`settings_to_json`, in the worker."""
    fields: dict[str, Any] = orjson.loads(data)
    in_cluster = fields.pop("in_cluster", None)
    return ClientSettings(
        **fields, in_cluster=None if in_cluster is None else InCluster(**in_cluster)
    )
