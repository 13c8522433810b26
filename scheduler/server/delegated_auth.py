"""Delegated authentication and authorization of the secure port, as kube-scheduler's.

kube-scheduler asks the API server who a bearer token is (authentication.k8s.io/v1
TokenReview) and whether that user may GET the path (authorization.k8s.io/v1
SubjectAccessReview with nonResourceAttributes), through k8s.io/apiserver's
DelegatingAuthenticationOptions and DelegatingAuthorizationOptions; /healthz, /readyz and /livez
are always allowed (cmd/kube-scheduler/app/options: Authorization.AlwaysAllowPaths). Answers are
cached as upstream caches them: 10 s for a token review, authenticated or not (CacheTTL, used as
both the success and the failure TTL by authenticatorfactory/delegating.go; errors are not
cached), keyed by an HMAC of the token under a per-process random key so that no token stays in
memory (token/cache/cached_token_authenticator.go), one review for concurrent callers of the same
token (its singleflight group); 10 s for an allowed and 10 s for a denied access review
(AllowCacheTTL, DenyCacheTTL) in an LRU of 8192 (plugin/pkg/authorizer/webhook/webhook.go), not
cached when the caller-controlled attributes reach 10,000 bytes (its shouldCache).

What an unauthenticated caller can cost is bounded: the reviews go through clients of their own
(run.py builds them with upstream's delegating clientsets' QPS 200 and burst 400,
server/options/authentication.go and authorization.go), so they never spend the budget of the
Lease and of binds; at most MAX_REVIEWS_IN_FLIGHT reviews run at once and at most
MAX_REVIEWS_WAITING wait (more are answered 429 at once); a review waits at most REVIEW_TIMEOUT
(TokenRequestTimeout, ClientTimeout); and a caller who has already disconnected when its turn
comes gets no review.

One difference: a request without a token is refused with 401. kube-scheduler lets it through as
`system:anonymous` and asks the API server, which denies it (403) unless RBAC grants anonymous
users the path.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from aiohttp import web

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_TTL = 10.0  # seconds, upstream's CacheTTL / AllowCacheTTL / DenyCacheTTL defaults
#: Token answers kept (upstream's striped cache holds 32 x unbounded; "a 32k entry cache is
#: a 2x safety margin"); access decisions kept (webhook.go's NewLRUExpireCache(8192)).
MAX_CACHED_TOKENS = 32768
MAX_CACHED_DECISIONS = 8192
#: webhook.go's maxControlledAttrCacheSize: larger caller-controlled attributes are not cached.
MAX_CACHED_ATTRIBUTES_SIZE = 10000
#: Reviews sent at once, and callers allowed to wait for one; beyond, 429 without a review.
MAX_REVIEWS_IN_FLIGHT = 32
MAX_REVIEWS_WAITING = 256
REVIEW_TIMEOUT = 10.0  # seconds, TokenRequestTimeout and ClientTimeout
#: The delegating clientsets' rate (server/options/authentication.go, authorization.go).
REVIEW_QPS = 200.0
REVIEW_BURST = 400
#: Paths served to anyone (upstream's AlwaysAllowPaths), with their per-check subpaths.
ALWAYS_ALLOW = ("/healthz", "/readyz", "/livez")


class ReviewClient(Protocol):
    """What the reviews are sent with (scheduler.client.rest.KubeClient)."""

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]: ...


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
    """Answers that expire `ttl` seconds after they were stored, at most `size` of them; the
    least recently used goes first when full (k8s.io/apimachinery's LRUExpireCache)."""

    def __init__(self, clock: Callable[[], float], ttl: float, size: int) -> None:
        self._clock = clock
        self._ttl = ttl
        self._size = size
        self._entries: OrderedDict[Any, tuple[float, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Any) -> tuple[bool, Any]:
        found = self._entries.get(key)
        if found is None:
            return False, None
        if found[0] <= self._clock():
            del self._entries[key]
            return False, None
        self._entries.move_to_end(key)
        return True, found[1]

    def put(self, key: Any, value: Any, ttl: float | None = None) -> None:
        """Keep `value` for `ttl` seconds (the cache's own TTL when None; 0 keeps nothing)."""
        ttl = self._ttl if ttl is None else ttl
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


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


class ReviewsBusy(Exception):
    """More callers wait for a review than MAX_REVIEWS_WAITING: answered 429 without one."""


class CallerGone(Exception):
    """The caller disconnected while waiting for its turn: no review is sent for it."""


def _still_there() -> bool:
    return True


class DelegatedAuth:
    """Guards the secure port: `await guard(request)` is None when the request may go on, else
    the 401, 403, 429 or 500 to answer."""

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
        max_in_flight: int = MAX_REVIEWS_IN_FLIGHT,
        max_waiting: int = MAX_REVIEWS_WAITING,
        timeout: float = REVIEW_TIMEOUT,
    ) -> None:
        """How long answers are kept: `ttl` token reviews (--authentication-token-webhook-
        cache-ttl), `allowed_ttl` and `denied_ttl` access reviews (--authorization-webhook-
        cache-authorized-ttl, -unauthorized-ttl; default `ttl`); `always_allow`: the paths
        anyone may read (None: the health paths)."""
        self._authentication = authentication
        self._authorization = authorization
        self._tokens = _TtlCache(clock, ttl, MAX_CACHED_TOKENS)
        self._decisions = _TtlCache(
            clock, ttl if allowed_ttl is None else allowed_ttl, MAX_CACHED_DECISIONS
        )
        self._denied_ttl = ttl if denied_ttl is None else denied_ttl
        self._always_allow = always_allow
        # the tokens' cache key: an HMAC under a key of this process, so that the cache holds
        # no token and a key cannot be computed from outside (cached_token_authenticator.go)
        self._token_key = os.urandom(32)
        self._token_reviews: dict[bytes, asyncio.Future[User | None]] = {}
        self._slots = asyncio.Semaphore(max_in_flight)
        self._max_waiting = max_waiting
        self._waiting = 0
        self._timeout = timeout
        self.reviews_sent = 0  # for tests and /statusz-like checks: reviews actually posted

    def _token_cache_key(self, token: str) -> bytes:
        return hmac.new(self._token_key, token.encode(), hashlib.sha256).digest()

    async def _in_turn(
        self, still_wanted: Callable[[], bool], review: Callable[[], Awaitable[Any]]
    ) -> Any:
        """Run `review` once one of the MAX_REVIEWS_IN_FLIGHT slots is free, unless too many
        wait already (ReviewsBusy) or the caller left meanwhile (CallerGone)."""
        if self._waiting >= self._max_waiting:
            raise ReviewsBusy
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            if not still_wanted():
                raise CallerGone
            return await review()
        finally:
            self._slots.release()

    async def authenticate(
        self, token: str, still_wanted: Callable[[], bool] = _still_there
    ) -> User | None:
        """The user of a bearer token, or None when the API server does not know it."""
        key = self._token_cache_key(token)
        cached, user = self._tokens.get(key)
        if cached:
            return user  # type: ignore[no-any-return]
        shared = self._token_reviews.get(key)
        if shared is None:  # the first caller of this token reviews it for all the others

            async def review() -> User | None:
                cached, user = self._tokens.get(key)  # answered while this one waited
                if cached:
                    return user  # type: ignore[no-any-return]
                return await self._review_token(token, key)

            shared = asyncio.ensure_future(self._in_turn(still_wanted, review))
            self._token_reviews[key] = shared
            shared.add_done_callback(lambda done: self._forget_review(key, done))
        # shielded: a caller that goes away does not cancel the review others wait for
        return await asyncio.shield(shared)

    def _forget_review(self, key: bytes, done: asyncio.Future[User | None]) -> None:
        if self._token_reviews.get(key) is done:
            del self._token_reviews[key]
        if not done.cancelled():
            done.exception()  # retrieved here, so a review nobody awaits any more logs nothing

    async def _review_token(self, token: str, key: bytes) -> User | None:
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        status = await self._review(self._authentication, TOKEN_REVIEWS, review)
        found = User.from_review(status.get("user")) if status.get("authenticated") else None
        if found is not None and not found.name:
            found = None
        self._tokens.put(key, found)  # failures too: upstream's failureTTL is CacheTTL
        return found

    async def authorize(
        self, user: User, verb: str, path: str, still_wanted: Callable[[], bool] = _still_there
    ) -> tuple[bool, str]:
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

        async def send() -> dict[str, Any]:
            return await self._review(self._authorization, SUBJECT_ACCESS_REVIEWS, review)

        status = await self._in_turn(still_wanted, send)
        decision = (status.get("allowed") is True, str(status.get("reason") or ""))
        if len(verb) + len(path) < MAX_CACHED_ATTRIBUTES_SIZE:  # webhook.go's shouldCache
            self._decisions.put(key, decision, None if decision[0] else self._denied_ttl)
        return decision

    async def _review(
        self, client: ReviewClient, path: str, review: dict[str, Any]
    ) -> dict[str, Any]:
        self.reviews_sent += 1
        try:
            async with asyncio.timeout(self._timeout):
                code, body = await client.request("POST", path, body=review)
        except Exception as exc:  # no answer at all (connection refused, timeout...)
            raise DelegationError(str(exc) or type(exc).__name__) from exc
        if code not in (200, 201) or not isinstance(body, dict):
            message = body.get("message") if isinstance(body, dict) else body
            raise DelegationError(f"{path} answered {code}: {str(message)[:200]}")
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

        def still_wanted() -> bool:
            transport = request.transport
            return transport is not None and not transport.is_closing()

        try:
            user = await self.authenticate(token, still_wanted)
        except ReviewsBusy:
            return _too_many_requests()
        except CallerGone:
            return _status(401, "Unauthorized", "Unauthorized")  # nobody is there to read it
        except DelegationError as exc:
            log.warning("token review failed; refusing the request", extra={"error": str(exc)})
            return _status(401, "Unauthorized", "Unauthorized")
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()  # a non-resource request's verb (requestinfo.go)
        try:
            allowed, reason = await self.authorize(user, verb, path, still_wanted)
        except ReviewsBusy:
            return _too_many_requests()
        except CallerGone:
            return _status(403, "Forbidden", "forbidden")
        except DelegationError as exc:
            log.warning("subject access review failed", extra={"error": str(exc)})
            return _status(
                500, "InternalError", f"Internal error occurred: authorization failed: {exc}"
            )
        if allowed:
            return None
        # responsewriters.forbiddenMessage, with the authorizer's reason if it gave one
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        return _status(403, "Forbidden", f"{message}: {reason}" if reason else message)


def _too_many_requests() -> web.Response:
    """responsewriters.TooManyRequests' answer, with its Retry-After."""
    answer = _status(429, "TooManyRequests", "Too many requests, please try again later.")
    answer.headers["Retry-After"] = "1"
    return answer
