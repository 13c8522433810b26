"""Delegated authentication and authorization of the secure port, as kube-scheduler's.

kube-scheduler asks the API server who a bearer token is (authentication.k8s.io/v1
TokenReview) and whether that user may GET the path (authorization.k8s.io/v1
SubjectAccessReview with nonResourceAttributes), through k8s.io/apiserver's
DelegatingAuthenticationOptions and DelegatingAuthorizationOptions; /healthz, /readyz and /livez
are always allowed (cmd/kube-scheduler/app/options: Authorization.AlwaysAllowPaths). Answers are
cached as upstream caches them: 10 s for a token review (CacheTTL), 10 s for an allowed and 10 s
for a denied access review (AllowCacheTTL, DenyCacheTTL).

One difference: a request without a token is refused with 401. kube-scheduler lets it through as
`system:anonymous` and asks the API server, which denies it (403) unless RBAC grants anonymous
users the path.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from aiohttp import web

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_TTL = 10.0  # seconds, upstream's CacheTTL / AllowCacheTTL / DenyCacheTTL defaults
MAX_CACHED = 4096
#: Paths served to anyone (upstream's AlwaysAllowPaths), with their per-check subpaths.
ALWAYS_ALLOW = ("/healthz", "/readyz", "/livez")


class ReviewClient(Protocol):
    """What the reviews are sent with (scheduler.client.rest.KubeClient)."""

    async def request(
        self, method: str, path: str, *, body: Any = None
    ) -> tuple[int, Any]: ...


class DelegationError(Exception):
    """The API server could not answer a review."""


@dataclass(frozen=True, slots=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())

    @classmethod
    def from_review(cls, info: Any) -> User:
        info = info if isinstance(info, dict) else {}
        extra = info.get("extra") if isinstance(info.get("extra"), dict) else {}
        return cls(
            str(info.get("username") or ""),
            str(info.get("uid") or ""),
            tuple(str(g) for g in info.get("groups") or []),
            tuple(sorted((str(k), tuple(str(x) for x in v or [])) for k, v in extra.items())),
        )


def always_allowed(path: str, paths: tuple[str, ...] | None = None) -> bool:
    """Whether `path` skips authentication and authorization. By default the health paths and
    their per-check subpaths; with --authorization-always-allow-paths, upstream's rule
    (authorizerfactory's path authorizer): an exact path, or a prefix ending in "*"."""
    if paths is None:
        return any(path == p or path.startswith(p + "/") for p in ALWAYS_ALLOW)
    return any(path.startswith(p[:-1]) if p.endswith("*") else path == p for p in paths)


class _TtlCache:
    def __init__(self, clock: Callable[[], float], ttl: float) -> None:
        self._clock = clock
        self._ttl = ttl
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> tuple[bool, Any]:
        found = self._entries.get(key)
        if found is None:
            return False, None
        if found[0] <= self._clock():
            del self._entries[key]
            return False, None
        return True, found[1]

    def put(self, key: Any, value: Any, ttl: float | None = None) -> None:
        now = self._clock()
        if len(self._entries) >= MAX_CACHED:
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
            while len(self._entries) >= MAX_CACHED:  # still full: drop the oldest
                self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (now + (self._ttl if ttl is None else ttl), value)


def _status(code: int, reason: str, message: str) -> web.Response:
    """An upstream-shaped Status (responsewriters' Unauthorized, Forbidden, InternalError)."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


class DelegatedAuth:
    """Guards the secure port: `await guard(request)` is None when the request may go on, else
    the 401, 403 or 500 to answer."""

    def __init__(
        self,
        authentication: ReviewClient,
        authorization: ReviewClient,
        *,
        ttl: float = CACHE_TTL,
        allowed_ttl: float | None = None,
        denied_ttl: float | None = None,
        always_allow: tuple[str, ...] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """How long answers are kept: `ttl` token reviews (--authentication-token-webhook-
        cache-ttl), `allowed_ttl` and `denied_ttl` access reviews (--authorization-webhook-
        cache-authorized-ttl, -unauthorized-ttl; default `ttl`); `always_allow`: the paths
        anyone may read (None: the health paths)."""
        self._authentication = authentication
        self._authorization = authorization
        self._tokens = _TtlCache(clock, ttl)
        self._decisions = _TtlCache(clock, ttl if allowed_ttl is None else allowed_ttl)
        self._denied_ttl = ttl if denied_ttl is None else denied_ttl
        self._always_allow = always_allow

    async def authenticate(self, token: str) -> User | None:
        """The user of a bearer token, or None when the API server does not know it."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached, user = self._tokens.get(key)
        if cached:
            return user  # type: ignore[no-any-return]
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await self._review(self._authentication, TOKEN_REVIEWS, review)
        found = User.from_review(status.get("user")) if status.get("authenticated") else None
        if found is not None and not found.name:
            found = None
        self._tokens.put(key, found)
        return found

    async def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """Whether `user` may `verb` the non-resource `path`, and the API server's reason."""
        key = (user, verb, path)
        cached, decision = self._decisions.get(key)
        if cached:
            return decision  # type: ignore[no-any-return]
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = await self._review(self._authorization, SUBJECT_ACCESS_REVIEWS, review)
        decision = (status.get("allowed") is True, str(status.get("reason") or ""))
        self._decisions.put(key, decision, None if decision[0] else self._denied_ttl)
        return decision

    @staticmethod
    async def _review(client: ReviewClient, path: str, review: dict[str, Any]) -> dict[str, Any]:
        try:
            code, body = await client.request("POST", path, body=review)
        except Exception as exc:  # no answer at all (connection refused, timeout...)
            raise DelegationError(str(exc) or type(exc).__name__) from exc
        if code not in (200, 201) or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else body
            raise DelegationError(f"{path} answered {code}: {message}")
        status = body.get("status")
        return status if isinstance(status, dict) else {}

    async def guard(self, request: web.Request) -> web.StreamResponse | None:
        path = request.path
        if always_allowed(path, self._always_allow):
            return None
        scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _status(401, "Unauthorized", "Unauthorized")
        try:
            user = await self.authenticate(token)
        except DelegationError as exc:
            log.warning("token review failed; refusing the request", extra={"error": str(exc)})
            return _status(401, "Unauthorized", "Unauthorized")
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()  # a non-resource request's verb (requestinfo.go)
        try:
            allowed, reason = await self.authorize(user, verb, path)
        except DelegationError as exc:
            log.warning("subject access review failed", extra={"error": str(exc)})
            return _status(500, "InternalError",
                           f"Internal error occurred: authorization failed: {exc}")
        if allowed:
            return None
        # responsewriters.forbiddenMessage, with the authorizer's reason if it gave one
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        return _status(403, "Forbidden", f"{message}: {reason}" if reason else message)
