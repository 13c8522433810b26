"""Callers without a valid token cannot stop the scheduler: 2,000 requests with random bearer
tokens, 250 at a time, on the secure port of a real `aiosched run` (leader-elected, renewing
every 500 ms with a 3 s deadline). Their TokenReviews go through a client of their own, so the
Lease and the binds keep their budget: the scheduler stays leader, a probe pod created during
the flood binds within 2 s, /healthz answers within 1 s.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
from security_harness import HEALTHZ_SECONDS, PROBE_BIND_SECONDS, Cluster

pytestmark = pytest.mark.e2e

REQUESTS = 2000
AT_ONCE = 250


@pytest.fixture(scope="module")
def cluster(elected_cluster: Cluster) -> Cluster:
    return elected_cluster


async def flood(url: str, answers: Counter[int]) -> None:
    slots = asyncio.Semaphore(AT_ONCE)
    connector = aiohttp.TCPConnector(ssl=False, limit=AT_ONCE, force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> None:
            async with slots:
                headers = {"Authorization": f"Bearer {secrets.token_urlsafe(24)}"}
                try:
                    async with session.get(
                        url + "/metrics", headers=headers, timeout=aiohttp.ClientTimeout(total=60)
                    ) as answer:
                        answers[answer.status] += 1
                except (aiohttp.ClientError, TimeoutError):
                    answers[0] += 1

        await asyncio.gather(*(one() for _ in range(REQUESTS)))


def test_random_tokens_neither_starve_the_lease_nor_the_binds(cluster: Cluster) -> None:
    leader = cluster.leader()
    assert leader
    answers: Counter[int] = Counter()
    attack = threading.Thread(target=lambda: asyncio.run(flood(cluster.scheduler.url, answers)))
    began = time.monotonic()
    attack.start()
    healthz, binds = [], []
    try:
        time.sleep(0.5)  # the flood is under way
        while attack.is_alive() and len(binds) < 5:
            healthz.append(cluster.healthz_seconds())
            binds.append(cluster.probe_bind_seconds())
    finally:
        attack.join(120)
    elapsed = time.monotonic() - began
    # every caller was refused: 401 after its review, or 429 when too many waited for one
    assert sum(answers.values()) == REQUESTS
    assert set(answers) <= {401, 429}, answers
    assert binds, f"the flood ended in {elapsed:.1f}s, before a probe"
    assert max(binds) < PROBE_BIND_SECONDS, binds
    assert max(healthz) < HEALTHZ_SECONDS, healthz
    cluster.assert_healthy(leader)


def test_a_known_token_is_reviewed_once_and_still_answered(cluster: Cluster) -> None:
    """Caching does not change the answers: the admin token is allowed, a random one not."""
    token = cluster.api.token
    for _ in range(3):
        status, _ = cluster.https("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert status == 200
    status, _ = cluster.https("/metrics", headers={"Authorization": "Bearer nope"})
    assert status == 401


def test_the_scheduler_log_names_no_token(cluster: Cluster, tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(24)
    cluster.https("/metrics", headers={"Authorization": f"Bearer {secret}"})
    assert secret not in cluster.log()
