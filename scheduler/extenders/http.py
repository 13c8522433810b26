"""HTTPExtender: one configured scheduler extender, called over HTTP(S) with JSON.

Upstream: pkg/scheduler/extender.go. Every call is ``POST {urlPrefix without trailing /}/{verb}``
with a JSON body of the extender/v1 types (scheduler.extenders.types) and must answer 200 with
JSON. The session is the extender's own (its TLS settings, its timeout: ``httpTimeout``, 5 s when
unset as upstream's DefaultExtenderTimeout), created on first use inside the running loop and
closed by :meth:`close`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from profiles.config import Extender
from scheduler.client.rest import proxy_for
from scheduler.extenders.tls import ssl_context_for
from scheduler.extenders.types import (
    HostPriority,
    WireError,
    binding_args,
    convert_to_meta_victims,
    decode_binding_result,
    decode_filter_result,
    decode_host_priority_list,
    decode_preemption_result,
    extender_args,
    preemption_args,
)
from scheduler.framework.extender import Victims

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import SnapshotLister

log = logging.getLogger(__name__)

#: Upstream's DefaultExtenderTimeout.
DEFAULT_EXTENDER_TIMEOUT = 5.0

FILTER, PRIORITIZE, BIND, PREEMPT = "filter", "prioritize", "bind", "preempt"


class ExtenderError(Exception):
    """A call to an extender failed; ``str()`` is the message the attempt fails with."""

    def __init__(self, extender: str, verb: str, message: str) -> None:
        super().__init__(message)
        self.extender = extender
        self.verb = verb


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


class HTTPExtender:
    """One entry of KubeSchedulerConfiguration.extenders."""

    def __init__(self, config: Extender, where: str = "extenders") -> None:
        self.config = config
        self.url_prefix = config.url_prefix
        self.weight = config.weight
        self.ignorable = config.ignorable
        self.node_cache_capable = config.node_cache_capable
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        self.timeout = config.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        # Built now, so that bad TLS material is a configuration error, not a failed call.
        self._ssl: ssl.SSLContext | None = ssl_context_for(config, where)
        self._server_name = (config.tls_config.server_name if config.tls_config else "") or None
        self._proxy = proxy_for(config.url_prefix)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"

    # ---- what it does ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        """Upstream names an extender by its URL prefix."""
        return self.url_prefix

    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: PodView) -> bool:
        """True when the extender manages no resources, or a container or init container of
        the pod requests or limits one it manages."""
        managed = self.managed_resources
        if not managed:
            return True
        spec = pod.raw.get("spec") or {}
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                resources = (container or {}).get("resources") or {}
                for field in ("requests", "limits"):
                    if not managed.isdisjoint(resources.get(field) or ()):
                        return True
        return False

    # ---- verbs ----------------------------------------------------------------------------

    async def filter(
        self, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        """(nodes that passed, failed node → message, failed-and-unresolvable node → message).

        The passing nodes are the scheduler's own NodeInfos of the names the extender returned,
        which must come from the list it was given."""
        verb = self.config.filter_verb
        if not verb:
            return list(nodes), {}, {}
        by_name = {info.node_name: info for info in nodes}
        body = await self._send(verb, self._args(pod, nodes))
        try:
            result = decode_filter_result(body)
        except WireError as exc:
            raise self._invalid(verb, exc) from exc
        if result.error:
            raise ExtenderError(self.name, verb, result.error)
        names: tuple[str, ...] = ()
        if self.node_cache_capable and result.node_names is not None:
            names = result.node_names
        elif result.node_list_names is not None:
            names = result.node_list_names
        passed: list[NodeInfo] = []
        for name in names:
            info = by_name.get(name)
            if info is None:
                raise ExtenderError(
                    self.name,
                    verb,
                    f"extender {self.name!r} claims a filtered node {name!r} which is not found "
                    "in the input node list",
                )
            passed.append(info)
        return (
            passed,
            dict(result.failed_nodes),
            dict(result.failed_and_unresolvable_nodes),
        )

    async def prioritize(
        self, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[list[HostPriority], int]:
        """(scores 0..10 per host, this extender's weight); weight 0 without a prioritize verb."""
        verb = self.config.prioritize_verb
        if not verb:
            return [HostPriority(info.node_name, 0) for info in nodes], 0
        body = await self._send(verb, self._args(pod, nodes))
        try:
            return decode_host_priority_list(body), self.weight
        except WireError as exc:
            raise self._invalid(verb, exc) from exc

    async def bind(self, pod_name: str, pod_namespace: str, pod_uid: str, node: str) -> None:
        """Delegate binding; raises ExtenderError with the extender's message on failure."""
        verb = self.config.bind_verb
        if not verb:
            raise ExtenderError(self.name, BIND, "unexpected empty bindVerb in extender")
        body = await self._send(verb, binding_args(pod_name, pod_namespace, pod_uid, node))
        try:
            error = decode_binding_result(body)
        except WireError as exc:
            raise self._invalid(verb, exc) from exc
        if error:
            raise ExtenderError(self.name, verb, error)

    async def process_preemption(
        self,
        pod: PodView,
        victims: Mapping[str, Victims],
        node_infos: SnapshotLister,
    ) -> dict[str, Victims]:
        """The candidates (node → victims) the extender keeps, possibly with other victims.

        A node-cache-capable extender gets and returns victims by UID; the answer is turned
        back into pods through `node_infos` (the cycle's snapshot)."""
        verb = self.config.preempt_verb
        if not verb:
            raise ExtenderError(
                self.name,
                PREEMPT,
                f"preempt verb is not defined for extender {self.name} but run into "
                "ProcessPreemption",
            )
        if self.node_cache_capable:
            args = preemption_args(pod.raw, None, convert_to_meta_victims(victims))
        else:
            args = preemption_args(pod.raw, victims, None)
        body = await self._send(verb, args)
        try:
            meta = decode_preemption_result(body)
        except WireError as exc:
            raise self._invalid(verb, exc) from exc
        result: dict[str, Victims] = {}
        for node_name, meta_victims in meta.items():
            info = node_infos.get(node_name)
            if info is None:
                raise ExtenderError(
                    self.name, verb, f'nodeinfo not found for node name "{node_name}"'
                )
            on_node = {p.uid: p for p in info.pods}
            pods: list[PodView] = []
            for uid in meta_victims.pod_uids:
                victim = on_node.get(uid)
                if victim is None:
                    raise ExtenderError(
                        self.name,
                        verb,
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: "
                        f"{node_name}, but the pod is not found on that node",
                    )
                pods.append(victim)
            result[node_name] = Victims(tuple(pods), meta_victims.num_pdb_violations)
        return result

    # ---- transport ------------------------------------------------------------------------

    def _args(self, pod: PodView, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        if self.node_cache_capable:
            return extender_args(pod.raw, None, [info.node_name for info in nodes])
        return extender_args(pod.raw, [_node_raw(info) for info in nodes], None)

    def url(self, verb: str) -> str:
        return self.url_prefix.rstrip("/") + "/" + verb

    def _invalid(self, verb: str, exc: Exception) -> ExtenderError:
        return ExtenderError(
            self.name, verb, f"extender {self.name} {verb}: invalid response: {exc}"
        )

    def _session_for_loop(self) -> aiohttp.ClientSession:
        session = self._session
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True)
            session = self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        return session

    async def _send(self, verb: str, args: Mapping[str, Any]) -> Any:
        url = self.url(verb)
        try:
            data = orjson.dumps(args, default=_json_default)
        except TypeError as exc:
            raise ExtenderError(self.name, verb, f"extender {self.name} {verb}: {exc}") from exc
        session = self._session_for_loop()
        kwargs: dict[str, Any] = {}
        if self._server_name:
            kwargs["server_hostname"] = self._server_name
        try:
            async with session.post(
                url,
                data=data,
                headers={"Content-Type": "application/json"},
                proxy=self._proxy,
                **kwargs,
            ) as response:
                raw = await response.read()
                status = response.status
        except TimeoutError as exc:
            raise ExtenderError(
                self.name, verb, f'Post "{url}": timed out after {self.timeout:g}s (httpTimeout)'
            ) from exc
        except aiohttp.ClientError as exc:
            raise ExtenderError(
                self.name, verb, f'Post "{url}": {exc or type(exc).__name__}'
            ) from exc
        if status != 200:
            raise ExtenderError(
                self.name, verb, f"failed {verb} with extender at URL {url}, code {status}"
            )
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise self._invalid(verb, exc) from exc

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _node_raw(info: NodeInfo) -> Mapping[str, Any]:
    node = info.node
    if node is None:  # a node the cache knows only from its pods: send what is known
        return {"metadata": {"name": info.node_name}}
    return node.raw


async def close_all(extenders: Sequence[HTTPExtender]) -> None:
    await asyncio.gather(*(e.close() for e in extenders), return_exceptions=True)
