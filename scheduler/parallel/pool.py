"""The scheduler's side of the filter workers: which cycles go to them, the split, the merge.

`FilterPool` is the cycle's FilterFanout (scheduler/cycle/fanout.py). For a cycle whose Filter
plugins read nothing but the pod, the nodes (the snapshot) and the PreFilter state, it hands
the algorithm's row pass a filter that splits each chunk of rows in contiguous shards: the
scheduler's own process filters the first, each ready worker one of the others, and the
answers are put back together in row order, per plugin in the profile's order, so the
algorithm sees exactly what the serial `run_filter_plugins_rows` over the chunk returns (the
stop point, nominated pods and statuses are then the serial code's). Upstream's
findNodesThatPassFilters checks nodes in parallel too, but stops wherever its goroutines are;
here the answer does not depend on the split.

Only cycles worth it go out: the pool learns each (profile, active Filter plugins) pair's
serial CPU cost per row from the cycles it runs in process (a moving average), and splits a
chunk only when its estimated cost is above `min_seconds`. A cheap cycle (the row pass over
5000 nodes with the default plugins takes a fraction of a millisecond) never leaves the
process.

Workers start on the first cycle that would use them, each from a bootstrap of the cache, and
then follow its changes (replica.py). A worker that dies, breaks the protocol, falls out of
step or misses its deadline is killed; its shard is filtered in process, so the cycle
completes with the same answer, and it is started again when next needed. After
MAX_FAILED_STARTS failures in a row without a worker serving, the pool stops fanning out and
every cycle filters in process (logged once).
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import orjson

from scheduler.api.objects import PodView
from scheduler.api.request_gates import request_gates
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.rows import RowVerdict
from scheduler.client.process_transport import worker_socketpair
from scheduler.framework.runtime import Framework, RowRejections
from scheduler.parallel import replica, wire
from scheduler.parallel.replica import ReplicatedCache

if TYPE_CHECKING:
    from scheduler.cache.node_table import NodeTable
    from scheduler.cache.rows import Rows
    from scheduler.cache.snapshot import Snapshot
    from scheduler.cycle.fanout import RowsFilter
    from scheduler.cycle.profile_set import ProfileSet
    from scheduler.framework.filter_tally import FilterTally
    from scheduler.framework.interface import CycleState
    from scheduler.framework.status import Status

log = logging.getLogger(__name__)

# Filter plugins whose Filter reads only the pod, the node's NodeInfo (the snapshot) and the
# cycle's PreFilter state: the workers' replicas have all of that. The volume plugins and
# DynamicResources read listers (PVCs, ResourceSlices, claims) the workers do not replicate;
# a pod they do not skip at PreFilter is filtered in process.
REPLICA_SAFE_FILTERS = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    }
)
# The estimated serial cost of a chunk above which it is split (ARCHITECTURE.md, Processes:
# a shard's round trip costs about 0.3-1 ms of the scheduler's time on the development
# machine; a split saves at most the workers' share of the estimate).
DEFAULT_MIN_SECONDS = 0.010
MAX_FAILED_STARTS = 5
START_TIMEOUT = 60.0  # seconds from start to "ready", the bootstrap applied
MIN_ANSWER_TIMEOUT = 10.0  # a shard's deadline: this, or 50 times its serial estimate
SEND_TIMEOUT = 10.0
FLUSH_AT = 512  # changes recorded before they are sent on, between cycles
_DECAY = 0.3  # weight of the newest measurement in a cost estimate
# A measurement counts at most this many times the estimate: one pass that a garbage
# collection (or a page-fault storm) landed in would otherwise move a 1.5 ms estimate over the
# split threshold at once and start workers for nothing; a pass that really became dearer
# still raises the estimate by up to this factor each time.
_OUTLIER = 4.0
# In-process passes measured before an estimate counts: the first passes of a plugin set pay
# for its lazily built columns and caches, many times a warm pass.
MIN_SAMPLES = 3
# Past those, one in this many in-process passes is measured. Reading the thread's CPU clock
# is a system call: two per cycle cost the scheduling process more than the rest of this
# bookkeeping on a busy machine, and the moving average needs no more samples than this.
MEASURE_EVERY = 16
# Chunks of fewer rows are neither split nor measured: a pass has a fixed cost (each plugin's
# set-up) that, divided by a few rows, would make every larger chunk look expensive, and
# handing a small chunk over costs more than filtering it.
MIN_SPLIT_ROWS = 256
# Workers that split nothing for this long are stopped (each replays every cache change while
# it runs); the next cycle worth splitting starts them again from a bootstrap.
IDLE_SECONDS = 60.0


def filter_workers_for(parallelism: int, cpus: int | None = None) -> int:
    """How many filter workers `parallelism` asks for: the scheduler's process filters one
    shard itself, so parallelism N (capped at the machine's cores) is N - 1 workers; 0 (one
    core, or parallelism 1) keeps Filter in process."""
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(0, min(parallelism, cores) - 1)


class _Worker:
    __slots__ = ("cycle", "name", "process", "profiles", "ready", "sock", "started")

    def __init__(self, name: str, process: subprocess.Popen[bytes], sock: socket.socket):
        self.name = name
        self.process = process
        self.sock = sock
        self.ready = False
        self.started = time.monotonic()
        self.profiles: object = None  # the ProfileSet whose configuration it has
        self.cycle = 0  # the cycle whose pod and state it has


class FilterPool:
    """Filter workers and the fan-out of a cycle's row pass over them (module docstring)."""

    def __init__(
        self,
        workers: int,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        min_seconds: float = DEFAULT_MIN_SECONDS,
        cache: ReplicatedCache | None = None,
        answer_timeout: float = MIN_ANSWER_TIMEOUT,
        min_rows: int = MIN_SPLIT_ROWS,
    ) -> None:
        self.cache = cache if cache is not None else ReplicatedCache()
        self.cache.flush = self._flush
        self.cache.flush_at = FLUSH_AT
        self.min_seconds = min_seconds
        self.answer_timeout = answer_timeout
        self.min_rows = min_rows
        self._gates = dict(feature_gates or {})
        self._slots: list[_Worker | None] = [None] * workers
        self._profiles: Callable[[], ProfileSet] | None = None
        self._snapshot: Snapshot | None = None
        self._cost: dict[tuple[int, frozenset[str]], float] = {}
        self._samples: dict[tuple[int, frozenset[str]], int] = {}
        self._passes: dict[tuple[int, frozenset[str]], int] = {}
        self._last_split = time.monotonic()
        self._cycles = itertools.count(1)
        self._failures = 0
        self.disabled = workers == 0
        self.restarts = 0
        self.fanned_out = 0  # chunks split across workers, for tests and the bench's notes

    def attach(self, profiles: Callable[[], ProfileSet], snapshot: Snapshot) -> None:
        """The scheduler's current profiles and the snapshot its cycles filter."""
        self._profiles, self._snapshot = profiles, snapshot

    @property
    def size(self) -> int:
        """How many workers the pool keeps (when it needs them)."""
        return len(self._slots)

    @property
    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._slots if w is not None and w.process.poll() is None]

    # ---------------------------------------------------------------- FilterFanout

    def rows_filter(
        self, fwk: Framework, state: CycleState, pod: PodView, table: NodeTable
    ) -> RowsFilter | None:
        if self.disabled or self._profiles is None or self._snapshot is None:
            return None
        if time.monotonic() - self._last_split > IDLE_SECONDS and self._live():
            self._retire()
        if state.record_plugin_metrics or state.tracer is not None:
            return None  # sampled plugin timings and spans are taken in process
        if not self.cache.replica_matches(self._snapshot):
            return None  # the cache changed since the cycle's snapshot: replicas are ahead
        profiles = self._profiles()
        profile = next((n for n in profiles if profiles[n].framework is fwk), None)
        if profile is None:
            return None
        active = frozenset(
            p.name for p in fwk.filter_plugins if p.name not in state.skip_filter_plugins
        )
        if not active <= REPLICA_SAFE_FILTERS:
            return None
        if "NodeResourcesFit" in active and pod.requests.scalar:
            return None  # extended resources may be DynamicResources' (its listers)
        return _CycleFilter(self, fwk, profiles, profile, (id(fwk), active), next(self._cycles))

    # ---------------------------------------------------------------- workers

    def _live(self) -> list[_Worker]:
        return [w for w in self._slots if w is not None]

    def ready_workers(self) -> list[_Worker]:
        """The workers that can take a shard now; starts missing ones, notes started ones."""
        if self.disabled:
            return []
        for index, worker in enumerate(self._slots):
            if worker is None:
                self._start(index)
            elif not worker.ready:
                self._check_started(worker)
        return [w for w in self._slots if w is not None and w.ready]

    def _start(self, index: int) -> None:
        self._flush()  # the others get what the bootstrap will contain
        name = f"aiosched-filter-{index}"
        ours, theirs = worker_socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "scheduler.parallel.worker", name,
                 str(theirs.fileno()), str(os.getpid()), request_gates().as_argument()],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except OSError as exc:
            ours.close()
            self._failed(f"cannot start {name}: {exc}")
            return
        finally:
            theirs.close()
        worker = _Worker(name, process, ours)
        self._slots[index] = worker
        self._last_split = time.monotonic()  # idle from now on, not from the last split
        if self.cache.changes is None:
            self.cache.changes = []
        changes, order = self.cache.bootstrap()
        try:
            self._send(worker, ("boot", replica.encode(changes), order))
        except wire.WorkerLost as exc:
            self._lose(worker, str(exc))
        except (TypeError, ValueError) as exc:  # never seen: a view orjson cannot encode
            self._lose(worker, f"the cache cannot be encoded: {exc}")
            self.disabled, self.cache.changes = True, None

    def _check_started(self, worker: _Worker) -> None:
        try:
            readable, _, _ = select.select([worker.sock], [], [], 0)
            if not readable:
                if time.monotonic() - worker.started > START_TIMEOUT:
                    raise wire.WorkerLost(f"not ready after {START_TIMEOUT:.0f}s")
                return
            answer = wire.receive(worker.sock, SEND_TIMEOUT)
        except (wire.WorkerLost, OSError, ValueError) as exc:
            self._lose(worker, str(exc))
            return
        if answer[0] != "ready":
            self._lose(worker, str(answer[1]))
            return
        worker.ready = True

    def _send(self, worker: _Worker, message: Any) -> None:
        worker.sock.settimeout(SEND_TIMEOUT)
        try:
            wire.send(worker.sock, message)
        finally:
            worker.sock.settimeout(None)

    def _flush(self) -> None:
        """Send the recorded changes on to every worker (started or ready), in order."""
        changes = self.cache.changes
        if not changes:
            return
        try:
            message = ("changes", replica.encode(changes))
        except (TypeError, ValueError) as exc:  # never seen: a view orjson cannot encode
            for worker in self._live():
                self._lose(worker, f"a change cannot be encoded: {exc}")
            self.disabled, self.cache.changes = True, None
            return
        changes.clear()
        for worker in self._live():
            try:
                self._send(worker, message)
            except wire.WorkerLost as exc:
                self._lose(worker, str(exc))

    def _lose(self, worker: _Worker, why: str) -> None:
        """Kill and forget `worker`; it is started again when next needed."""
        index = self._slots.index(worker)
        self._slots[index] = None
        worker.sock.close()
        if worker.process.poll() is None:
            worker.process.kill()
        try:
            code = worker.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        served = worker.ready and time.monotonic() - worker.started > 30
        log.warning(
            "filter worker lost; its shard is filtered in process and it will be started again",
            extra={"worker": worker.name, "pid": worker.process.pid, "exit_code": code,
                   "reason": why},
        )  # fmt: skip
        self.restarts += 1
        if served:
            self._failures = 0
        self._failed(why)
        if not self._live():
            self.cache.changes = None  # the next start's bootstrap carries everything

    def _failed(self, why: str) -> None:
        self._failures += 1
        if self._failures >= MAX_FAILED_STARTS and not self.disabled:
            self.disabled = True
            self.cache.changes = None
            log.error(
                "filter workers keep failing; filtering in process from now on",
                extra={"failures": self._failures, "reason": why},
            )

    def _retire(self) -> None:
        """Stop the workers after IDLE_SECONDS without a split: not a failure."""
        self._stop_workers()
        log.info("filter workers idle; stopped until a cycle is worth splitting again")

    def _stop_workers(self) -> None:
        for worker in self._live():
            worker.sock.close()
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait()
        self._slots = [None] * len(self._slots)
        self.cache.changes = None

    def served(self) -> None:
        self._failures = 0

    def close(self) -> None:
        self._stop_workers()
        self.disabled = True

    # ---------------------------------------------------------------- costs

    def estimate(self, key: tuple[int, frozenset[str]]) -> float | None:
        """Seconds per row of an in-process pass; None until MIN_SAMPLES were measured."""
        if self._samples.get(key, 0) < MIN_SAMPLES:
            return None
        return self._cost.get(key)

    def measures(self, key: tuple[int, frozenset[str]]) -> bool:
        """Whether to measure this in-process pass: each until MIN_SAMPLES counted, then one
        in MEASURE_EVERY."""
        passes = self._passes[key] = self._passes.get(key, 0) + 1
        return self._samples.get(key, 0) < MIN_SAMPLES or passes % MEASURE_EVERY == 0

    def learn(self, key: tuple[int, frozenset[str]], rows: int, seconds: float) -> None:
        if rows <= 0:
            return
        per_row = seconds / rows
        samples = self._samples[key] = self._samples.get(key, 0) + 1
        old = self._cost.get(key)
        if old is None or samples == 2:  # the first (cold) pass is dropped once a second comes
            self._cost[key] = per_row
        else:
            self._cost[key] = old + _DECAY * (min(per_row, _OUTLIER * old) - old)


