"""Pods → the amounts /metrics/resources reports (observability.resource_metrics.PodResources).

Upstream (pkg/scheduler/metrics/resources/resources.go) computes them with
resourcehelper.PodRequests / PodLimits and default options: pod-level resources count, the
resize status does not (the spec's desired amounts are reported). Both come from
scheduler.api.requests, the function the scheduler's own accounting uses, so the two agree on
every pod that is not mid-resize. Terminal pods are skipped, as upstream skips them.

Parsing happens at scrape time; results are kept per pod uid and resourceVersion, so a scrape
re-parses only pods that changed since the last one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from observability.resource_metrics import PodResources
from scheduler.api.objects import MalformedObject, PodView
from scheduler.api.requests import pod_limits, pod_requests

log = logging.getLogger(__name__)

#: Nano units per base unit. Dividing the exact integer by it rounds once, correctly, as
#: upstream's Quantity.AsApproximateFloat64 gives 1000 for "1k" cores; multiplying by 1e-9
#: rounded twice and showed 1000.0000000000001.
_NANOS_PER_UNIT = 1_000_000_000


def pod_amounts(spec: Mapping[str, Any], kind: str) -> dict[str, int]:
    """Effective ``kind`` ("requests" or "limits") of a pod spec in nano units, as
    /metrics/resources reports them."""
    if kind == "requests":
        return pod_requests(spec)
    return pod_limits(spec)


def _as_floats(amounts: Mapping[str, int]) -> dict[str, float]:
    return {name: nanos / _NANOS_PER_UNIT for name, nanos in amounts.items()}


def pod_resources(pod: PodView) -> PodResources:
    spec = pod.raw.get("spec") or {}
    priority = spec.get("priority")
    return PodResources(
        namespace=pod.namespace,
        name=pod.name,
        node=pod.node_name,
        scheduler=pod.scheduler_name,
        priority="" if priority is None else str(priority),
        requests=_as_floats(pod_amounts(spec, "requests")),
        limits=_as_floats(pod_amounts(spec, "limits")),
    )


class PodResourcesSource:
    """Callable source for PodResourceMetrics.set_source over the scheduler's pods."""

    def __init__(self, pods: Callable[[], Iterable[PodView]]) -> None:
        self._pods = pods
        self._cache: dict[str, tuple[str, PodResources]] = {}

    def __call__(self) -> Iterator[PodResources]:
        previous = self._cache
        current: dict[str, tuple[str, PodResources]] = {}
        self._cache = current
        for pod in list(self._pods()):
            if pod.is_terminal:
                continue
            cached = previous.get(pod.uid)
            if cached is not None and cached[0] == pod.resource_version:
                resources = cached[1]
            else:
                try:
                    resources = pod_resources(pod)
                except MalformedObject as err:
                    log.debug("pod %s left out of /metrics/resources: %s", pod.key, err)
                    continue
            current[pod.uid] = (pod.resource_version, resources)
            yield resources
