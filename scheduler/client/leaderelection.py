"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Several aiosched replicas may run; only the one holding the Lease schedules. The semantics follow
client-go's tools/leaderelection (leaderelection.go, resourcelock/leaselock.go), which
kube-scheduler uses with a Lease lock:

- A candidate acquires the Lease when it does not exist (create), when its holder is empty, when
  it is held by us, or when it has expired. Expiry is judged on the *local* clock only: the time
  at which this process last saw the Lease's spec change, plus its leaseDurationSeconds. Timestamps
  written by other processes are never compared with ours, so clock skew between hosts is harmless.
- Attempts to acquire repeat every retryPeriod stretched by a random jitter (factor 1.2).
- The leader renews every retryPeriod; if no renewal succeeds within renewDeadline it gives up.
  Since renewDeadline < leaseDuration, the old leader stops before any other candidate can see
  the Lease as expired.
- Writes are optimistic: an update carries the resourceVersion that was read, so of two
  candidates racing for an expired Lease the API server lets exactly one win (the other gets 409).
- leaseTransitions counts holder changes; acquireTime / renewTime are MicroTime strings.
- On shutdown the leader releases the Lease (holderIdentity "" and leaseDurationSeconds 1, as
  client-go's ReleaseOnCancel), so a standby takes over in about a second instead of 15.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import anyio

from profiles.config import LeaderElection
from scheduler.api.times import format_micro_time
from scheduler.client.rest import ApiError, status_message
from scheduler.framework.api_client import ApiClient

log = logging.getLogger(__name__)

#: client-go's wait.Jitter factor for the acquire loop (leaderelection.JitterFactor).
JITTER_FACTOR = 1.2
#: How long a leader may go without renewing before its health check fails (kube-scheduler's
#: NewLeaderHealthzAdaptor(20 * time.Second)).
DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE = 20.0

StartedLeading = Callable[[], Awaitable[None] | None]
StoppedLeading = Callable[[], None]
NewLeader = Callable[[str], None]


def utc_now() -> datetime:
    return datetime.now(UTC)


def default_identity(
    hostname: Callable[[], str] = socket.gethostname,
    unique: Callable[[], uuid.UUID] = uuid.uuid4,
) -> str:
    """kube-scheduler's lock identity: hostname + "_" + a random UUID (unique per process)."""
    return f"{hostname()}_{unique()}"


def jittered(period: float, factor: float, rng: random.Random) -> float:
    """wait.Jitter: a duration uniformly in [period, period * (1 + factor))."""
    return period + rng.random() * factor * period


# ---- the election record and the Lease lock ------------------------------------------------


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The part of a Lease's spec leader election reads and writes (LeaderElectionRecord)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    lease_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LeaseRecord:
        return cls(
            holder_identity=_str(spec.get("holderIdentity")),
            lease_duration_seconds=_int(spec.get("leaseDurationSeconds")),
            acquire_time=_str(spec.get("acquireTime")),
            renew_time=_str(spec.get("renewTime")),
            lease_transitions=_int(spec.get("leaseTransitions")),
        )

    def to_spec(self) -> dict[str, Any]:
        """As client-go's LeaderElectionRecordToLeaseSpec: every field set, "" holder included."""
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time or None,
            "renewTime": self.renew_time or None,
            "leaseTransitions": self.lease_transitions,
        }


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class LockError(Exception):
    """A read or write of the Lease failed (no answer, timeout, or an error status)."""


class LockConflict(LockError):
    """409: the Lease changed since we read it, or someone created it first."""


