"""What one unauthenticated caller can cost the secure port's guard (delegated_auth.py), shown
with an API server whose answers the test holds back: concurrent callers of one token share a
review, an unknown token is answered from the cache for 10 s, at most MAX_REVIEWS_IN_FLIGHT
reviews run and MAX_REVIEWS_WAITING wait (the next caller gets 429 without a review), and a
caller gone while it waited costs no review."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.server.delegated_auth import (
    CACHE_TTL,
    TOKEN_REVIEWS,
    CallerGone,
    DelegatedAuth,
    ReviewsBusy,
)


class HeldApiServer:
    """Answers every TokenReview "not authenticated", once `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.reviews: list[str] = []

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]:
        assert (method, path) == ("POST", TOKEN_REVIEWS)
        self.reviews.append(body["spec"]["token"])
        await self.release.wait()
        return 201, {**body, "status": {"user": {}}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_one_review_per_token_and_failures_cached() -> None:
    api, clock = HeldApiServer(), Clock()
    auth = DelegatedAuth(api, api, clock=clock)
    callers = [asyncio.ensure_future(auth.authenticate("random")) for _ in range(50)]
    await asyncio.sleep(0.01)
    api.release.set()
    assert await asyncio.gather(*callers) == [None] * 50
    assert api.reviews == ["random"]
    assert await auth.authenticate("random") is None  # cached, not reviewed again
    clock.now += CACHE_TTL
    assert await auth.authenticate("random") is None
    assert api.reviews == ["random", "random"]


async def test_reviews_in_flight_and_waiting_are_bounded() -> None:
    api = HeldApiServer()
    auth = DelegatedAuth(api, api, max_in_flight=2, max_waiting=3)
    callers = [asyncio.ensure_future(auth.authenticate(f"t{i}")) for i in range(5)]
    await asyncio.sleep(0.01)
    assert len(api.reviews) == 2  # two in flight, three waiting
    with pytest.raises(ReviewsBusy):
        await auth.authenticate("one-too-many")
    api.release.set()
    assert await asyncio.gather(*callers) == [None] * 5
    assert len(api.reviews) == 5


async def test_a_caller_gone_while_waiting_costs_no_review() -> None:
    api = HeldApiServer()
    auth = DelegatedAuth(api, api, max_in_flight=1)
    first = asyncio.ensure_future(auth.authenticate("first"))
    await asyncio.sleep(0.01)
    gone = asyncio.ensure_future(auth.authenticate("second", lambda: False))
    await asyncio.sleep(0.01)
    api.release.set()
    assert await first is None
    with pytest.raises(CallerGone):
        await gone
    assert api.reviews == ["first"]


async def test_the_cache_keeps_no_token() -> None:
    api = HeldApiServer()
    api.release.set()
    auth = DelegatedAuth(api, api)
    await auth.authenticate("s3cr3t-token")
    assert "s3cr3t-token" not in repr(auth._tokens._entries)
