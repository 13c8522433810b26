"""The dispatcher's metrics, registered only while SchedulerAsyncAPICalls is on, as upstream.

Upstream: pkg/scheduler/metrics/metrics.go (AsyncAPICallsTotal, AsyncAPICallDuration,
AsyncAPIPendingCalls). The pending gauge is read from the call queue at every scrape, exact
when scraped and free when a call is queued.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from observability.fast_metrics import FastCounter, FastHistogram
from scheduler.apicalls.calls import RELEVANCES
from scheduler.apicalls.dispatcher import ApiDispatcher, CallQueue

# metrics.ExponentialBuckets(0.001, 2, 15)
DURATION_BUCKETS = tuple(0.001 * 2**i for i in range(15))


class _PendingCalls:
    def __init__(self, queue: CallQueue) -> None:
        self._queue = queue

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [self._family()]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = self._family()
        for call_type, count in sorted(self._queue.pending_by_type.items()):
            family.add_metric((call_type,), count)
        return [family]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "scheduler_pending_async_api_calls",
            "Number of API calls currently pending in the async queue.",
            labels=("call_type",),
        )


def dispatcher_with_metrics(parallelism: int, registry: CollectorRegistry) -> ApiDispatcher:
    """The dispatcher for the scheduler's calls, its metrics in ``registry``."""
    total = FastCounter(
        "scheduler_async_api_call_execution_total",
        "Total number of API calls executed by the async dispatcher.",
        ("call_type", "result"),
        registry=registry,
    )
    duration = FastHistogram(
        "scheduler_async_api_call_execution_duration_seconds",
        "Duration in seconds for executing API call in the async dispatcher.",
        ("call_type", "result"),
        buckets=DURATION_BUCKETS,
        registry=registry,
    )

    def observe(call_type: str, result: str, seconds: float) -> None:
        total.labels(call_type, result).inc()
        duration.labels(call_type, result).observe(seconds)

    dispatcher = ApiDispatcher(RELEVANCES, parallelism, observe)
    registry.register(_PendingCalls(dispatcher.queue))
    return dispatcher