class LeaseLock:
    """One Lease reached through the raw-JSON client; remembers the last object it saw.

    Updates send that object back with its resourceVersion, which is what makes them conditional.
    """

    def __init__(self, client: ApiClient, namespace: str, name: str) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self._lease: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def _collection(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"

    async def get(self, timeout: float) -> LeaseRecord | None:
        """The current record, or None when the Lease does not exist."""
        status, body = await self._call("GET", f"{self._collection}/{self.name}", None, timeout)
        if status == 404:
            self._lease = None
            return None
        lease = self._accept(status, body, "get")
        return LeaseRecord.from_spec(lease.get("spec") or {})

    async def create(self, record: LeaseRecord, timeout: float) -> None:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        status, body = await self._call("POST", self._collection, lease, timeout)
        self._accept(status, body, "create")

    async def update(self, record: LeaseRecord, timeout: float) -> None:
        if self._lease is None:
            raise LockError("lease not initialized, call get or create first")
        lease = copy.deepcopy(self._lease)
        spec = lease.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        spec.update(record.to_spec())  # fields we do not own (e.g. preferredHolder) are kept
        lease["spec"] = spec
        status, body = await self._call("PUT", f"{self._collection}/{self.name}", lease, timeout)
        self._accept(status, body, "update")

    async def _call(self, method: str, path: str, body: Any, timeout: float) -> tuple[int, Any]:
        if timeout <= 0:
            raise LockError(f"{method} {path}: no time left")
        try:
            async with asyncio.timeout(timeout):
                return await self._client.request(method, path, body=body)
        except TimeoutError as exc:
            raise LockError(f"{method} {path}: timed out after {timeout:g}s") from exc
        except ApiError as exc:
            raise LockError(str(exc)) from exc

    def _accept(self, status: int, body: Any, verb: str) -> dict[str, Any]:
        if status == 409:
            raise LockConflict(f"{verb} lease {self.describe()}: {status_message(body)}")
        if not 200 <= status < 300 or not isinstance(body, dict):
            raise LockError(f"{verb} lease {self.describe()}: {status} {status_message(body)}")
        self._lease = body
        return body


# ---- the elector -----------------------------------------------------------------------------


class LeaderElector:
    """Campaign for a Lease, lead while it is renewed, and step down when it is not.

    ``run()`` waits until the Lease is acquired, calls ``on_started_leading`` and renews until
    leadership is lost, then calls ``on_stopped_leading`` and returns. As upstream, it does not
    campaign again: a scheduler that lost its lease may hold stale assumptions and should restart
    (kube-scheduler exits). If ``on_started_leading`` returns an awaitable, ``run()`` owns it as a
    task and cancels it the moment leadership ends (client-go cancels its context).

    Cancelling ``run()`` while leading stops the leading task, releases the Lease (unless
    ``release_on_cancel`` is False) and calls ``on_stopped_leading``. If the leading task raises,
    the same happens and its exception propagates out of ``run()``. Cancelling it before the
    Lease was acquired calls neither callback (client-go would call OnStoppedLeading regardless;
    a "stopped" without a "started" only confuses callers).

    Expiry and deadlines use ``clock`` (monotonic seconds); ``wall_clock`` only stamps the
    Lease's acquireTime / renewTime. ``sleep`` and ``rng`` are injectable for tests. Each API
    request is additionally bounded by renewDeadline of event-loop time.
    """

    def __init__(
        self,
        client: ApiClient,
        *,
        lease_namespace: str,
        lease_name: str,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        on_started_leading: StartedLeading,
        on_stopped_leading: StoppedLeading,
        on_new_leader: NewLeader | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        release_on_cancel: bool = True,
    ) -> None:
        _validate(identity, lease_duration, renew_deadline, retry_period)
        self._lock = LeaseLock(client, lease_namespace, lease_name)
        self._identity = identity
        self._lease_duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._release_on_cancel = release_on_cancel
        self._observed = LeaseRecord()
        self._observed_time = clock()
        self._reported_leader = ""
        self._leading = False
        self._running = False
        # Whether leadership ended because a renewal failed (not a cancellation or the leading
        # work returning): the one stop that is not the caller's own doing.
        self._lost = False

    @classmethod
    def from_config(
        cls,
        client: ApiClient,
        config: LeaderElection,
        *,
        on_started_leading: StartedLeading,
        on_stopped_leading: StoppedLeading,
        identity: str | None = None,
        **options: Any,
    ) -> LeaderElector:
        """An elector for KubeSchedulerConfiguration's resolved leaderElection section."""
        if config.resource_lock != "leases":
            raise ValueError(
                f'leaderElection.resourceLock "{config.resource_lock}" is not supported; '
                'only "leases" is (as in kube-scheduler since v1.24)'
            )
        return cls(
            client,
            lease_namespace=config.resource_namespace,
            lease_name=config.resource_name,
            identity=identity if identity is not None else default_identity(),
            lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline,
            retry_period=config.retry_period,
            on_started_leading=on_started_leading,
            on_stopped_leading=on_stopped_leading,
            **options,
        )

    # -- what callers read ----------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def is_leader(self) -> bool:
        """True from acquiring the Lease until leadership is lost, released or cancelled."""
        return self._leading

    @property
    def lost(self) -> bool:
        """True once leadership ended because the Lease could not be renewed; a stop that was
        asked for (cancellation) or the leading work ending leaves it False."""
        return self._lost

    @property
    def leader(self) -> str:
        """The holder identity last observed on the Lease ("" when none was seen)."""
        return self._observed.holder_identity

    def describe(self) -> str:
        return self._lock.describe()

    def readiness(self) -> tuple[bool, str]:
        """For /readyz: only the leader is ready; a standby names the leader it sees."""
        if self._leading:
            return True, "leading"
        leader = self._observed.holder_identity
        if leader and leader != self._identity:
            return False, f"not leading; leader is {leader}"
        return False, "not leading; leader is unknown"

    def check(
        self, max_tolerable_expired: float = DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE
    ) -> tuple[bool, str]:
        """For /healthz (client-go's HealthzAdaptor): a leader that has not renewed for
        leaseDuration + ``max_tolerable_expired`` is stuck and should be restarted."""
        if not self._leading:
            return True, ""
        if self._clock() - self._observed_time > self._lease_duration + max_tolerable_expired:
            return False, f"failed election to renew leadership on lease {self.describe()}"
        return True, ""

    # -- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead until the Lease is lost (then return) or until cancelled."""
        if self._running:
            raise RuntimeError("LeaderElector.run() is already running")
        self._running = True
        try:
            await self._acquire()
            await self._lead()
        finally:
            self._running = False

    async def release(self) -> bool:
        """Give up the Lease if we hold it (holder "", duration 1s). True if nothing is held.

        ``run()`` does this itself when cancelled; call it directly only when ``run()`` is not
        running (otherwise the renew loop would take the released Lease straight back).
        """
        if self._running:
            raise RuntimeError("cancel LeaderElector.run() before releasing the lease")
        return await self._release()

    async def _acquire(self) -> None:
        log.info("attempting to acquire leader lease %s...", self.describe())
        while True:
            acquired = await self._try_acquire_or_renew(deadline=None)
            self._report_transition()
            if acquired:
                log.info("successfully acquired lease %s", self.describe())
                return
            log.debug("failed to acquire lease %s", self.describe())
            await self._sleep(jittered(self._retry_period, JITTER_FACTOR, self._rng))

    async def _lead(self) -> None:
        self._leading = True
        lost = False
        try:
            async with anyio.create_task_group() as tasks:
                work = self._on_started_leading()
                if work is not None:
                    tasks.start_soon(_drive, work, name="leading")
                await self._renew_until_lost()
                lost = self._lost = True
                self._leading = False
                log.info("failed to renew lease %s: leadership lost", self.describe())
                tasks.cancel_scope.cancel()  # the leading work ends with the lease
        except BaseExceptionGroup as group:
            # The leading work crashed: surface its own exception rather than the group.
            raise group.exceptions[0] if len(group.exceptions) == 1 else group from None
        finally:
            self._leading = False
            if not lost and self._release_on_cancel:
                # Cancelled, or the leading work is over: nothing is guarded any more.
                await self._release_during_shutdown()
            self._on_stopped_leading()

    async def _renew_until_lost(self) -> None:
        """client-go's renew(): each round retries every retryPeriod until renewDeadline."""
        while True:
            deadline = self._clock() + self._renew_deadline
            while True:
                if self._clock() >= deadline:
                    self._report_transition()
                    return
                if await self._try_acquire_or_renew(deadline=deadline):
                    break
                await self._sleep(self._retry_period)
            self._report_transition()
            log.debug("successfully renewed lease %s", self.describe())
            await self._sleep(self._retry_period)

    async def _try_acquire_or_renew(self, deadline: float | None) -> bool:
        """One attempt; True if we hold the Lease afterwards (client-go's tryAcquireOrRenew)."""
        now = self._clock()
        stamp = format_micro_time(self._wall_clock())
        desired = LeaseRecord(
            holder_identity=self._identity,
            lease_duration_seconds=int(self._lease_duration),
            acquire_time=stamp,
            renew_time=stamp,
        )

        # Fast path: we led a moment ago, so the object we hold is probably current.
        if self._observed_is_us() and self._lease_valid(now):
            renewed = self._keep_term(desired, self._observed)
            try:
                await self._lock.update(renewed, self._timeout(deadline))
            except LockError as exc:
                log.warning("failed to update lease optimistically: %s; falling back", exc)
            else:
                self._set_observed(renewed)
                return True

        try:
            current = await self._lock.get(self._timeout(deadline))
        except LockError as exc:
            log.warning("error retrieving lease %s: %s", self.describe(), exc)
            return False
        if current is None:
            try:
                await self._lock.create(desired, self._timeout(deadline))
            except LockError as exc:
                log.warning("error initially creating lease %s: %s", self.describe(), exc)
                return False
            self._set_observed(desired)
            return True

        if current != self._observed:
            self._set_observed(current)  # a change restarts the local expiry countdown
        if current.holder_identity and self._lease_valid(now) and not self._observed_is_us():
            log.debug("lease is held by %s and has not yet expired", current.holder_identity)
            return False

        if self._observed_is_us():
            desired = self._keep_term(desired, current)
        else:
            desired = replace(desired, lease_transitions=current.lease_transitions + 1)
        try:
            await self._lock.update(desired, self._timeout(deadline))
        except LockError as exc:
            log.warning("failed to update lease %s: %s", self.describe(), exc)
            return False
        self._set_observed(desired)
        return True

    async def _release(self) -> bool:
        if not self._observed_is_us():
            return True
        for _ in range(2):
            stamp = format_micro_time(self._wall_clock())
            released = LeaseRecord(
                holder_identity="",
                lease_duration_seconds=1,
                acquire_time=stamp,
                renew_time=stamp,
                lease_transitions=self._observed.lease_transitions,
            )
            try:
                try:
                    await self._lock.update(released, self._renew_deadline)
                except LockConflict:
                    # A renewal cut short by cancellation may still have landed, leaving us with
                    # a stale resourceVersion: re-read, and retry only while the Lease is ours.
                    if not await self._still_ours():
                        return True
                    continue
            except LockError as exc:
                log.error("failed to release lease %s: %s", self.describe(), exc)
                return False
            self._set_observed(released)
            log.info("released lease %s", self.describe())
            return True
        log.error("failed to release lease %s: it keeps changing", self.describe())
        return False

    async def _still_ours(self) -> bool:
        current = await self._lock.get(self._renew_deadline)
        self._set_observed(current if current is not None else LeaseRecord())
        return self._observed_is_us()

    async def _release_during_shutdown(self) -> None:
        # Our task is being cancelled; the release is bounded by its own request timeout and a
        # second cancellation simply abandons it.
        try:
            # shielded from the cancel scope that ends run() (anyio cancels every await inside
            # it, not only the first); a cancellation of the task itself still abandons it
            with anyio.CancelScope(shield=True):
                await self._release()
        except asyncio.CancelledError:
            log.warning("release of lease %s interrupted", self.describe())

    # -- bookkeeping ----------------------------------------------------------------------

    @staticmethod
    def _keep_term(desired: LeaseRecord, held: LeaseRecord) -> LeaseRecord:
        return replace(
            desired, acquire_time=held.acquire_time, lease_transitions=held.lease_transitions
        )

    def _observed_is_us(self) -> bool:
        return self._observed.holder_identity == self._identity

    def _lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _set_observed(self, record: LeaseRecord) -> None:
        self._observed = record
        self._observed_time = self._clock()

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self._renew_deadline
        return min(self._renew_deadline, deadline - self._clock())

    def _report_transition(self) -> None:
        leader = self._observed.holder_identity
        if leader == self._reported_leader:
            return
        self._reported_leader = leader
        log.info("new leader for lease %s: %s", self.describe(), leader or "(none)")
        if self._on_new_leader is not None:
            self._on_new_leader(leader)


async def _drive(work: Awaitable[None]) -> None:
    await work


def _validate(
    identity: str, lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    """client-go's NewLeaderElector checks."""
    if lease_duration <= renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if lease_duration <= 0 or renew_deadline <= 0 or retry_period <= 0:
        raise ValueError("leaseDuration, renewDeadline and retryPeriod must be greater than zero")
    if not identity:
        raise ValueError("lock identity is empty")


__all__ = [
    "JITTER_FACTOR",
    "LeaderElector",
    "LeaseLock",
    "LeaseRecord",
    "LockConflict",
    "LockError",
    "default_identity",
    "format_micro_time",
    "jittered",
]
