"""Where extenders take part in an attempt, as upstream's schedule_one.go calls them.

- Filter (findNodesThatPassExtenders): after the Filter plugins, on the feasible nodes, one
  interested extender after the other, each seeing what the previous one kept. Nodes it rejects
  get Unschedulable (FailedNodes) or UnschedulableAndUnresolvable (FailedAndUnresolvableNodes)
  statuses with its message. An ignorable extender that fails is logged and skipped; any other
  failure fails the attempt.
- Prioritize (prioritizeNodes): every interested extender, concurrently; its 0..10 scores times
  its weight, scaled to MaxNodeScore, are added to the plugins' totals. Failures are ignored.
- Bind (extendersBinding): the first interested binder binds instead of the Bind plugins; an
  ignorable one that fails is skipped.
- Preempt (callExtenders in preemption): DefaultPreemption offers its candidates to each
  interested extender that supports preemption; `TracedPreemptingExtender` records those calls.

Every HTTP call is recorded in the attempt's trace as an ``Extender<Verb>`` extension point with
the extender (its URL prefix) as the plugin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from profiles.config import Extender
from scheduler.extenders.http import ExtenderError, HTTPExtender, close_all
from scheduler.extenders.types import EXTENDER_NAME, MAX_EXTENDER_PRIORITY
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.results import PluginScore, SchedulingError
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import CycleState, NodeToStatus
    from scheduler.framework.runtime import Framework

log = logging.getLogger(__name__)

FILTER_POINT = "ExtenderFilter"
PRIORITIZE_POINT = "ExtenderPrioritize"
BIND_POINT = "ExtenderBind"
PREEMPT_POINT = "ExtenderPreempt"


def ignored_resources(configs: Sequence[Extender]) -> tuple[str, ...]:
    """The managed resources NodeResourcesFit ignores: the extenders account for them."""
    return tuple(r.name for c in configs for r in c.managed_resources if r.ignored_by_scheduler)


class ExtenderSet:
    """The configured extenders, in upstream's order: ignorable ones at the tail."""

    def __init__(self, configs: Sequence[Extender]) -> None:
        built = [HTTPExtender(config, f"extenders[{i}]") for i, config in enumerate(configs)]
        self.extenders: tuple[HTTPExtender, ...] = tuple(
            [e for e in built if not e.ignorable] + [e for e in built if e.ignorable]
        )
        self.ignored_resources = ignored_resources(configs)

    def __bool__(self) -> bool:
        return bool(self.extenders)

    def __len__(self) -> int:
        return len(self.extenders)

    def __iter__(self) -> Iterator[HTTPExtender]:
        return iter(self.extenders)

    def interested(self, pod: PodView) -> list[HTTPExtender]:
        return [e for e in self.extenders if e.is_interested(pod)]

    async def close(self) -> None:
        await close_all(self.extenders)


class CallRecorder:
    """Reports extender calls to the attempt's trace (nothing when the attempt is untraced)."""

    __slots__ = ("_fwk", "_state")

    def __init__(self, fwk: Framework, state: CycleState) -> None:
        self._fwk = fwk
        self._state = state

    def now(self) -> float:
        return self._fwk.now()

    def done(self, point: str, extender: HTTPExtender, status: Status, start: float) -> None:
        tracer = self._fwk.cycle_tracer(self._state)
        if tracer is None:
            return
        end = self._fwk.now()
        tracer.on_plugin(point, extender.name, status, end - start, end)
        tracer.on_extension_point(point, status, start, end)


class TracedPreemptingExtender:
    """An extender as preemption sees it, with each preempt call recorded in the attempt's
    trace (upstream's ProcessPreemption, as an ``ExtenderPreempt`` extension point)."""

    __slots__ = ("_extender", "_recorder")

    def __init__(self, extender: HTTPExtender, recorder: CallRecorder) -> None:
        self._extender = extender
        self._recorder = recorder

    def supports_preemption(self) -> bool:
        return self._extender.supports_preemption()

    def is_interested(self, pod: PodView) -> bool:
        return self._extender.is_interested(pod)

    def is_ignorable(self) -> bool:
        return self._extender.is_ignorable()

    async def process_preemption(
        self, pod: PodView, victims: Mapping[str, Any], node_infos: Any
    ) -> Mapping[str, Any]:
        start = self._recorder.now()
        try:
            answer = await self._extender.process_preemption(pod, victims, node_infos)
        except Exception as exc:
            self._recorder.done(PREEMPT_POINT, self._extender, _failed(exc), start)
            raise
        self._recorder.done(PREEMPT_POINT, self._extender, Status.OK, start)
        return answer