class _CycleFilter:
    """One cycle's RowsFilter: in process while cheap, else split across the pool."""

    __slots__ = ("_cycle", "_fwk", "_key", "_payload", "_pool", "_profile", "_profiles")

    def __init__(
        self,
        pool: FilterPool,
        fwk: Framework,
        profiles: ProfileSet,
        profile: str,
        key: tuple[int, frozenset[str]],
        cycle: int,
    ) -> None:
        self._pool = pool
        self._fwk = fwk
        self._profiles = profiles
        self._profile = profile
        self._key = key
        self._cycle = cycle
        self._payload: tuple[Any, ...] | None = None

    def _in_process(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows,
        tally: FilterTally | None,
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:  # fmt: skip
        if not self._pool.measures(self._key):
            return self._fwk.run_filter_plugins_rows(state, pod, table, rows, tally)
        # CPU time, not wall time: on a busy machine a pass preempted midway would otherwise
        # look expensive and send cheap cycles out.
        began = time.thread_time()
        answer = self._fwk.run_filter_plugins_rows(state, pod, table, rows, tally)
        self._pool.learn(self._key, len(rows), time.thread_time() - began)
        return answer

    def __call__(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        tally: FilterTally | None = None,
        /,
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:
        pool = self._pool
        if len(rows) < pool.min_rows:
            return self._fwk.run_filter_plugins_rows(state, pod, table, rows, tally)
        estimate = pool.estimate(self._key)
        forced = pool.min_seconds <= 0  # every chunk split, to measure the split itself
        if not forced and (estimate is None or estimate * len(rows) < pool.min_seconds):
            return self._in_process(state, pod, table, rows, tally)
        workers = pool.ready_workers()
        payload = self._cycle_payload(state, pod, table) if workers else None
        if payload is None:
            return self._in_process(state, pod, table, rows, tally)
        pool._flush()
        workers = [w for w in workers if w in pool._live()]
        shards = np.array_split(rows, len(workers) + 1)
        sent: list[tuple[_Worker, int]] = []
        for index, worker in enumerate(workers, start=1):
            try:
                self._send_shard(worker, payload, shards[index])
                sent.append((worker, index))
            except wire.WorkerLost as exc:
                pool._lose(worker, str(exc))
        answers: list[tuple[npt.NDArray[np.intp], list[RowRejections]] | None] = [None] * len(
            shards
        )
        answers[0] = self._in_process(state, pod, table, shards[0], tally)
        timeout = max(pool.answer_timeout, 50 * (estimate or 0.0) * len(shards[0]))
        for worker, index in sent:
            answers[index] = self._receive(worker, shards[index], timeout)
        for index, answer in enumerate(answers):
            if answer is None:  # its worker was lost: filters are pure, filter it here
                answers[index] = self._in_process(state, pod, table, shards[index], tally)
        pool.fanned_out += 1
        pool._last_split = time.monotonic()
        return _merge(self._fwk, shards, answers)  # type: ignore[arg-type]

    def _cycle_payload(
        self, state: CycleState, pod: PodView, table: NodeTable
    ) -> tuple[Any, ...] | None:
        """What each worker needs once per cycle; None when the state cannot travel."""
        if self._payload is None:
            pool = self._pool
            try:
                data = wire.dumps(state._data, _shared_objects(pool.cache, pod, table))
            except Exception as exc:  # a plugin state that cannot be pickled
                log.debug("cycle state cannot go to filter workers", extra={"error": str(exc)})
                return None
            cache = pool.cache
            counts = (cache.node_count(), cache.pod_count(), cache.assumed_pod_count())
            self._payload = (orjson.dumps(pod.raw), data, sorted(state.skip_filter_plugins), counts)
        return self._payload

    def _send_shard(self, worker: _Worker, payload: tuple[Any, ...], shard: Rows) -> None:
        pool = self._pool
        if worker.profiles is not self._profiles:
            pool._send(worker, ("profiles", id(self._profiles), self._profiles.config, pool._gates))
            worker.profiles = self._profiles
        first = worker.cycle != self._cycle
        pool._send(
            worker,
            ("filter", id(self._profiles), self._profile, self._cycle,
             payload if first else None, shard),
        )  # fmt: skip
        worker.cycle = self._cycle

    def _receive(
        self, worker: _Worker, shard: Rows, timeout: float
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]] | None:
        try:
            answer = wire.receive(worker.sock, timeout)
        except wire.WorkerLost as exc:
            self._pool._lose(worker, str(exc))
            return None
        if answer[0] != "filtered":
            self._pool._lose(worker, str(answer[1]))
            return None
        self._pool.served()
        _, alive, rejected, evaluated = answer
        observer = self._fwk.observer
        for plugin, count in evaluated.items():
            observer.on_plugin_evaluated("Filter", plugin, count)
        rejections = []
        for plugin, positions, statuses in rejected:
            by_row = dict(zip(shard[positions].tolist(), statuses, strict=True))
            verdict = RowVerdict(np.zeros(0, dtype=np.bool_), by_row.__getitem__)
            rejections.append(RowRejections(plugin, positions, verdict))
        return alive, rejections


def _shared_objects(cache: ReplicatedCache, pod: PodView, table: NodeTable) -> Callable[[Any], Any]:
    """What the cycle's state refers to that every worker holds too, by name (wire.dumps): the
    table and its NodeInfos, the pod, the cache's pods. Plugins keep references to them in
    their PreFilter state (a topology spread's masks over the table, for one): by value they
    would be megabytes a cycle."""
    infos = table.infos
    row_of = table.row_of

    def shared(obj: Any) -> Any:
        if obj is table:
            return ("table",)
        if obj is pod:
            return ("pod",)
        if isinstance(obj, NodeInfo):
            row = row_of.get(obj.node_name)
            return ("node", row) if row is not None and infos[row] is obj else None
        if isinstance(obj, PodView) and cache.get_pod(obj.uid) is obj:
            return ("cached", obj.uid)
        return None

    return shared


def _merge(
    fwk: Framework,
    shards: Sequence[Rows],
    answers: Sequence[tuple[npt.NDArray[np.intp], list[RowRejections]]],
) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:
    """The shards' answers as one answer over their concatenation: positions shifted by each
    shard's offset, each plugin's rejections joined in row order, plugins in the profile's
    Filter order (as run_filter_plugins_rows lists them)."""
    alive_parts: list[npt.NDArray[np.intp]] = []
    per_plugin: dict[str, list[tuple[Rows, npt.NDArray[np.intp], Callable[[int], Status]]]] = {}
    offset = 0
    for shard, (alive, rejections) in zip(shards, answers, strict=True):
        alive_parts.append(alive + offset)
        for r in rejections:
            part = (shard[r.positions], r.positions + offset, r.verdict.reject)
            per_plugin.setdefault(r.plugin, []).append(part)
        offset += len(shard)
    merged: list[RowRejections] = []
    for plugin in fwk.filter_plugins:
        parts = per_plugin.get(plugin.name)
        if not parts:
            continue
        positions = np.concatenate([positions for _, positions, _ in parts])
        reject = parts[0][2] if len(parts) == 1 else _by_owner(parts)
        verdict = RowVerdict(np.zeros(0, dtype=np.bool_), reject)
        merged.append(RowRejections(plugin.name, positions, verdict))
    alive = np.concatenate(alive_parts) if alive_parts else np.zeros(0, dtype=np.intp)
    return alive, merged


def _by_owner(
    parts: Sequence[tuple[Rows, npt.NDArray[np.intp], Callable[[int], Status]]],
) -> Callable[[int], Status]:
    """A row's status from the shard that rejected it (a row is in exactly one shard; a
    verdict may answer for rows it never saw, so each row is asked of its own)."""
    owner: dict[int, Callable[[int], Status]] = {}
    for rows, _, reject in parts:
        for row in rows.tolist():
            owner[row] = reject
    return lambda row: owner[row](row)
