"""LeaderElector against an in-memory Lease API on virtual time.

Semantics follow client-go's tools/leaderelection (leaderelection_test.go covers the same cases:
acquire when absent / expired / held by us, no acquire while held and fresh, renew, release).
Timings use kube-scheduler's defaults: leaseDuration 15s, renewDeadline 10s, retryPeriod 2s.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from observability.http import ObservabilityServer
from profiles.config import LeaderElection
from scheduler.app.service import SchedulerService
from scheduler.client.leaderelection import (
    LeaderElector,
    default_identity,
    format_micro_time,
    jittered,
)

NS, NAME = "kube-system", "kube-scheduler"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 15.0, 10.0, 2.0
MAX_JITTERED_RETRY = RETRY_PERIOD * (1 + 1.2)
ME = "host-a_1111"
WALL_EPOCH = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)  # FakeTime.wall() at virtual time 0


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    api: Any
    events: list[tuple[str, float]] = field(default_factory=list)
    leaders_seen: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def count(self, event: str) -> int:
        return sum(1 for name, _ in self.events if name == event)

    def time_of(self, event: str) -> float:
        return next(t for name, t in self.events if name == event)


class Cluster:
    """Candidates sharing one Lease store and one virtual clock; cancels them all at the end."""

    def __init__(self, time: Any, store: Any) -> None:
        self.time = time
        self.store = store
        self.candidates: list[Candidate] = []

    def candidate(
        self, identity: str = ME, *, seed: int = 0, sync_start: bool = False, **options: Any
    ) -> Candidate:
        api = self.store.client()
        candidate: Candidate

        async def lead() -> None:
            candidate.events.append(("started", self.time.now))
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                candidate.events.append(("work cancelled", self.time.now))
                raise

        def lead_sync() -> None:
            candidate.events.append(("started", self.time.now))

        def stopped() -> None:
            candidate.events.append(("stopped", self.time.now))

        settings: dict[str, Any] = {
            "lease_duration": LEASE_DURATION,
            "renew_deadline": RENEW_DEADLINE,
            "retry_period": RETRY_PERIOD,
        }
        settings.update(options)
        elector = LeaderElector(
            api,
            lease_namespace=NS,
            lease_name=NAME,
            identity=identity,
            on_started_leading=lead_sync if sync_start else lead,
            on_stopped_leading=stopped,
            on_new_leader=lambda leader: candidate.leaders_seen.append(leader),
            clock=self.time.monotonic,
            wall_clock=self.time.wall,
            sleep=self.time.sleep,
            rng=random.Random(seed),
            **settings,
        )
        candidate = Candidate(identity, elector, api)
        self.candidates.append(candidate)
        return candidate

    def start(self, *candidates: Candidate) -> None:
        for candidate in candidates:
            candidate.task = asyncio.create_task(candidate.elector.run())

    def leaders(self) -> list[str]:
        return [c.identity for c in self.candidates if c.elector.is_leader]

    async def close(self) -> None:
        tasks = [c.task for c in self.candidates if c.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def cluster(fake_time: Any, lease_store: Any) -> AsyncIterator[Cluster]:
    harness = Cluster(fake_time, lease_store)
    yield harness
    await harness.close()


def stamp(seconds: float) -> str:
    return format_micro_time(WALL_EPOCH + timedelta(seconds=seconds))


def lease_spec(holder: str, duration: int, transitions: int, renewed: str) -> dict[str, Any]:
    return {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "acquireTime": "2024-04-30T08:00:00.000000Z",
        "renewTime": renewed,
        "leaseTransitions": transitions,
    }


# ---- acquiring ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "seed_spec", "earliest", "latest", "transitions", "keeps_acquire_time"),
    [
        ("absent: created", None, 0.0, 0.0, 0, False),
        ("released by the last leader", lease_spec("", 1, 3, stamp(0)), 0.0, 0.0, 4, False),
        ("held by us before a restart", lease_spec(ME, 15, 2, stamp(0)), 0.0, 0.0, 2, True),
        (
            "held by another, fresh: wait a full leaseDuration",
            lease_spec("other", 15, 5, stamp(0)),
            15.0,
            15.0 + MAX_JITTERED_RETRY,
            6,
            False,
        ),
        (
            # Only local observation counts: an old renewTime does not shorten the wait.
            "held by another, ancient renewTime",
            lease_spec("other", 15, 0, "2000-01-01T00:00:00.000000Z"),
            15.0,
            15.0 + MAX_JITTERED_RETRY,
            1,
            False,
        ),
        (
            "held by another with a short lease",
            lease_spec("other", 3, 0, stamp(0)),
            3.0,
            3.0 + MAX_JITTERED_RETRY,
            1,
            False,
        ),
    ],
)
async def test_acquire(
    cluster: Cluster,
    case: str,
    seed_spec: dict[str, Any] | None,
    earliest: float,
    latest: float,
    transitions: int,
    keeps_acquire_time: bool,
) -> None:
    if seed_spec is not None:
        cluster.store.put(NS, NAME, seed_spec)
    me = cluster.candidate()
    cluster.start(me)

    await cluster.time.advance(30.0)

    assert me.elector.is_leader
    assert me.count("started") == 1 and me.count("stopped") == 0
    acquired_at = me.time_of("started")
    assert earliest <= acquired_at <= latest
    if earliest > 0:
        assert acquired_at > earliest  # strictly after observed time + leaseDurationSeconds
    spec = cluster.store.spec()
    assert spec["holderIdentity"] == ME
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == transitions
    if keeps_acquire_time:
        assert spec["acquireTime"] == seed_spec["acquireTime"]  # type: ignore[index]
    else:
        assert spec["acquireTime"] == stamp(acquired_at)
    assert me.elector.readiness() == (True, "leading")


async def test_not_acquired_while_another_keeps_renewing(cluster: Cluster) -> None:
    cluster.store.put(NS, NAME, lease_spec("other", 15, 0, stamp(0)))
    me = cluster.candidate()
    cluster.start(me)

    for second in range(0, 60, 2):  # "other" renews every 2s, as a healthy leader does
        cluster.store.put(NS, NAME, lease_spec("other", 15, 0, stamp(second)))
        await cluster.time.advance(2.0)
        assert not me.elector.is_leader

    assert me.events == []
    assert cluster.store.spec()["holderIdentity"] == "other"
    assert me.elector.readiness() == (False, "not leading; leader is other")
    assert me.leaders_seen == ["other"]


async def test_acquire_retries_are_jittered_between_retry_period_and_2_2x(cluster: Cluster) -> None:
    cluster.store.put(NS, NAME, lease_spec("other", 3600, 0, stamp(0)))
    me = cluster.candidate(seed=7)
    cluster.start(me)
    get_times: list[float] = []
    calls = 0

    def record() -> None:
        nonlocal calls
        if len(me.api.calls) > calls:
            calls = len(me.api.calls)
            get_times.append(cluster.time.now)

    await cluster.time.advance(200.0, on_step=record)

    gaps = [b - a for a, b in itertools.pairwise(get_times)]
    assert len(gaps) > 40
    assert all(RETRY_PERIOD <= gap < MAX_JITTERED_RETRY for gap in gaps)
    assert len({round(gap, 6) for gap in gaps}) > 10  # not a fixed period


# ---- renewing and losing ------------------------------------------------------------------


async def test_leader_renews_every_retry_period_with_one_request(cluster: Cluster) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(0.0)
    first = cluster.store.leases[(NS, NAME)]
    acquire_time, version = first["spec"]["acquireTime"], int(first["metadata"]["resourceVersion"])
    requests_after_acquire = len(me.api.calls)

    await cluster.time.advance(60.0)

    spec = cluster.store.spec()
    assert me.elector.is_leader
    assert spec["renewTime"] == stamp(60.0)
    assert spec["acquireTime"] == acquire_time
    assert spec["leaseTransitions"] == 0
    renewals = len(me.api.calls) - requests_after_acquire
    assert renewals == 30  # one optimistic PUT every 2s, no GET
    assert {method for method, _ in me.api.calls[requests_after_acquire:]} == {"PUT"}
    assert int(cluster.store.leases[(NS, NAME)]["metadata"]["resourceVersion"]) == version + 30
    assert me.count("started") == 1 and me.count("stopped") == 0


def cut_off(candidate: Candidate, store: Any) -> None:
    candidate.api.down = True


def server_errors(candidate: Candidate, store: Any) -> None:
    candidate.api.status = 500


def stolen(candidate: Candidate, store: Any) -> None:
    # Another process overwrote the Lease: our PUTs conflict and the GET shows a fresh holder.
    spec = store.spec()
    store.put(NS, NAME, {**spec, "holderIdentity": "thief", "leaseTransitions": 1})


@pytest.mark.parametrize(
    "failure",
    [cut_off, server_errors, stolen],
    ids=["connection refused", "HTTP 500", "lease taken over (409)"],
)
async def test_leadership_lost_when_renewal_fails_past_renew_deadline(
    cluster: Cluster, failure: Callable[[Candidate, Any], None]
) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(11.0)  # renewed at 10, next renewal at 12
    assert me.elector.is_leader

    failure(me, cluster.store)
    lost_at: list[float] = []

    def watch() -> None:
        if not me.elector.is_leader and not lost_at:
            lost_at.append(cluster.time.now)

    await cluster.time.advance(40.0, on_step=watch)

    # The failing round starts at 12 and gives up at its renewDeadline: 12 + 10.
    assert lost_at == [12.0 + RENEW_DEADLINE]
    assert me.count("started") == 1
    assert me.count("stopped") == 1
    assert me.count("work cancelled") == 1
    assert me.time_of("stopped") == 22.0
    assert me.task is not None and me.task.done() and me.task.exception() is None
    assert not me.elector.is_leader


async def test_leadership_kept_when_renewal_recovers_within_deadline(cluster: Cluster) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(11.0)
    me.api.down = True
    await cluster.time.advance(RENEW_DEADLINE - 3.0)  # a few failed attempts, still in time
    me.api.down = False
    await cluster.time.advance(30.0)

    assert me.elector.is_leader
    assert me.count("stopped") == 0
    assert cluster.store.spec()["holderIdentity"] == ME


def real_time_elector(api: Any, events: list[str]) -> LeaderElector:
    return LeaderElector(
        api,
        lease_namespace=NS,
        lease_name=NAME,
        identity=ME,
        lease_duration=0.5,
        renew_deadline=0.1,
        retry_period=0.02,
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
        clock=asyncio.get_running_loop().time,
    )


async def test_hanging_request_is_bounded_by_renew_deadline(lease_store: Any) -> None:
    """Real (short) time: a request that never answers must not keep a stale leader leading."""
    api, events = lease_store.client(), []
    elector = real_time_elector(api, events)
    task = asyncio.create_task(elector.run())
    await asyncio.sleep(0.01)
    assert elector.is_leader

    api.hang = True
    await asyncio.wait_for(task, timeout=2.0)

    assert events == ["started", "stopped"]
    assert not elector.is_leader
    assert elector.lost  # a failed renewal: the one stop the service warns about


async def test_shutdown_with_a_hanging_api_is_bounded(lease_store: Any) -> None:
    api, events = lease_store.client(), []
    elector = real_time_elector(api, events)
    task = asyncio.create_task(elector.run())
    await asyncio.sleep(0.01)
    api.hang = True
    task.cancel()

    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), timeout=2.0)

    assert task.cancelled()
    assert events == ["started", "stopped"]
    assert not elector.lost  # asked to stop: a normal stop, logged at info by the service
    assert lease_store.spec()["holderIdentity"] == ME  # the release could not get through


async def test_synchronous_started_callback(cluster: Cluster) -> None:
    me = cluster.candidate(sync_start=True)
    cluster.start(me)
    await cluster.time.advance(5.0)
    assert me.elector.is_leader and me.count("started") == 1
    me.api.down = True
    await cluster.time.advance(20.0)
    assert me.count("stopped") == 1 and not me.elector.is_leader


# ---- competing ------------------------------------------------------------------------------


async def test_two_candidates_racing_for_an_absent_lease(cluster: Cluster) -> None:
    # Same jitter seed: both try at the very same instants, so their requests interleave.
    a = cluster.candidate("a", seed=1)
    b = cluster.candidate("b", seed=1)
    cluster.start(a, b)
    await cluster.time.advance(0.0)

    assert len(cluster.leaders()) == 1
    assert cluster.store.conflicts == 1  # the loser's create answered 409 AlreadyExists
    winner = cluster.leaders()[0]
    loser = b if winner == "a" else a
    assert loser.elector.readiness() == (False, "not leading; leader is unknown")
    await cluster.time.advance(MAX_JITTERED_RETRY)  # its next attempt reads the winner's Lease
    assert cluster.leaders() == [winner]
    assert loser.elector.readiness() == (False, f"not leading; leader is {winner}")


async def test_two_candidates_racing_for_an_expired_lease(cluster: Cluster) -> None:
    cluster.store.put(NS, NAME, lease_spec("gone", 15, 4, stamp(0)))
    a = cluster.candidate("a", seed=3)
    b = cluster.candidate("b", seed=3)
    cluster.start(a, b)
    one_at_most: list[int] = []
    await cluster.time.advance(30.0, on_step=lambda: one_at_most.append(len(cluster.leaders())))

    assert max(one_at_most) == 1
    assert len(cluster.leaders()) == 1
    assert cluster.store.conflicts >= 1  # both read the same version; only one PUT won
    assert cluster.store.spec()["leaseTransitions"] == 5


async def test_failover_keeps_at_most_one_leader(cluster: Cluster) -> None:
    a = cluster.candidate("a", seed=1)
    cluster.start(a)
    await cluster.time.advance(0.0)
    b = cluster.candidate("b", seed=2)
    cluster.start(b)
    counts: list[int] = []

    def check() -> None:
        counts.append(len(cluster.leaders()))
        assert len(cluster.leaders()) <= 1

    await cluster.time.advance(20.0, on_step=check)
    assert cluster.leaders() == ["a"]

    a.api.down = True  # partition the leader
    await cluster.time.advance(60.0, on_step=check)

    assert cluster.leaders() == ["b"]
    assert a.count("stopped") == 1 and b.count("started") == 1
    assert a.time_of("stopped") < b.time_of("started")
    spec = cluster.store.spec()
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert b.leaders_seen == ["a", "b"]


@pytest.mark.parametrize("seed", range(8))
async def test_random_partitions_and_restarts_never_give_two_leaders(
    cluster: Cluster, seed: int
) -> None:
    """Three replicas; each second any one may lose or regain the API server; a replica whose
    run() returned (leadership lost) restarts with a fresh identity, as kube-scheduler would."""
    rng = random.Random(seed)
    replicas = [cluster.candidate(f"r{i}-0", seed=seed * 10 + i) for i in range(3)]
    cluster.start(*replicas)
    generation = [0, 0, 0]
    leadership_changes = 0
    last_leaders: list[str] = []

    def check() -> None:
        nonlocal leadership_changes, last_leaders
        leaders = cluster.leaders()
        assert len(leaders) <= 1, leaders
        if leaders and leaders != last_leaders:
            leadership_changes += 1
        last_leaders = leaders

    for _ in range(300):
        for i, replica in enumerate(replicas):
            if rng.random() < 0.05:
                replica.api.down = not replica.api.down
            if replica.task is not None and replica.task.done():
                generation[i] += 1
                fresh = cluster.candidate(f"r{i}-{generation[i]}", seed=rng.randrange(1 << 30))
                fresh.api.down = replica.api.down
                replicas[i] = fresh
                cluster.start(fresh)
        await cluster.time.advance(1.0, on_step=check)

    assert leadership_changes >= 1


# ---- releasing ------------------------------------------------------------------------------


async def test_cancel_releases_the_lease_and_a_standby_takes_over_quickly(
    cluster: Cluster,
) -> None:
    a = cluster.candidate("a", seed=1)
    cluster.start(a)
    await cluster.time.advance(0.0)
    b = cluster.candidate("b", seed=2)
    cluster.start(b)
    await cluster.time.advance(20.0)
    assert a.task is not None

    a.task.cancel()
    await cluster.time.settle()

    assert a.task.cancelled()
    assert a.events == [("started", 0.0), ("work cancelled", 20.0), ("stopped", 20.0)]
    spec = cluster.store.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] == stamp(20.0)

    await cluster.time.advance(MAX_JITTERED_RETRY)  # not a full leaseDuration
    assert cluster.leaders() == ["b"]
    assert cluster.store.spec()["leaseTransitions"] == 1


async def test_release_survives_a_renewal_that_landed_after_cancellation(
    cluster: Cluster,
) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(11.0)
    me.api.lose_next_answer = True  # the renewal at 12 is applied but its answer never comes
    await cluster.time.advance(1.0)
    assert me.task is not None
    me.task.cancel()
    await cluster.time.settle()

    spec = cluster.store.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseTransitions"] == 0
    assert cluster.store.conflicts == 1  # the first release attempt carried the stale version
    assert me.count("stopped") == 1


async def test_release_conflict_with_a_new_holder_leaves_their_lease_alone(
    cluster: Cluster,
) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(11.0)
    stolen(me, cluster.store)
    assert me.task is not None
    me.task.cancel()
    await cluster.time.settle()

    assert cluster.store.spec()["holderIdentity"] == "thief"
    assert me.elector.readiness() == (False, "not leading; leader is thief")


async def test_cancel_without_release_on_cancel_leaves_the_lease_held(cluster: Cluster) -> None:
    me = cluster.candidate(release_on_cancel=False)
    cluster.start(me)
    await cluster.time.advance(5.0)
    assert me.task is not None
    me.task.cancel()
    await cluster.time.settle()

    assert cluster.store.spec()["holderIdentity"] == ME
    assert me.count("stopped") == 1


async def test_cancel_before_acquiring_calls_no_callback(cluster: Cluster) -> None:
    cluster.store.put(NS, NAME, lease_spec("other", 15, 0, stamp(0)))
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(5.0)
    assert me.task is not None
    me.task.cancel()
    await cluster.time.settle()

    assert me.events == []
    assert cluster.store.spec()["holderIdentity"] == "other"


async def test_release_after_losing_does_nothing(cluster: Cluster) -> None:
    cluster.store.put(NS, NAME, lease_spec("other", 15, 0, stamp(0)))
    me = cluster.candidate()
    assert await me.elector.release() is True
    assert me.api.calls == []


async def test_release_while_running_is_refused(cluster: Cluster) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(1.0)
    with pytest.raises(RuntimeError, match="cancel"):
        await me.elector.release()
    with pytest.raises(RuntimeError, match="already running"):
        await me.elector.run()


# ---- health, configuration, helpers --------------------------------------------------------


async def test_readiness_before_anything_is_observed(cluster: Cluster) -> None:
    me = cluster.candidate()
    assert me.elector.readiness() == (False, "not leading; leader is unknown")
    assert me.elector.check() == (True, "")


async def test_health_check_fails_for_a_leader_stuck_past_its_lease(cluster: Cluster) -> None:
    me = cluster.candidate()
    cluster.start(me)
    await cluster.time.advance(1.0)
    assert me.elector.check() == (True, "")
    # A leader whose renew loop is wedged (here: time moves, the loop does not) stays "leading".
    cluster.time.now += LEASE_DURATION + 20.0 + 1.0
    ok, detail = me.elector.check()
    assert not ok
    assert detail == "failed election to renew leadership on lease kube-system/kube-scheduler"

    # `aiosched run` serves this check as /healthz/leaderElection, as kube-scheduler does.
    service = SchedulerService(config_path=None, http_host="127.0.0.1", http_port=0)
    check = service.health_checks()["leaderElection"]
    assert check() == (True, "ok")  # no elector: leader election is off
    service.elector = me.elector
    assert check() == (False, detail)
    server = ObservabilityServer(port=0, health=service.health_checks())
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{server.port}"
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 500
            async with http.get(f"{base}/healthz/leaderElection") as resp:
                assert resp.status == 500
                assert "failed election to renew leadership" in await resp.text()
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period", "identity", "message"),
    [
        (10.0, 10.0, 2.0, ME, "leaseDuration must be greater than renewDeadline"),
        (15.0, 2.4, 2.0, ME, "renewDeadline must be greater than retryPeriod\\*JitterFactor"),
        (15.0, 10.0, 0.0, ME, "greater than zero"),
        (15.0, 10.0, 2.0, "", "identity is empty"),
    ],
)
def test_invalid_timings_are_rejected(
    lease_duration: float, renew_deadline: float, retry_period: float, identity: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElector(
            object(),  # type: ignore[arg-type]
            lease_namespace=NS,
            lease_name=NAME,
            identity=identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )


def test_from_config_uses_the_resolved_leader_election_section() -> None:
    config = LeaderElection(resource_name="my-scheduler", resource_namespace="ops")
    elector = LeaderElector.from_config(
        object(),  # type: ignore[arg-type]
        config,
        on_started_leading=lambda: None,
        on_stopped_leading=lambda: None,
    )
    assert elector.describe() == "ops/my-scheduler"
    host, _, unique = elector.identity.rpartition("_")
    assert host and uuid.UUID(unique)


def test_from_config_rejects_other_lock_types() -> None:
    with pytest.raises(ValueError, match='resourceLock "endpoints" is not supported'):
        LeaderElector.from_config(
            object(),  # type: ignore[arg-type]
            LeaderElection(resource_lock="endpoints"),
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC), "2024-05-01T12:00:00.000000Z"),
        (datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC), "2024-05-01T12:00:00.123456Z"),
        (
            datetime(2024, 5, 1, 14, 30, 0, 5, tzinfo=UTC).astimezone(
                __import__("datetime").timezone(timedelta(hours=2))
            ),
            "2024-05-01T14:30:00.000005Z",
        ),
    ],
)
def test_micro_time_format(moment: datetime, expected: str) -> None:
    assert format_micro_time(moment) == expected


def test_default_identity_is_hostname_and_uuid() -> None:
    fixed = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert default_identity(lambda: "node-1", lambda: fixed) == f"node-1_{fixed}"
    assert default_identity() != default_identity()


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_jitter_range(draw: float) -> None:
    class Fixed(random.Random):
        def random(self) -> float:
            return draw

    assert jittered(2.0, 1.2, Fixed()) == pytest.approx(2.0 + draw * 2.4)


async def test_a_crash_of_the_leading_work_ends_leadership_and_propagates(
    fake_time: Any, lease_store: Any
) -> None:
    events: list[str] = []

    async def lead() -> None:
        events.append("started")
        await fake_time.sleep(5.0)
        raise RuntimeError("scheduling loop crashed")

    elector = LeaderElector(
        lease_store.client(),
        lease_namespace=NS,
        lease_name=NAME,
        identity=ME,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        on_started_leading=lead,
        on_stopped_leading=lambda: events.append("stopped"),
        clock=fake_time.monotonic,
        wall_clock=fake_time.wall,
        sleep=fake_time.sleep,
    )
    task = asyncio.create_task(elector.run())
    await fake_time.advance(10.0)

    assert task.done()
    with pytest.raises(RuntimeError, match="scheduling loop crashed"):
        task.result()
    assert events == ["started", "stopped"]
    assert not elector.is_leader
    assert lease_store.spec()["holderIdentity"] == ""  # released: nothing is guarded any more