def _failed(exc: Exception) -> Status:
    return Status.error(str(exc))


async def find_nodes_that_pass_extenders(
    extenders: Sequence[HTTPExtender],
    pod: PodView,
    feasible: list[NodeInfo],
    statuses: NodeToStatus,
    recorder: CallRecorder | None = None,
) -> list[NodeInfo]:
    """The nodes every interested filtering extender kept; rejections go to `statuses`.

    Raises SchedulingError when a non-ignorable extender fails."""
    for extender in extenders:
        if not feasible:
            break
        if not extender.is_interested(pod):
            continue
        start = recorder.now() if recorder is not None else 0.0
        try:
            passed, failed, unresolvable = await extender.filter(pod, feasible)
        except ExtenderError as exc:
            if recorder is not None and extender.is_filter():
                recorder.done(FILTER_POINT, extender, _failed(exc), start)
            if extender.is_ignorable():
                log.info(
                    "skipping extender as it returned error and has ignorable flag set",
                    extra={"extender": extender.name, "pod": pod.key, "error": str(exc)},
                )
                continue
            raise SchedulingError(Status.error(str(exc))) from exc
        if recorder is not None and extender.is_filter():
            recorder.done(FILTER_POINT, extender, Status.OK, start)
        for node_name, message in unresolvable.items():
            statuses.statuses[node_name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        for node_name, message in failed.items():
            if node_name in unresolvable:
                continue  # FailedAndUnresolvableNodes takes precedence
            statuses.statuses[node_name] = Status(Code.UNSCHEDULABLE, message)
        feasible = passed
    return feasible


def mark_extender_rejection(unschedulable_plugins: set[str]) -> None:
    """Extenders register no events: a pod they narrowed down is retried on any event."""
    unschedulable_plugins.add(EXTENDER_NAME)


async def extender_scores(
    extenders: Sequence[HTTPExtender],
    pod: PodView,
    nodes: Sequence[NodeInfo],
    recorder: CallRecorder | None = None,
) -> dict[str, list[PluginScore]]:
    """node → one weighted, scaled PluginScore per interested extender that scored it.

    Upstream runs the interested extenders concurrently and ignores the ones that fail."""

    async def one(extender: HTTPExtender) -> tuple[HTTPExtender, list[tuple[str, int]]]:
        start = recorder.now() if recorder is not None else 0.0
        try:
            priorities, weight = await extender.prioritize(pod, nodes)
        except ExtenderError as exc:
            if recorder is not None:
                recorder.done(PRIORITIZE_POINT, extender, _failed(exc), start)
            log.debug(
                "failed to run extender's priority function; no score given by this extender",
                extra={"extender": extender.name, "pod": pod.key, "error": str(exc)},
            )
            return extender, []
        if recorder is not None and extender.is_prioritizer():
            recorder.done(PRIORITIZE_POINT, extender, Status.OK, start)
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        return extender, [(p.host, p.score * weight * scale) for p in priorities]

    interested = [e for e in extenders if e.is_interested(pod)]
    if not interested or not nodes:
        return {}
    results = await asyncio.gather(*(one(e) for e in interested))
    by_node: dict[str, list[PluginScore]] = {}
    for extender, scores in results:
        for host, score in scores:
            by_node.setdefault(host, []).append(PluginScore(extender.name, score))
    return by_node


async def extenders_binding(
    extenders: Sequence[HTTPExtender],
    pod: PodView,
    node: str,
    recorder: CallRecorder | None = None,
) -> Status | None:
    """The first interested binder's outcome (Success or Error); None when no extender binds
    the pod and the Bind plugins must."""
    for extender in extenders:
        if not extender.is_binder() or not extender.is_interested(pod):
            continue
        start = recorder.now() if recorder is not None else 0.0
        try:
            await extender.bind(pod.name, pod.namespace, pod.uid, node)
        except ExtenderError as exc:
            status = Status.error(str(exc))
            if recorder is not None:
                recorder.done(BIND_POINT, extender, status, start)
            if extender.is_ignorable():
                log.info(
                    "skipping extender in bind as it returned error and has ignorable flag set",
                    extra={"extender": extender.name, "pod": pod.key, "error": str(exc)},
                )
                continue
            return status
        if recorder is not None:
            recorder.done(BIND_POINT, extender, Status.OK, start)
        return Status.OK
    return None
