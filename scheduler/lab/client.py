"""The API server of a replay: answers the writes of a scheduling and binding cycle in memory.

A replay has no API server. The cycles still write as they do in production (DefaultBinder's
binding, DynamicResources' claim finalizer and status, a PodScheduled=False patch), so this
client answers those verbs from memory, keeps what was written, and the replay engine applies it
back to the scheduler as the watch would (engine.py). Reads and watches are refused: nothing in
a replay lists or watches.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from scheduler.client.rest import KubeClient

_BINDING = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")
_CLAIM = re.compile(
    r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+?)(/status)?$"
)


class ReplayClient(KubeClient):
    """KubeClient's interface over memory. `bindings` and `claims` hold what was written since
    the engine last took them (`take_bindings`, `take_claims`)."""

    def __init__(self) -> None:  # no connection: KubeClient's own __init__ is not wanted
        self.bindings: dict[str, str] = {}  # "namespace/name" → node
        self.claims: dict[str, dict[str, Any]] = {}  # "namespace/name" → the claim written
        self._version = 0

    @property
    def host(self) -> str:
        return "replay://"

    def with_own_rate_limit(self) -> KubeClient:
        return self

    async def close(self) -> None:
        return None

    def next_resource_version(self) -> str:
        self._version += 1
        return str(self._version)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        binding = _BINDING.match(path)
        if binding is not None and method == "POST":
            target = ((body or {}).get("target") or {}).get("name", "")
            self.bindings[f"{binding.group(1)}/{binding.group(2)}"] = str(target)
            return 201, {"kind": "Status", "status": "Success"}
        claim = _CLAIM.match(path)
        if claim is not None and method == "PUT" and isinstance(body, Mapping):
            written = copy.deepcopy(dict(body))
            meta = dict(written.get("metadata") or {})
            meta["resourceVersion"] = self.next_resource_version()
            written["metadata"] = meta
            self.claims[f"{claim.group(1)}/{claim.group(2)}"] = written
            return 200, written
        if method == "PATCH" and path.startswith("/api/v1/namespaces/"):
            return 200, {}  # PodScheduled=False and nominations: nothing reads them back
        if method == "POST" and path.startswith("/apis/events.k8s.io/"):
            return 201, {}
        return 405, {"kind": "Status", "message": f"a replay does not serve {method} {path}"}

    @asynccontextmanager
    async def stream(self, path: str, params: Mapping[str, str]) -> AsyncIterator[tuple[int, Any]]:
        raise RuntimeError(f"a replay does not watch {path}")
        yield  # pragma: no cover

    def take_bindings(self) -> dict[str, str]:
        bindings, self.bindings = self.bindings, {}
        return bindings

    def take_claims(self) -> dict[str, dict[str, Any]]:
        claims, self.claims = self.claims, {}
        return claims
